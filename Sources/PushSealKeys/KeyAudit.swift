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

    func write(_ members: [(String, AuditValue)], keychain: Keychain) throws {
        let path: String
        let fd: Int32
        switch self {
        case .none: return
        case .standardError:
            let line = Self.line(members)
            line.withUnsafeBytes { _ = systemWrite(2, $0.baseAddress, $0.count) }
            return
        case .keychainFile:
            path = keychain.url.path + "/" + Self.fileName
            fd = try keychain.openPrivateFile(named: Self.fileName, flags: O_WRONLY | O_APPEND | O_CREAT, what: "audit log")
        case .file(let p):
            path = p
            fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
            guard fd >= 0 else { throw KeysError(.io, "cannot open audit log \(path): \(String(cString: strerror(errno)))") }
        }
        defer { close(fd) }
        let line = Self.line(members)
        let n = line.withUnsafeBytes { systemWrite(fd, $0.baseAddress, $0.count) }
        guard n == line.count else { throw KeysError(.io, "cannot write audit log \(path)") }
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

/// `write(2)` under a name `KeyAudit`'s own `write` does not shadow.
private func systemWrite(_ fd: Int32, _ p: UnsafeRawPointer?, _ n: Int) -> Int { write(fd, p, n) }
