public import PushSealCrypto

/// What binds a box to its payload and app, for one seal or open: the `key_id`, the receiving
/// app's id and the values of the algorithm's own header fields
/// (``EnvelopeAlgorithm/headerFieldNames``, in that order). An algorithm builds its AAD (v1)
/// or HPKE `info` (v2) from it, and only there.
public struct EnvelopeContext: Sendable, Hashable {
    /// `key_id`: 1–64 of `A-Z a-z 0-9 _ -`.
    public let keyID: String
    /// The app's bundle identifier (APNs topic), never taken from the payload when opening.
    public let appID: String
    /// The values of ``EnvelopeAlgorithm/headerFieldNames``, same order (empty for `A256GCM`;
    /// `[sender_key_id]` for HPKE auth mode).
    public let headerValues: [String]

    /// Whether the key id and app id were checked when the context was made
    /// (``init(checkedKeyID:appID:headerValues:)``), so the seal entry point does not check them
    /// again; not part of equality.
    let identifiersChecked: Bool

    /// Creates a context (checked by ``WireFormat/seal(_:key:context:algorithm:into:)`` and
    /// by ``SealedPayload`` when reading).
    public init(keyID: String, appID: String, headerValues: [String] = []) {
        self.keyID = keyID
        self.appID = appID
        self.headerValues = headerValues
        identifiersChecked = false
    }

    /// A context for a key id and app id the caller has just checked by
    /// ``WireFormat/isValidKeyID(_:)`` and ``WireFormat/isValidAppID(_:)`` (the sealer checks
    /// its app id once when made and each key id it is given), so the seal entry point skips
    /// those two checks; the header values are still checked there.
    /// - Throws: `FormatError` `.invalidKeyID`, `.invalidAppID` when they are not valid after all
    ///   (in debug builds only: a caller's mistake, never input).
    package init(checkedKeyID keyID: String, appID: String, headerValues: [String]) throws {
        #if DEBUG
        try WireFormat.validateKeyID(keyID)
        try WireFormat.validateAppID(appID)
        #endif
        self.keyID = keyID
        self.appID = appID
        self.headerValues = headerValues
        identifiersChecked = true
    }

    public static func == (lhs: EnvelopeContext, rhs: EnvelopeContext) -> Bool {
        lhs.keyID == rhs.keyID && lhs.appID == rhs.appID && lhs.headerValues == rhs.headerValues
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(keyID)
        hasher.combine(appID)
        hasher.combine(headerValues)
    }
}

/// One `enc_alg`: how a box is sealed and opened, the payload fields it adds, how its AAD or
/// `info` is built, and its box sizes. Entries live in an ``EnvelopeRegistry``; the sender,
/// the extension, `push-open` and `push-bench` all find the algorithm there by name, so a
/// second algorithm (v2 HPKE, docs/DESIGN.md "Wire format, version 2") is one more entry.
///
/// Version 1's only entry is ``A256GCMEnvelope``. Rules for every entry:
/// - the box is what `encrypted_data` carries (base64, FORMAT.md §4), at least
///   ``minimumBoxByteCount`` bytes;
/// - keys are byte strings of ``keyByteCount`` (v1: the 32-byte AES key on both sides; v2: the
///   device's X25519 public key when sealing, its private key when opening);
/// - every failure to authenticate throws `FormatError` `.authenticationFailed`, a wrong-size
///   key `FormatError` `.invalidKey`; system failures throw `CryptoError`.
public protocol EnvelopeAlgorithm: Sendable {
    /// The `enc_alg` value, e.g. `A256GCM`: 1–64 of `A-Z a-z 0-9 _ -`.
    var name: String { get }
    /// Payload fields this algorithm adds after `key_id` and `enc_alg`, in payload order (v2
    /// auth mode: `["sender_key_id"]`). Each is a required non-empty string when reading.
    var headerFieldNames: [String] { get }
    /// The byte count of a key given to ``seal(_:key:context:into:)`` and
    /// ``open(_:key:context:)`` (32 for `A256GCM`).
    var keyByteCount: Int { get }
    /// The fewest bytes a box holds (an empty plaintext): 28 for `A256GCM`
    /// (12-byte nonce, 16-byte tag).
    var minimumBoxByteCount: Int { get }
    /// Receiver checks on an envelope just read, before any key lookup: the box length and
    /// the entry's own policy on its header values (v2: sender pinning). Called by
    /// ``SealedPayload`` after the base64, as the last reading step (FORMAT.md §3, §V.3, §V.7
    /// step 2). The default refuses a box shorter than ``minimumBoxByteCount``.
    /// - Parameters:
    ///   - boxByteCount: the decoded `encrypted_data` length, at least 1.
    ///   - headerValues: the checked values of ``headerFieldNames``.
    /// - Throws: `FormatError` `.truncatedBox` (default); an entry's own codes (v2:
    ///   `.invalidEnc`, `.truncatedBox`, `.downgradeRefused`, `.unknownSenderKey`).
    func admit(boxByteCount: Int, headerValues: [String]) throws
    /// The box's byte count for a plaintext of `plaintextByteCount` bytes.
    func boxByteCount(plaintextByteCount: Int) -> Int
    /// The header values to seal with (``headerFieldNames`` order) for `keyID` and `appID`;
    /// the entry's own configuration (v2 auth: its sender key id). Empty for `A256GCM`.
    func sealingHeaderValues(keyID: String, appID: String) throws -> [String]
    /// The bytes this algorithm binds the box to (v1: the AAD, v2: the HPKE `info`), built in
    /// a temporary buffer and passed to `body` as a span, valid only during the call.
    func withBinding<R>(_ context: EnvelopeContext, _ body: (RawSpan) throws -> R) throws -> R
    /// Seals `plaintext` into the start of `box` (room for ``boxByteCount(plaintextByteCount:)``
    /// bytes) and returns the bytes written. The context is already checked. Spans, not
    /// pointers: an entry hands them to PushSealCrypto's span entries (`AES256GCM.seal`,
    /// `HPKE.seal`), which alone touch the memory by pointer.
    /// - Throws: `FormatError` `.invalidKey`; `CryptoError` `.internalFailure`, `.invalidParameter`.
    func seal(_ plaintext: RawSpan, key: SecretBytes, context: EnvelopeContext,
              into box: inout MutableRawSpan) throws -> Int
    /// Opens `box` and returns the plaintext (padding included), only after it authenticated.
    /// - Throws: `FormatError` `.authenticationFailed`, `.invalidKey`, `.truncatedBox`.
    func open(_ box: [UInt8], key: SecretBytes, context: EnvelopeContext) throws -> [UInt8]
}

extension EnvelopeAlgorithm {
    /// No header fields of its own.
    public var headerFieldNames: [String] { [] }
    /// Refuses a box shorter than ``minimumBoxByteCount`` (`FormatError` `.truncatedBox`).
    public func admit(boxByteCount: Int, headerValues: [String]) throws {
        guard boxByteCount >= minimumBoxByteCount else {
            throw FormatError(.truncatedBox, "\(WireFormat.encryptedDataField) decodes to \(boxByteCount) bytes; an \(name) box is at least \(minimumBoxByteCount)",
                              field: WireFormat.encryptedDataField)
        }
    }
    /// No header values of its own.
    public func sealingHeaderValues(keyID: String, appID: String) throws -> [String] { [] }
}
