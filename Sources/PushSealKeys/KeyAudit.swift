#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import PushSealKeychain

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
        /// The file descriptor, or -1 for ``KeyAudit/none``.
        let fd: Int32
        /// The path in messages.
        let path: String
        /// `true` when `fd` was opened here (closed on deinit).
        let owned: Bool

        /// Appends one line.
        /// - Throws: `KeysError` `.io` when the line is not written whole.
        func write(_ members: [(String, AuditValue)]) throws {
            guard fd >= 0 else { return }
            let line = KeyAudit.line(members)
            let n = line.withUnsafeBytes { systemWrite(fd, $0.baseAddress, $0.count) }
            guard owned else { return }  // standard error: best effort
            guard n == line.count else { throw KeysError(.io, "cannot write audit log \(path)") }
        }

        deinit { if owned { close(fd) } }
    }

    /// Opens the destination for appending.
    /// - Parameter keychain: the keychain whose directory holds ``fileName`` for ``keychainFile``.
    /// - Throws: `KeychainError` `.symbolicLink`, `.insecurePermissions`, `.corrupt` for
    ///   ``keychainFile`` (held to the keychain's rules); `KeysError` `.io` for a ``file(_:)`` that
    ///   cannot be opened.
    func open(keychain: Keychain) throws -> Sink {
        switch self {
        case .none: return Sink(fd: -1, path: "", owned: false)
        case .standardError: return Sink(fd: 2, path: "standard error", owned: false)
        case .keychainFile:
            let fd = try keychain.openPrivateFile(named: Self.fileName, flags: O_WRONLY | O_APPEND | O_CREAT, what: "audit log")
            return Sink(fd: fd, path: keychain.url.path + "/" + Self.fileName, owned: true)
        case .file(let path):
            let fd = systemOpen(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
            guard fd >= 0 else { throw KeysError(.io, "cannot open audit log \(path): \(String(cString: strerror(errno)))") }
            return Sink(fd: fd, path: path, owned: true)
        }
    }

    enum AuditValue {
        case string(String)
        case int(Int64)
        case uint(UInt64)
    }

    static func line(_ members: [(String, AuditValue)]) -> [UInt8] {
        var out = "{"
        for (i, m) in members.enumerated() {
            if i > 0 { out += "," }
            out += jsonString(m.0) + ":"
            switch m.1 {
            case .string(let s): out += jsonString(s)
            case .int(let v): out += String(v)
            case .uint(let v): out += String(v)
            }
        }
        out += "}\n"
        return Array(out.utf8)
    }

    static func jsonString(_ s: String) -> String {
        var out = "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}

/// `write(2)` under a name `KeyAudit.Sink`'s own `write` does not shadow.
private func systemWrite(_ fd: Int32, _ p: UnsafeRawPointer?, _ n: Int) -> Int { write(fd, p, n) }

/// `open(2)` under a name `KeyAudit`'s own `open` does not shadow.
private func systemOpen(_ path: String, _ flags: Int32, _ mode: mode_t) -> Int32 { open(path, flags, mode) }
