#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import PushSealJSON
import PushSealSystem
import PushSealKeychain
import PushSealKeyRecords

/// Where the audit trail goes: one JSON object per line for every keyset state change
/// (generate, add, install, promote, demote, prune, revoke, import, reserve, rotation steps).
///
/// A line names the event, time (Unix seconds), app id, recipient and key ids — never key
/// bytes. Example:
/// `{"time":1767225600,"event":"promote","keychain":"/srv/keys","appId":"com.example.app","recipient":"alice","keyId":"q3Zk_9Ab","previousKeyId":"Xy12ab-_","notAfter":1769817600}`
public enum KeyAudit: Sendable, Hashable {
    /// Append to `keys-audit.log` (mode 0600) inside the keychain directory. The default. Held to
    /// the rules of the keychain's files: a link, a file that is not 0600 or not the caller's is
    /// refused (`KeychainError` `.symbolicLink`, `.insecurePermissions`).
    case keychainFile
    /// Append to this file (created 0600 if absent; its mode is left as it is: the lines hold
    /// no secrets, and a log collector may need to read it).
    case file(String)
    /// Write to standard error.
    case standardError
    /// Write nothing (tests that count nothing else).
    case none

    /// The audit file name used by ``keychainFile``.
    public static let fileName = "keys-audit.log"

    /// An open audit destination: opened before a change is saved, so a destination that cannot
    /// be opened (a link, a loose mode, a missing directory) fails the change instead of leaving
    /// it unaudited.
    struct Sink: ~Copyable {
        /// The open file, or `nil` for ``KeyAudit/none``.
        let file: FileDescriptor?
        /// `true` for an audit file (a failed write fails the change); `false` for standard
        /// error (best effort).
        let required: Bool

        /// Appends one line (one JSON object, members in order, then `\n`) in one write.
        /// - Throws: `KeysError` `.io` when the line is not written whole.
        func write(_ members: JSONObject) throws {
            guard let file else { return }
            let line = KeyAudit.line(members)
            do {
                try file.writeAll(line)
            } catch let e as SystemError {
                guard required else { return }  // standard error: best effort
                throw KeysError(.io, "cannot write audit log \(file.path): \(errnoText(e.errno))")
            }
        }
    }

    /// Opens the destination for appending.
    /// - Parameter keychain: the keychain whose directory holds ``fileName`` for ``keychainFile``.
    /// - Throws: `KeychainError` `.symbolicLink`, `.insecurePermissions`, `.corrupt` for
    ///   ``keychainFile`` (held to the keychain's rules); `KeysError` `.io` for a ``file(_:)`` that
    ///   cannot be opened.
    func open(keychain: Keychain) throws -> Sink {
        switch self {
        case .none: return Sink(file: nil, required: false)
        case .standardError: return Sink(file: .standardError, required: false)
        case .keychainFile:
            let file = try keychain.openPrivateFile(named: Self.fileName, options: [.writeOnly, .append, .create], what: "audit log")
            return Sink(file: file, required: true)
        case .file(let path):
            do {
                return Sink(file: try FileDescriptor.open(path, [.writeOnly, .append, .create, .noFollow], mode: 0o600), required: true)
            } catch let e as SystemError {
                throw KeysError(.io, "cannot open audit log \(path): \(errnoText(e.errno))")
            }
        }
    }

    /// One audit line: the members as compact JSON (``JSONWriter``), then `\n`.
    static func line(_ members: JSONObject) -> [UInt8] {
        var w = JSONWriter(reservingCapacity: 256)
        // Audit members are strings and integers only: nothing JSONWriter refuses.
        try? w.write(.object(members))
        return w.bytes + [0x0A]
    }
}
