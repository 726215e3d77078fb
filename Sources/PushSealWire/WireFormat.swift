public import PushSealJSON
public import PushSealCrypto
import PushSealSystem

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

    /// The AAD of a version-1 box: the UTF-8 bytes of `pushseal:v1|<enc_alg>|<key_id>|<app_id>`
    /// (built by ``A256GCMEnvelope/aad(algorithm:keyID:appID:)``).
    /// - Parameters:
    ///   - algorithm: the `enc_alg` value as it appears in the payload.
    ///   - keyID: the `key_id` value as it appears in the payload.
    ///   - appID: the app's bundle identifier (APNs topic), e.g. `com.example.app`.
    /// - Returns: the AAD bytes, no terminator.
    public static func aad(algorithm: String, keyID: String, appID: String) -> [UInt8] {
        A256GCMEnvelope.aad(algorithm: algorithm, keyID: keyID, appID: appID)
    }

    /// Whether `keyID` is 1–64 characters of `A-Z a-z 0-9 _ -`.
    public static func isValidKeyID(_ keyID: String) -> Bool {
        keyID.withContiguousUTF8 { u in
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
        appID.withContiguousUTF8 { u in
            guard !u.isEmpty, u.count <= maxAppIDByteCount else { return false }
            // A plain loop: the seal entry point runs this on every seal.
            for c in u where c < 0x21 || c > 0x7E || c == aadSeparator { return false }
            return true
        }
    }

    /// Checks an app id (see ``isValidAppID(_:)``).
    /// - Throws: `FormatError` `.invalidAppID`.
    public static func validateAppID(_ appID: String) throws {
        guard isValidAppID(appID) else {
            throw FormatError(.invalidAppID, "an app id is 1-255 bytes of printable ASCII without '|' (a bundle identifier), got \(describe(appID))")
        }
    }

    /// The one seal entry point: checks the context, then seals `plaintext` with `algorithm`
    /// into `box`. Every sealer (``seal(plaintext:key:keyID:appID:padding:registry:)``,
    /// the sender's `NotificationSealer` with its stack buffers) comes through here, and the
    /// algorithm builds its AAD or `info` only inside.
    /// - Parameters:
    ///   - plaintext: the encoded (padded) plaintext, e.g. from ``PlaintextEncoder``.
    ///   - key: ``EnvelopeAlgorithm/keyByteCount`` bytes (32 for `A256GCM`).
    ///   - context: key id (1–64 of `A-Z a-z 0-9 _ -`), app id (FORMAT.md §3.2) and the
    ///     algorithm's header values (each 1–64 of `A-Z a-z 0-9 _ -`).
    ///   - algorithm: the entry to seal with (default `A256GCM`).
    ///   - box: room for `algorithm.boxByteCount(plaintextByteCount: plaintext.byteCount)` bytes,
    ///     written from its start.
    /// - Returns: the box bytes written.
    /// - Throws: `FormatError` `.invalidKeyID`, `.invalidAppID`, `.invalidKey`; `CryptoError`
    ///   `.invalidParameter` (box too small), `.internalFailure` (random generator or OpenSSL).
    public static func seal(_ plaintext: RawSpan, key: SecretBytes, context: EnvelopeContext,
                            algorithm: any EnvelopeAlgorithm = A256GCMEnvelope(),
                            into box: inout MutableRawSpan) throws -> Int {
        if !context.identifiersChecked {
            try validateKeyID(context.keyID)
            try validateAppID(context.appID)
        }
        guard context.headerValues.count == algorithm.headerFieldNames.count,
              context.headerValues.allSatisfy(isValidKeyID) else {
            throw FormatError(.invalidKeyID, "\(algorithm.name) needs \(algorithm.headerFieldNames.count) header values of 1-64 characters of A-Z a-z 0-9 _ -")
        }
        guard key.byteCount == algorithm.keyByteCount else {
            throw FormatError(.invalidKey, "an \(algorithm.name) key is \(algorithm.keyByteCount) bytes, got \(key.byteCount)")
        }
        return try algorithm.seal(plaintext, key: key, context: context, into: &box)
    }

    /// Seals a notification for the APNs payload fields: encodes `plaintext` (``PlaintextEncoder``),
    /// pads it to its Padmé length (unless `padding` is false), and seals it through
    /// ``seal(_:key:context:algorithm:into:)`` with `registry`'s first entry (`A256GCM` for
    /// ``EnvelopeRegistry/standard``: fresh random nonce, AAD `pushseal:v1|A256GCM|<keyID>|<appID>`).
    /// - Parameters:
    ///   - plaintext: the notification.
    ///   - key: the key the device holds under `keyID` (32 bytes for `A256GCM`).
    ///   - keyID: 1–64 of `A-Z a-z 0-9 _ -`.
    ///   - appID: the app's bundle identifier (APNs topic).
    ///   - padding: pad to the Padmé length (default true).
    ///   - algorithm: the entry to seal with (default `A256GCM`).
    /// - Returns: the field values to write into the payload.
    /// - Throws: as ``seal(_:key:context:algorithm:into:)``; `FormatError` `.nonFiniteNumber`
    ///   (an infinite or NaN number in `data`).
    public static func seal(plaintext: PushNotification, key: SecretBytes, keyID: String, appID: String,
                            padding: Bool = true, algorithm: any EnvelopeAlgorithm = A256GCMEnvelope()) throws -> SealedFields {
        var bytes = try plaintext.encoded(padding: padding)
        defer { SecretBytes.wipe(&bytes) }
        return try seal(encodedPlaintext: bytes, key: key, keyID: keyID, appID: appID, algorithm: algorithm)
    }

    /// Seals already-encoded plaintext bytes (a UTF-8 JSON object, padded or not) through
    /// ``seal(_:key:context:algorithm:into:)``. The bytes are not checked: use this only with
    /// the output of ``PushNotification/encoded(padding:)`` or for test vectors.
    /// - Throws: as ``seal(_:key:context:algorithm:into:)``.
    public static func seal(encodedPlaintext: [UInt8], key: SecretBytes, keyID: String, appID: String,
                            algorithm: any EnvelopeAlgorithm = A256GCMEnvelope()) throws -> SealedFields {
        let context = EnvelopeContext(keyID: keyID, appID: appID, headerValues: try algorithm.sealingHeaderValues(keyID: keyID, appID: appID))
        var box = [UInt8](repeating: 0, count: algorithm.boxByteCount(plaintextByteCount: encodedPlaintext.count))
        let written: Int
        do {
            var span = box.mutableSpan
            var bytes = span.mutableBytes
            written = try seal(encodedPlaintext.span.bytes, key: key, context: context, algorithm: algorithm, into: &bytes)
        }
        return SealedFields(encryptedData: WireBase64.encode(Array(box[0..<written])), keyID: keyID, algorithm: algorithm.name,
                            headerFields: zip(algorithm.headerFieldNames, context.headerValues).map { (name: $0, value: $1) })
    }

    /// A value for an error reason: short strings quoted, long ones only by length.
    static func describe(_ s: String) -> String {
        s.utf8.count <= 80 ? "\"\(s)\"" : "a string of \(s.utf8.count) bytes"
    }
}

/// The payload field values produced by ``WireFormat/seal(plaintext:key:keyID:appID:padding:algorithm:)``.
public struct SealedFields: Sendable, Equatable {
    /// `encrypted_data`: standard padded base64 of nonce(12) ‖ ciphertext ‖ tag(16).
    public let encryptedData: String
    /// `key_id`.
    public let keyID: String
    /// `enc_alg` (`A256GCM`).
    public let algorithm: String
    /// The algorithm's own fields after `enc_alg`, in payload order (none for `A256GCM`).
    public let headerFields: [(name: String, value: String)]

    /// Creates the field values (no checks; ``WireFormat/seal(plaintext:key:keyID:appID:padding:algorithm:)`` makes valid ones).
    public init(encryptedData: String, keyID: String, algorithm: String, headerFields: [(name: String, value: String)] = []) {
        self.encryptedData = encryptedData
        self.keyID = keyID
        self.algorithm = algorithm
        self.headerFields = headerFields
    }

    public static func == (lhs: SealedFields, rhs: SealedFields) -> Bool {
        lhs.encryptedData == rhs.encryptedData && lhs.keyID == rhs.keyID && lhs.algorithm == rhs.algorithm
            && lhs.headerFields.map(\.name) == rhs.headerFields.map(\.name) && lhs.headerFields.map(\.value) == rhs.headerFields.map(\.value)
    }

    /// Sets `encrypted_data`, `key_id` and `enc_alg` in `payload` (appended in that order
    /// when absent, replaced when present).
    public func write(into payload: inout JSONObject) {
        payload[WireFormat.encryptedDataField] = .string(encryptedData)
        payload[WireFormat.keyIDField] = .string(keyID)
        payload[WireFormat.algorithmField] = .string(algorithm)
        for f in headerFields { payload[f.name] = .string(f.value) }
    }
}
