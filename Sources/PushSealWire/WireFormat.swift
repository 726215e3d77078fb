public import PushSealJSON
public import PushSealCrypto

/// Wire format version 1: the constants, the AAD, identifier rules and the seal side
/// (normative text: docs/FORMAT.md).
///
/// A sealed APNs payload carries three top-level string fields next to `aps`:
/// `encrypted_data` (standard padded base64 of nonce(12) ‖ ciphertext ‖ tag(16)),
/// `key_id` and `enc_alg` (`A256GCM`). The AAD binds the box to version, algorithm, key id
/// and app id.
public enum WireFormat {
    /// Payload field holding the base64 sealed box.
    public static let encryptedDataField = "encrypted_data"
    /// Payload field naming the key (1–64 of `A-Z a-z 0-9 _ -`).
    public static let keyIDField = "key_id"
    /// Payload field naming the algorithm.
    public static let algorithmField = "enc_alg"
    /// The only algorithm of version 1: AES-256-GCM, 12-byte nonce, 16-byte tag.
    public static let algorithm = "A256GCM"
    /// The version string that starts the AAD.
    public static let version = "pushseal:v1"
    /// Separator between the AAD parts.
    public static let aadSeparator: UInt8 = UInt8(ascii: "|")
    /// Longest key id, in characters (= bytes, ASCII).
    public static let maxKeyIDByteCount = 64
    /// Longest app id, in bytes (ASCII).
    public static let maxAppIDByteCount = 255
    /// Largest APNs payload, in bytes of serialized JSON (Apple: "Generating a remote
    /// notification", 4 KB for regular remote notifications).
    public static let maxPayloadByteCount = 4096

    /// The AAD of a box: the UTF-8 bytes of `pushseal:v1|<enc_alg>|<key_id>|<app_id>`.
    /// - Parameters:
    ///   - algorithm: the `enc_alg` value as it appears in the payload.
    ///   - keyID: the `key_id` value as it appears in the payload.
    ///   - appID: the app's bundle identifier (APNs topic), e.g. `com.example.app`.
    /// - Returns: the AAD bytes, no terminator.
    public static func aad(algorithm: String, keyID: String, appID: String) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(version.utf8.count + algorithm.utf8.count + keyID.utf8.count + appID.utf8.count + 3)
        out.append(contentsOf: version.utf8)
        out.append(aadSeparator)
        out.append(contentsOf: algorithm.utf8)
        out.append(aadSeparator)
        out.append(contentsOf: keyID.utf8)
        out.append(aadSeparator)
        out.append(contentsOf: appID.utf8)
        return out
    }

    /// Whether `keyID` is 1–64 characters of `A-Z a-z 0-9 _ -`.
    public static func isValidKeyID(_ keyID: String) -> Bool {
        var keyID = keyID
        return keyID.withUTF8 { u in
            guard !u.isEmpty, u.count <= maxKeyIDByteCount else { return false }
            for c in u {
                let letter = (c | 0x20) &- 0x61 < 26  // A-Z, a-z
                guard letter || c &- 0x30 < 10 || c == UInt8(ascii: "_") || c == UInt8(ascii: "-") else { return false }
            }
            return true
        }
    }

    /// Checks a key id.
    /// - Throws: `FormatError` `.invalidKeyID` unless `keyID` is 1–64 of `A-Z a-z 0-9 _ -`.
    public static func validateKeyID(_ keyID: String) throws {
        guard isValidKeyID(keyID) else {
            throw FormatError(.invalidKeyID, "a key id is 1-64 characters of A-Z a-z 0-9 _ -, got \(describe(keyID))")
        }
    }

    /// Whether `appID` is a valid app id: 1–255 bytes of printable ASCII (0x21–0x7E) other
    /// than `|`. Bundle identifiers and APNs topics (`com.example.app`,
    /// `com.example.app.voip`) qualify; `|` is excluded because it separates AAD parts.
    public static func isValidAppID(_ appID: String) -> Bool {
        let u = appID.utf8
        guard !u.isEmpty, u.count <= maxAppIDByteCount else { return false }
        return u.allSatisfy { $0 >= 0x21 && $0 <= 0x7E && $0 != aadSeparator }
    }

    /// Checks an app id (see ``isValidAppID(_:)``).
    /// - Throws: `FormatError` `.invalidAppID`.
    public static func validateAppID(_ appID: String) throws {
        guard isValidAppID(appID) else {
            throw FormatError(.invalidAppID, "an app id is 1-255 bytes of printable ASCII without '|' (a bundle identifier), got \(describe(appID))")
        }
    }

    /// Seals a notification for the APNs payload fields.
    ///
    /// Encodes `plaintext` as compact JSON, pads it with trailing spaces to its Padmé length
    /// (unless `padding` is false), and seals it with AES-256-GCM under `key` with a fresh
    /// random nonce and the AAD `pushseal:v1|A256GCM|<keyID>|<appID>`.
    /// - Parameters:
    ///   - plaintext: the notification.
    ///   - key: the 32-byte AES-256 key the device holds under `keyID`.
    ///   - keyID: 1–64 of `A-Z a-z 0-9 _ -`.
    ///   - appID: the app's bundle identifier (APNs topic).
    ///   - padding: pad to the Padmé length (default true).
    /// - Returns: the three field values to write into the payload.
    /// - Throws: `FormatError` `.invalidKeyID`, `.invalidAppID`, `.invalidKey` (not 32 bytes),
    ///   `.nonFiniteNumber` (an infinite or NaN number in `data`); `CryptoError` `.internalFailure` if the system random generator or OpenSSL fails.
    public static func seal(plaintext: NotificationPlaintext, key: SecretBytes, keyID: String, appID: String,
                            padding: Bool = true) throws -> SealedFields {
        var bytes = try plaintext.encoded(padding: padding)
        defer { SecretBytes.wipe(&bytes) }
        return try seal(encodedPlaintext: bytes, key: key, keyID: keyID, appID: appID)
    }

    /// Seals already-encoded plaintext bytes (a UTF-8 JSON object, padded or not) as
    /// ``seal(plaintext:key:keyID:appID:padding:)`` does after encoding. The bytes are not
    /// checked: use this only with the output of ``NotificationPlaintext/encoded(padding:)``
    /// or for test vectors.
    /// - Throws: `FormatError` `.invalidKeyID`, `.invalidAppID`, `.invalidKey`;
    ///   `CryptoError` `.internalFailure`.
    public static func seal(encodedPlaintext: [UInt8], key: SecretBytes, keyID: String, appID: String) throws -> SealedFields {
        try validateKeyID(keyID)
        try validateAppID(appID)
        guard key.byteCount == AES256GCM.keyByteCount else {
            throw FormatError(.invalidKey, "an A256GCM key is \(AES256GCM.keyByteCount) bytes, got \(key.byteCount)")
        }
        let box = try withAAD(keyID: keyID, appID: appID) { aad in
            try encodedPlaintext.withUnsafeBytes { p in try AES256GCM.seal(p, with: key, authenticating: aad) }
        }
        return SealedFields(encryptedData: WireBase64.encode(box.combined), keyID: keyID, algorithm: algorithm)
    }

    /// Builds the AAD for `A256GCM` on the stack (≤ 340 bytes for valid ids) and passes it to `body`.
    static func withAAD<R>(keyID: String, appID: String, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        func slowPath() throws -> R { try aad(algorithm: algorithm, keyID: keyID, appID: appID).withUnsafeBytes(body) }
        var k = keyID, a = appID
        return try k.withUTF8 { kb in
            try a.withUTF8 { ab in
                let count = version.utf8.count + algorithm.utf8.count + kb.count + ab.count + 3
                return try withUnsafeTemporaryAllocation(byteCount: count, alignment: 1) { buf in
                    guard let base = buf.baseAddress else { return try slowPath() }
                    var p = base
                    func put(_ bytes: UnsafeRawBufferPointer) {
                        guard let b = bytes.baseAddress else { return }
                        p.copyMemory(from: b, byteCount: bytes.count)
                        p += bytes.count
                    }
                    let bar = aadSeparator
                    version.utf8.withContiguousStorageIfAvailable { put(UnsafeRawBufferPointer($0)) }
                    p.storeBytes(of: bar, as: UInt8.self); p += 1
                    algorithm.utf8.withContiguousStorageIfAvailable { put(UnsafeRawBufferPointer($0)) }
                    p.storeBytes(of: bar, as: UInt8.self); p += 1
                    put(UnsafeRawBufferPointer(kb))
                    p.storeBytes(of: bar, as: UInt8.self); p += 1
                    put(UnsafeRawBufferPointer(ab))
                    // Only if a constant were not contiguous UTF-8 (never for native literals).
                    guard p - base == count else { return try slowPath() }
                    return try body(UnsafeRawBufferPointer(buf))
                }
            }
        }
    }

    /// A value for an error reason: short strings quoted, long ones only by length.
    static func describe(_ s: String) -> String {
        s.utf8.count <= 80 ? "\"\(s)\"" : "a string of \(s.utf8.count) bytes"
    }
}

/// The three payload field values produced by ``WireFormat/seal(plaintext:key:keyID:appID:padding:)``.
public struct SealedFields: Sendable, Hashable {
    /// `encrypted_data`: standard padded base64 of nonce(12) ‖ ciphertext ‖ tag(16).
    public let encryptedData: String
    /// `key_id`.
    public let keyID: String
    /// `enc_alg` (`A256GCM`).
    public let algorithm: String

    /// Creates the field values (no checks; ``WireFormat/seal(plaintext:key:keyID:appID:padding:)`` makes valid ones).
    public init(encryptedData: String, keyID: String, algorithm: String) {
        self.encryptedData = encryptedData
        self.keyID = keyID
        self.algorithm = algorithm
    }

    /// Sets `encrypted_data`, `key_id` and `enc_alg` in `payload` (appended in that order
    /// when absent, replaced when present).
    public func write(into payload: inout JSONObject) {
        payload[WireFormat.encryptedDataField] = .string(encryptedData)
        payload[WireFormat.keyIDField] = .string(keyID)
        payload[WireFormat.algorithmField] = .string(algorithm)
    }
}
