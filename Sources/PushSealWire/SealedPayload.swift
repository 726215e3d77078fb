public import PushSealJSON
public import PushSealCrypto

/// The sealed part of an APNs payload, read and checked (FORMAT.md §3, §8): the decoded box,
/// the key id to look the key up by, and the algorithm.
///
/// Reading checks, in this order, each field's presence, type and emptiness, then `enc_alg`,
/// then `key_id`, then the base64 and the box length, and reports the first problem with a
/// distinct `FormatError` code. Opening verifies the tag over the AAD
/// `pushseal:v1|<enc_alg>|<key_id>|<app_id>` and decodes the plaintext.
///
/// Every failure, including a failed tag, is a `FormatError`: a receiver shows the original
/// content for all of them and may log the code.
public struct SealedPayload: Sendable, Hashable {
    /// The box: nonce(12) ‖ ciphertext ‖ tag(16), at least 28 bytes.
    public let box: SealedBox
    /// `key_id`, valid (1–64 of `A-Z a-z 0-9 _ -`).
    public let keyID: String
    /// `enc_alg`; always `A256GCM` in version 1.
    public let algorithm: String

    /// Reads the sealed fields of an APNs payload.
    /// - Parameter payload: the whole payload object (`aps` and the rest are not looked at).
    /// - Throws: `FormatError` `.missingField` (payload not an object, or a field absent; names
    ///   it), `.wrongFieldType` (not a string), `.emptyField`, `.unknownAlgorithm`,
    ///   `.invalidKeyID`, `.invalidBase64`, `.truncatedBox` (fewer than 28 bytes).
    public init(payload: JSONValue) throws {
        guard case .object(let object) = payload else {
            throw FormatError(.missingField, "the payload is a JSON \(payload.typeName), not an object with \(WireFormat.encryptedDataField), \(WireFormat.keyIDField) and \(WireFormat.algorithmField)")
        }
        try self.init(payload: object)
    }

    /// Reads the sealed fields of an APNs payload object (see ``init(payload:)-(JSONValue)``).
    public init(payload: JSONObject) throws {
        let data = try Self.stringField(payload, WireFormat.encryptedDataField)
        let keyID = try Self.stringField(payload, WireFormat.keyIDField)
        let algorithm = try Self.stringField(payload, WireFormat.algorithmField)
        try self.init(encryptedData: data, keyID: keyID, algorithm: algorithm)
    }

    /// Checks and decodes field values taken out of a payload by other means.
    /// - Throws: as ``init(payload:)-(JSONValue)``, less `.missingField` and `.wrongFieldType`.
    public init(encryptedData: String, keyID: String, algorithm: String) throws {
        for (name, value) in [(WireFormat.encryptedDataField, encryptedData), (WireFormat.keyIDField, keyID), (WireFormat.algorithmField, algorithm)]
        where value.isEmpty {
            throw FormatError(.emptyField, "\(name) is empty")
        }
        guard algorithm == WireFormat.algorithm else {
            throw FormatError(.unknownAlgorithm, "\(WireFormat.algorithmField) \(WireFormat.describe(algorithm)) is not supported (version 1 knows only \(WireFormat.algorithm))")
        }
        try WireFormat.validateKeyID(keyID)
        let bytes = try WireBase64.decode(encryptedData)
        if bytes.isEmpty {
            throw FormatError(.emptyField, "\(WireFormat.encryptedDataField) holds only whitespace")
        }
        guard bytes.count >= AES256GCM.minimumCombinedByteCount else {
            throw FormatError(.truncatedBox, "\(WireFormat.encryptedDataField) decodes to \(bytes.count) bytes; a box is at least \(AES256GCM.minimumCombinedByteCount) (12-byte nonce, 16-byte tag)")
        }
        do {
            box = try SealedBox(combined: bytes)
        } catch {
            throw FormatError(.truncatedBox, "\(WireFormat.encryptedDataField) is too short for a box")
        }
        self.keyID = keyID
        self.algorithm = algorithm
    }

    static func stringField(_ o: JSONObject, _ name: String) throws -> String {
        guard let v = o[name] else { throw FormatError(.missingField, "the payload has no \(name)") }
        guard case .string(let s) = v else {
            throw FormatError(.wrongFieldType, "\(name) must be a string, got \(v.typeName)")
        }
        return s
    }

    /// The AAD this box must verify under for `appID`.
    public func aad(appID: String) -> [UInt8] {
        WireFormat.aad(algorithm: algorithm, keyID: keyID, appID: appID)
    }

    /// Opens the box and returns the raw plaintext bytes (padding included), without decoding them.
    /// - Parameters:
    ///   - key: the 32-byte key held under ``keyID``.
    ///   - appID: the receiving app's bundle identifier.
    /// - Returns: the plaintext, only after the tag verified. Wipe it when done.
    /// - Throws: `FormatError` `.authenticationFailed`, `.invalidKey` (not 32 bytes), `.invalidAppID`.
    public func openBytes(with key: SecretBytes, appID: String) throws -> [UInt8] {
        try WireFormat.validateAppID(appID)
        guard key.byteCount == AES256GCM.keyByteCount else {
            throw FormatError(.invalidKey, "an A256GCM key is \(AES256GCM.keyByteCount) bytes, got \(key.byteCount)")
        }
        do {
            return try WireFormat.withAAD(keyID: keyID, appID: appID) { aad in
                try box.combined.withUnsafeBytes { c in
                    try AES256GCM.open(nonce: UnsafeRawBufferPointer(rebasing: c[0..<AES256GCM.nonceByteCount]),
                                       ciphertext: UnsafeRawBufferPointer(rebasing: c[AES256GCM.nonceByteCount..<(c.count - AES256GCM.tagByteCount)]),
                                       tag: UnsafeRawBufferPointer(rebasing: c[(c.count - AES256GCM.tagByteCount)...]),
                                       with: key, authenticating: aad)
                }
            }
        } catch let error as CryptoError where error.code == .authenticationFailed {
            throw FormatError(.authenticationFailed, "the box did not authenticate for key id \(WireFormat.describe(keyID)) and app id \(WireFormat.describe(appID)) (wrong key, wrong key id or app id, or modified data)")
        }
    }

    /// Opens the box and decodes the notification.
    /// - Parameters:
    ///   - key: the 32-byte key held under ``keyID``.
    ///   - appID: the receiving app's bundle identifier (APNs topic).
    /// - Returns: the notification.
    /// - Throws: `FormatError` `.authenticationFailed`, `.invalidKey`, `.invalidAppID`,
    ///   `.invalidPlaintext` (authentic, but not a UTF-8 JSON object of the documented shape).
    public func open(with key: SecretBytes, appID: String) throws -> NotificationPlaintext {
        var bytes = try openBytes(with: key, appID: appID)
        defer { SecretBytes.wipe(&bytes) }
        return try NotificationPlaintext(jsonBytes: bytes)
    }
}
