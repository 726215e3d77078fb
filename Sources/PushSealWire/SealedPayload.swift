public import PushSealJSON
public import PushSealCrypto
import PushSealSystem

/// The sealed part of an APNs payload, read and checked once (FORMAT.md §3, §8): the decoded
/// box, the key id to look the key up by, the algorithm and its header values.
///
/// Reading checks, in this order (FORMAT.md §3, §V.3): presence and type of `encrypted_data`,
/// `key_id`, `enc_alg`, then of the named entry's own header fields; emptiness of the three,
/// then of the header fields; `enc_alg` (it must name an entry of the registry); `key_id`'s
/// value, then the header values'; the base64; then the entry's receiver checks (box length,
/// v2 sender policy: ``EnvelopeAlgorithm/admit(boxByteCount:headerValues:)``). The first
/// problem decides the `FormatError` code (the field in ``FormatError/field``). Opening hands the box to the
/// algorithm, which verifies it over its AAD or `info` and the receiver's app id.
///
/// Every failure, including a failed tag, is a `FormatError`: a receiver shows the original
/// content for all of them and may log the code.
public struct SealedPayload: Sendable, Hashable {
    /// The box as `encrypted_data` decodes (A256GCM: nonce(12) ‖ ciphertext ‖ tag(16), at
    /// least 28 bytes).
    public let box: [UInt8]
    /// `key_id`, valid (1–64 of `A-Z a-z 0-9 _ -`).
    public let keyID: String
    /// `enc_alg`, the name of ``envelope``.
    public let algorithm: String
    /// The values of the algorithm's own header fields (``EnvelopeAlgorithm/headerFieldNames``
    /// order; empty for `A256GCM`).
    public let headerValues: [String]
    /// The registry entry named by `enc_alg`.
    public let envelope: any EnvelopeAlgorithm

    /// Reads the sealed fields of an APNs payload.
    /// - Parameters:
    ///   - payload: the whole payload object (`aps` and the rest are not looked at).
    ///   - registry: the algorithms accepted (default ``EnvelopeRegistry/standard``).
    /// - Throws: `FormatError` `.missingField` (payload not an object, or a field absent; names
    ///   it), `.wrongFieldType` (not a string), `.emptyField`, `.unknownAlgorithm`,
    ///   `.invalidKeyID`, `.invalidBase64`, `.truncatedBox` (shorter than the algorithm's
    ///   smallest box).
    public init(payload: JSONValue, registry: EnvelopeRegistry = .standard) throws {
        guard case .object(let object) = payload else {
            throw FormatError(.missingField, "the payload is a JSON \(payload.typeName), not an object with \(WireFormat.encryptedDataField), \(WireFormat.keyIDField) and \(WireFormat.algorithmField)",
                              field: WireFormat.encryptedDataField)
        }
        try self.init(payload: object, registry: registry)
    }

    /// Reads the sealed fields of an APNs payload object (see ``init(payload:registry:)-(JSONValue,_)``).
    public init(payload: JSONObject, registry: EnvelopeRegistry = .standard) throws {
        let data = try Self.stringField(payload, WireFormat.encryptedDataField)
        let keyID = try Self.stringField(payload, WireFormat.keyIDField)
        let algorithm = try Self.stringField(payload, WireFormat.algorithmField)
        // Presence and type of the named entry's own fields come before any emptiness check
        // (FORMAT.md §V.3 step 2); an unknown enc_alg has none.
        let entry = registry.algorithm(named: algorithm)
        let names = entry?.headerFieldNames ?? []
        let values = names.isEmpty ? [] : try names.map { try Self.stringField(payload, $0) }
        try self.init(encryptedData: data, keyID: keyID, algorithm: algorithm, entry: entry, headerValues: values, registry: registry)
    }

    /// Checks and decodes field values taken out of a payload by other means.
    /// - Throws: as ``init(payload:registry:)-(JSONValue,_)``, less `.wrongFieldType`;
    ///   `.missingField` when `headerValues` does not give every header field of the entry.
    public init(encryptedData: String, keyID: String, algorithm: String, headerValues: [String] = [],
                registry: EnvelopeRegistry = .standard) throws {
        let entry = registry.algorithm(named: algorithm)
        if let entry, headerValues.count != entry.headerFieldNames.count {
            throw FormatError(.missingField, "\(algorithm) needs the fields \(entry.headerFieldNames.joined(separator: ", "))",
                              field: entry.headerFieldNames.dropFirst(headerValues.count).first)
        }
        try self.init(encryptedData: encryptedData, keyID: keyID, algorithm: algorithm, entry: entry,
                      headerValues: entry == nil ? [] : headerValues, registry: registry)
    }

    /// Reading steps after presence and type (FORMAT.md §3, §V.3): emptiness of the three
    /// fields then of the header fields, `enc_alg`'s value, `key_id`'s value then the header
    /// values', the base64, then the entry's ``EnvelopeAlgorithm/admit(boxByteCount:headerValues:)``.
    private init(encryptedData: String, keyID: String, algorithm: String, entry: (any EnvelopeAlgorithm)?,
                 headerValues: [String], registry: EnvelopeRegistry) throws {
        func empty(_ name: String) -> FormatError { FormatError(.emptyField, "\(name) is empty", field: name) }
        if encryptedData.isEmpty { throw empty(WireFormat.encryptedDataField) }
        if keyID.isEmpty { throw empty(WireFormat.keyIDField) }
        if algorithm.isEmpty { throw empty(WireFormat.algorithmField) }
        guard let entry else {
            throw FormatError(.unknownAlgorithm, "\(WireFormat.algorithmField) \(WireFormat.describe(algorithm)) is not supported (known: \(registry.names.joined(separator: ", ")))",
                              field: WireFormat.algorithmField)
        }
        for (name, value) in zip(entry.headerFieldNames, headerValues) where value.isEmpty { throw empty(name) }
        do {
            try WireFormat.validateKeyID(keyID)
        } catch let e as FormatError {
            throw FormatError(e.code, e.reason, field: WireFormat.keyIDField)
        }
        for (name, value) in zip(entry.headerFieldNames, headerValues) where !WireFormat.isValidKeyID(value) {
            throw FormatError(.invalidKeyID, "\(name) is 1-64 characters of A-Z a-z 0-9 _ -, got \(WireFormat.describe(value))", field: name)
        }
        let bytes: [UInt8]
        do {
            bytes = try WireBase64.decode(encryptedData)
        } catch let e as FormatError {
            throw FormatError(e.code, e.reason, field: WireFormat.encryptedDataField)
        }
        if bytes.isEmpty {
            throw FormatError(.emptyField, "\(WireFormat.encryptedDataField) holds only whitespace", field: WireFormat.encryptedDataField)
        }
        try entry.admit(boxByteCount: bytes.count, headerValues: headerValues)
        box = bytes
        self.keyID = keyID
        self.algorithm = entry.name
        self.headerValues = headerValues
        envelope = entry
    }

    static func stringField(_ o: JSONObject, _ name: String) throws -> String {
        guard let v = o[name] else { throw FormatError(.missingField, "the payload has no \(name)", field: name) }
        guard case .string(let s) = v else {
            throw FormatError(.wrongFieldType, "\(name) must be a string, got \(v.typeName)", field: name)
        }
        return s
    }

    /// What the box is bound to for `appID`: key id, app id and header values.
    public func context(appID: String) -> EnvelopeContext {
        EnvelopeContext(keyID: keyID, appID: appID, headerValues: headerValues)
    }

    /// The bytes this box must verify under for `appID` (A256GCM: the AAD; v2: the HPKE `info`).
    public func aad(appID: String) throws -> [UInt8] {
        try envelope.withBinding(context(appID: appID)) { TemporaryBytes.array($0) }
    }

    /// Opens the box and returns the raw plaintext bytes (padding included), without decoding them.
    /// - Parameters:
    ///   - key: the key held under ``keyID`` (32 bytes for `A256GCM`).
    ///   - appID: the receiving app's bundle identifier.
    /// - Returns: the plaintext, only after the box authenticated. Wipe it when done.
    /// - Throws: `FormatError` `.authenticationFailed`, `.invalidKey`, `.invalidAppID`.
    public func openBytes(with key: SecretBytes, appID: String) throws -> [UInt8] {
        try WireFormat.validateAppID(appID)
        guard key.byteCount == envelope.keyByteCount else {
            throw FormatError(.invalidKey, "an \(algorithm) key is \(envelope.keyByteCount) bytes, got \(key.byteCount)")
        }
        return try envelope.open(box, key: key, context: context(appID: appID))
    }

    /// Opens the box and decodes the notification.
    /// - Parameters:
    ///   - key: the key held under ``keyID``.
    ///   - appID: the receiving app's bundle identifier (APNs topic).
    /// - Returns: the notification.
    /// - Throws: `FormatError` `.authenticationFailed`, `.invalidKey`, `.invalidAppID`,
    ///   `.invalidPlaintext` (authentic, but not a UTF-8 JSON object of the documented shape).
    public func open(with key: SecretBytes, appID: String) throws -> PushNotification {
        var bytes = try openBytes(with: key, appID: appID)
        defer { SecretBytes.wipe(&bytes) }
        return try PushNotification(jsonBytes: bytes)
    }

    public static func == (lhs: SealedPayload, rhs: SealedPayload) -> Bool {
        lhs.box == rhs.box && lhs.keyID == rhs.keyID && lhs.algorithm == rhs.algorithm && lhs.headerValues == rhs.headerValues
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(box)
        hasher.combine(keyID)
        hasher.combine(algorithm)
        hasher.combine(headerValues)
    }
}
