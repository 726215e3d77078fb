public import PushSealCrypto
import PushSealSystem

/// The key-encryption key (KEK): 32 bytes that wrap every key the registry stores
/// (AES-256-GCM, AAD binding app id, recipient and key id). It never enters the database: it is
/// read from a file held to the keychain's rules for key files (a regular file, not a link,
/// owned by the caller, mode 0600), so a dump or backup of the database opens nothing.
///
/// File format: the 32 raw bytes, or 64 hex digits (an optional trailing newline).
public struct KeyEncryptionKey: Sendable {
    /// The environment variable naming the KEK file when `--kek-file` is not given.
    public static let environmentVariable = "PUSHSEAL_KEK_FILE"
    /// AAD prefix of a wrapped key (then app id, recipient, key id, NUL-separated: none of them
    /// may hold a NUL).
    static let keyAADLabel = "pushseal-registry-key-v1"
    /// AAD and plaintext of the check value stored in `pushseal_kek`.
    static let checkLabel = "pushseal-registry-kek-check-v1"
    /// Bytes of one wrapped 32-byte key: nonce 12 ‖ ciphertext 32 ‖ tag 16.
    public static let wrappedKeyByteCount = AES256GCM.nonceByteCount + AES256GCM.keyByteCount + AES256GCM.tagByteCount

    let key: SecretBytes
    /// Where it came from, for messages (the path, never the bytes).
    public let source: String

    /// Wraps 32 bytes already in memory (tests, `rewrap`).
    /// - Throws: `RegistryError` `.kekFile` when `key` is not 32 bytes.
    public init(key: SecretBytes, source: String) throws {
        guard key.byteCount == AES256GCM.keyByteCount else { throw RegistryError(.kekFile, "a key-encryption key is 32 bytes, got \(key.byteCount)") }
        self.key = key
        self.source = source
    }

    /// Reads a KEK file.
    /// - Parameter path: the file (`--kek-file`, or ``environmentVariable``).
    /// - Throws: `RegistryError` `.kekFile` (missing, a link, not a regular file, not the caller's,
    ///   group/world-accessible — with a `chmod 600` hint —, or not 32 bytes / 64 hex digits).
    public init(file path: String) throws {
        var buffer: [UInt8]
        do {
            // 32 raw bytes or 64 hex digits and a line end: anything longer is not a KEK file.
            guard let bytes = try PrivateFile.read(path, maxByteCount: 2 * AES256GCM.keyByteCount + 2) else {
                throw RegistryError(.kekFile, "no key-encryption key file at \(path)")
            }
            buffer = bytes
        } catch let e as SystemError {
            let fix = e.code == .insecureMode ? ": chmod 600 \(path)" : ""
            let what = e.code == .tooLarge ? "\(path) is too long" : e.reason
            throw RegistryError(.kekFile, "the key-encryption key file is refused: \(what)\(fix)")
        }
        defer { SecretBytes.wipe(&buffer) }
        let n = buffer.count
        var raw = Array(buffer[0..<n])
        defer { SecretBytes.wipe(&raw) }
        if raw.count == AES256GCM.keyByteCount {
            try self.init(key: SecretBytes(copying: raw), source: path)
            return
        }
        while let last = raw.last, last == 0x0A || last == 0x0D { raw.removeLast() }
        guard raw.count == 2 * AES256GCM.keyByteCount, let bytes = Self.hex(raw) else {
            throw RegistryError(.kekFile, "the key-encryption key file \(path) does not hold 32 bytes (raw, or 64 hex digits)")
        }
        var b = bytes
        defer { SecretBytes.wipe(&b) }
        try self.init(key: SecretBytes(copying: b), source: path)
    }

    /// A fresh random KEK (`push-keys registry new-kek`).
    public static func generate() -> KeyEncryptionKey {
        // 32 bytes: init(key:source:) cannot fail.
        KeyEncryptionKey(unchecked: SecretBytes(randomByteCount: AES256GCM.keyByteCount))
    }

    private init(unchecked key: SecretBytes) {
        self.key = key
        self.source = "generated"
    }

    /// The KEK as 64 lowercase hex digits and a newline (for writing a new KEK file). Secret.
    public func hexLine() -> [UInt8] {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(65)
        key.withUnsafeBytes { for b in $0 { out.append(digits[Int(b >> 4)]); out.append(digits[Int(b & 15)]) } }
        out.append(0x0A)
        return out
    }

    static func hex(_ u: [UInt8]) -> [UInt8]? {
        var out: [UInt8] = []
        var i = 0
        while i + 1 < u.count {
            guard let h = Hex.value(ofDigit: u[i]), let l = Hex.value(ofDigit: u[i + 1]) else { SecretBytes.wipe(&out); return nil }
            out.append(h << 4 | l)
            i += 2
        }
        return out
    }

    static func aad(appID: String, recipient: String, keyID: String) -> [UInt8] {
        Array(keyAADLabel.utf8) + [0] + Array(appID.utf8) + [0] + Array(recipient.utf8) + [0] + Array(keyID.utf8)
    }

    /// Wraps one 32-byte key: nonce ‖ ciphertext ‖ tag (``wrappedKeyByteCount`` bytes).
    func wrap(_ secret: SecretBytes, appID: String, recipient: String, keyID: String) throws -> [UInt8] {
        try secret.withUnsafeBytes { raw in
            try Self.aad(appID: appID, recipient: recipient, keyID: keyID).withUnsafeBytes { a in
                try AES256GCM.seal(raw, with: key, authenticating: a).combined
            }
        }
    }

    /// Unwraps one key.
    /// - Throws: `RegistryError` `.wrongKEK` (the tag does not verify: another KEK, or a row
    ///   moved to another keyset or key id), `.corrupt` (wrong size).
    func unwrap(_ wrapped: [UInt8], appID: String, recipient: String, keyID: String) throws -> SecretBytes {
        guard wrapped.count == Self.wrappedKeyByteCount, let box = try? SealedBox(combined: wrapped) else {
            throw RegistryError(.corrupt, "the wrapped key \(keyID) of \(appID)/\(recipient) is \(wrapped.count) bytes, expected \(Self.wrappedKeyByteCount)")
        }
        do {
            var plain = try AES256GCM.open(box, with: key, authenticating: Self.aad(appID: appID, recipient: recipient, keyID: keyID))
            defer { SecretBytes.wipe(&plain) }
            return SecretBytes(copying: plain)
        } catch {
            throw RegistryError(.wrongKEK,
                "key \(keyID) of \(appID)/\(recipient) does not unwrap under the key-encryption key from \(source): wrong --kek-file, or the row was altered")
        }
    }

    /// The check value kept in `pushseal_kek`: proves a KEK is the registry's before any key is read.
    func checkBox() throws -> [UInt8] {
        try AES256GCM.seal(Array(Self.checkLabel.utf8), with: key, authenticating: Array(Self.checkLabel.utf8)).combined
    }

    /// `true` when `box` is this KEK's check value.
    func opensCheck(_ box: [UInt8]) -> Bool {
        guard let b = try? SealedBox(combined: box), let plain = try? AES256GCM.open(b, with: key, authenticating: Array(Self.checkLabel.utf8)) else { return false }
        return plain == Array(Self.checkLabel.utf8)
    }
}
