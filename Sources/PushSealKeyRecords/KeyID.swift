import PushSealCrypto
import PushSealWire

/// Names used by keysets: key ids, app ids and recipients, with their validation rules.
public enum KeyID {
    /// Length of a generated key id: 8 characters of `[A-Za-z0-9_-]` (48 random bits).
    public static let generatedLength = 8
    /// Largest key id the wire format allows (64 characters).
    public static let maxLength = 64
    /// Largest app id or recipient, in UTF-8 bytes.
    public static let maxNameByteCount = 255

    package static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// A fresh random key id of ``generatedLength`` characters, not in `existing`.
    /// - Parameter existing: key ids already in the keyset (the new one is unique among them).
    /// - Returns: e.g. `"q3Zk_9Ab"`.
    public static func generate(avoiding existing: Set<String> = []) -> String {
        while true {
            let random = SecureRandom.bytes(generatedLength)
            let id = String(decoding: random.map { alphabet[Int($0 & 63)] }, as: UTF8.self)
            if !existing.contains(id) { return id }
        }
    }

    /// `true` for 1–64 characters of `A-Z a-z 0-9 _ -` (the wire format's `key_id`).
    public static func isValid(_ id: String) -> Bool {
        let u = id.utf8
        return (1...maxLength).contains(u.count) && u.allSatisfy { alphabet.contains($0) }
    }

    /// Checks a key id.
    /// - Throws: `KeysError` `.invalidName`.
    public static func validate(_ id: String) throws {
        guard isValid(id) else {
            throw KeysError(.invalidName, "key id \"\(id.prefix(70))\" is not 1-64 characters of A-Z a-z 0-9 _ -")
        }
    }

    /// Whether `appID` follows the keyset naming rule: 1–255 characters of `A-Z a-z 0-9 . -`
    /// (a bundle identifier). Stricter than the wire format's rule (FORMAT.md §3.2,
    /// `WireFormat.isValidAppID`: printable ASCII without `|`), which every keyset app id also
    /// meets; the keychain item's service `pushseal.keyset:<appID>` and file names stay plain.
    /// The app id rule of every CLI's `--app-id` (push-seal, push-open, push-keys: exit 64).
    public static func isKeysetAppID(_ appID: String) -> Bool {
        WireFormat.isValidAppID(appID) && appID.utf8.allSatisfy { b in
            (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || b == 0x2E || b == 0x2D
        }
    }

    /// Checks an app id by ``isKeysetAppID(_:)``.
    /// - Throws: `KeysError` `.invalidName`.
    public static func validateAppID(_ appID: String) throws {
        guard isKeysetAppID(appID) else {
            throw KeysError(.invalidName, "app id \"\(appID.prefix(70))\" is not a bundle identifier (1-255 characters of A-Z a-z 0-9 . -)")
        }
    }

    /// Checks a recipient name (one app installation): 1–255 UTF-8 bytes, no control
    /// characters, no `/`.
    /// - Throws: `KeysError` `.invalidName`.
    public static func validateRecipient(_ recipient: String) throws {
        let u = recipient.utf8
        let ok = (1...maxNameByteCount).contains(u.count) && u.allSatisfy { $0 >= 0x20 && $0 != 0x7F && $0 != 0x2F }
        guard ok else { throw KeysError(.invalidName, "recipient \"\(recipient.prefix(70))\" must be 1-255 bytes without control characters or /") }
    }
}
