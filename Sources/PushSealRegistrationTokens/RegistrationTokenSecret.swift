import PushSealCrypto
import PushSealSystem
import PushSealWire

/// The HS256 secret a customer's backend and the gateway share to mint and verify
/// registration tokens (docs/registration.md "The secret file").
///
/// The HMAC key is the file's text as bytes: printable ASCII (33–126), at least
/// ``minimumCharacterCount`` characters, one trailing LF allowed and not part of the key. So any
/// JWT library mints with the file's contents as the HS256 secret string (PyJWT:
/// `jwt.encode(claims, open(path).read().strip(), "HS256")`). ``generate()`` writes 43
/// characters of base64url (32 random bytes, 256 bits). The file is private: 0600, owned by the
/// user, no symbolic link (the toolkit's private-file rules).
public struct RegistrationTokenSecret: Sendable {
    /// The shortest secret accepted: 32 characters (RFC 7518 §3.2 asks an HS256 key of at least 256 bits).
    public static let minimumCharacterCount = 32
    /// The longest secret file read: 1024 bytes.
    public static let maximumByteCount = 1024

    /// The HMAC key (the file's text without the trailing LF).
    let key: SecretBytes

    /// A secret from its text bytes (the file's contents).
    /// - Parameter text: printable ASCII, at least 32 characters; one trailing LF is dropped.
    /// - Throws: ``RegistrationTokenError`` `.invalidSecret`.
    public init(text: [UInt8]) throws {
        var bytes = text
        defer { SecretBytes.wipe(&bytes) }
        if bytes.last == UInt8(ascii: "\n") { bytes.removeLast() }
        guard bytes.count >= Self.minimumCharacterCount else {
            throw RegistrationTokenError(.invalidSecret, "the registration token secret is \(bytes.count) characters, fewer than the \(Self.minimumCharacterCount) required",
                                         suggestion: "push-keys registration-token new-secret --out FILE")
        }
        guard bytes.allSatisfy({ $0 > 32 && $0 < 127 }) else {
            throw RegistrationTokenError(.invalidSecret, "the registration token secret holds characters outside printable ASCII (spaces, control characters or non-ASCII)")
        }
        key = SecretBytes(copying: bytes)
    }

    /// Reads the secret file at `path`.
    /// - Throws: ``RegistrationTokenError`` `.invalidSecret` (missing, not private, too long,
    ///   bad text), `SystemError` from reading.
    public static func load(path: String) throws -> RegistrationTokenSecret {
        let read: [UInt8]?
        do {
            read = try PrivateFile.read(path, maxByteCount: maximumByteCount)
        } catch let e as SystemError {
            throw RegistrationTokenError(.invalidSecret, "cannot read the registration token secret: \(e.reason)")
        }
        guard var text = read else {
            throw RegistrationTokenError(.invalidSecret, "no registration token secret at \(path)",
                                         suggestion: "push-keys registration-token new-secret --out \(path)")
        }
        defer { SecretBytes.wipe(&text) }
        return try RegistrationTokenSecret(text: text)
    }

    /// A new random secret's text: 43 characters of unpadded base64url (32 bytes from libsodium)
    /// and a LF. Wipe it after writing.
    public static func generateText() -> [UInt8] {
        let random = SecretBytes(randomByteCount: 32)
        var text = random.withUnsafeBytes { Array(WireBase64.encodeSecret($0).utf8) }
        defer { SecretBytes.wipe(&text) }
        var safe = RegistrationToken.urlSafe(text)
        defer { SecretBytes.wipe(&safe) }
        return safe + [UInt8(ascii: "\n")]
    }

    /// Creates a new secret file at `path` (exclusively, 0600; never replaces one).
    /// - Throws: `SystemError` `.alreadyExists` and the write errors of `PrivateFile.createExclusive`.
    public static func create(at path: String) throws {
        var text = generateText()
        defer { SecretBytes.wipe(&text) }
        try PrivateFile.createExclusive(path, text)
    }
}
