public import PushSealCrypto

/// Wire format version 2, auth mode (FORMAT.md §V.2, §V.3): `enc_alg`
/// `HPKE-AUTH-X25519-A256GCM`, HPKE (RFC 9180) `mode_auth` (`AuthEncap`, §5.1.3): sealed to
/// the device key and authenticated by the sender's static X25519 key. Box enc(32) ‖
/// ciphertext ‖ tag(16), empty AAD, header field `sender_key_id`, HPKE `info`
/// `pushseal:v2|HPKE-AUTH-X25519-A256GCM|<key_id>|<app_id>|<sender_key_id>` (§V.3.2).
///
/// Configured for sealing (``init(senderKey:senderKeyID:)``: the sender private key and its
/// id) it seals to the device's 32-byte X25519 public key. Configured for opening
/// (``init(pinnedSenders:)``: the sender public keys this app pinned) it opens with the
/// device's 32-byte private key and refuses a `sender_key_id` that is not pinned
/// (`.unknownSenderKey`, before any key lookup).
///
/// Both roles keep the static-static half of the auth-mode DH per pair of keys in an
/// `HPKE.AuthPairCache` (``pairCache``): sealing per (sender key, registration key id),
/// opening per (pinned sender key, device key id), each entry checked against both public keys
/// at every use. A message then costs one X25519 operation besides the ephemeral key, as in
/// base mode; its bytes are those of the uncached computation (SECURITY.md "Version 2 key
/// caches").
public struct HPKEAuthEnvelope: EnvelopeAlgorithm {
    /// `HPKE-AUTH-X25519-A256GCM`.
    public static let algorithmName = "HPKE-AUTH-X25519-A256GCM"
    /// `sender_key_id`: the payload field this mode adds (FORMAT.md §V.3).
    public static let senderKeyIDField = "sender_key_id"

    /// The sender key id written as `sender_key_id` when sealing (`nil`: configured for opening).
    public let senderKeyID: String?
    private let senderKey: X25519.PrivateKey?
    /// The sender keys this app pinned, by sender key id (opening).
    public let pinnedSenders: [PinnedSenderKey]
    /// Where opening keeps imported device keys by key id (`nil`: imported at every open).
    public let keyCache: X25519.PrivateKeyCache?
    /// Where both roles keep the static-static DH per (sender key id, device key id), checked
    /// against both public keys at each use (`nil`: computed at every message).
    public let pairCache: HPKE.AuthPairCache?

    /// For sealing, as the sender `senderKeyID`.
    /// - Parameters:
    ///   - senderKey: the sender's static X25519 private key (a secret of the server store).
    ///   - senderKeyID: 1–64 of `A-Z a-z 0-9 _ -`.
    ///   - pairCache: where the static-static DH per registration is kept (default: a new
    ///     cache of `HPKE.AuthPairCache.defaultCapacity` pairs, living as long as this entry and
    ///     its copies); `nil` computes it at every seal.
    /// - Throws: `FormatError` `.invalidKeyID`.
    public init(senderKey: X25519.PrivateKey, senderKeyID: String, pairCache: HPKE.AuthPairCache? = HPKE.AuthPairCache()) throws {
        guard WireFormat.isValidKeyID(senderKeyID) else {
            throw FormatError(.invalidKeyID, "a sender key id is 1-64 characters of A-Z a-z 0-9 _ -, got \(WireFormat.describe(senderKeyID))")
        }
        self.senderKey = senderKey
        self.senderKeyID = senderKeyID
        pinnedSenders = []
        keyCache = nil
        self.pairCache = pairCache
    }

    /// For opening on an app that pinned `pinnedSenders` (empty: every auth-mode payload is
    /// refused with `.unknownSenderKey`, FORMAT.md §V.7 step 2). Several keys may be pinned at
    /// once (a sender key rotation); the first entry of a repeated id wins.
    /// - Parameters:
    ///   - pinnedSenders: the sender keys this app pinned (may be empty).
    ///   - keyCache: where imported device keys are kept between opens (shared with the
    ///     ``HPKEBaseEnvelope`` of the same registry), or `nil`.
    ///   - pairCache: where the static-static DH per (pinned sender key, device key) is kept
    ///     between opens, or `nil` (computed at every open).
    public init(pinnedSenders: [PinnedSenderKey], keyCache: X25519.PrivateKeyCache? = nil, pairCache: HPKE.AuthPairCache? = nil) {
        senderKey = nil
        senderKeyID = nil
        self.pinnedSenders = pinnedSenders
        self.keyCache = keyCache
        self.pairCache = pairCache
    }

    /// `HPKE-AUTH-X25519-A256GCM`.
    public var name: String { Self.algorithmName }
    /// `["sender_key_id"]`.
    public var headerFieldNames: [String] { [Self.senderKeyIDField] }
    /// 32 bytes: the X25519 public key (seal) or private key (open).
    public var keyByteCount: Int { X25519.publicKeyByteCount }
    /// 48 bytes: enc(32) and tag(16).
    public var minimumBoxByteCount: Int { HPKE.overheadByteCount }
    /// `32 + plaintextByteCount + 16`.
    public func boxByteCount(plaintextByteCount: Int) -> Int { HPKE.overheadByteCount + plaintextByteCount }

    /// `[senderKeyID]`.
    /// - Throws: `FormatError` `.invalidKey` when configured for opening (no sender private key).
    public func sealingHeaderValues(keyID: String, appID: String) throws -> [String] {
        guard let senderKeyID else { throw Self.noSenderKey() }
        return [senderKeyID]
    }

    /// The pinned key named `senderKeyID`, or `nil`.
    public func pinnedKey(_ senderKeyID: String) -> X25519.PublicKey? {
        pinnedSenders.first { $0.keyID == senderKeyID }?.publicKey
    }

    /// Box length (`.invalidEnc` below 32 bytes, `.truncatedBox` below 48), then
    /// `.unknownSenderKey` when `sender_key_id` is not pinned (FORMAT.md §V.3, §V.7 step 2).
    public func admit(boxByteCount: Int, headerValues: [String]) throws {
        try HPKEEnvelopeSupport.checkLength(boxByteCount)
        _ = try sender(headerValues)
    }

    private func sender(_ headerValues: [String]) throws -> X25519.PublicKey {
        guard let id = headerValues.first, let key = pinnedKey(id) else {
            throw FormatError(.unknownSenderKey, "\(Self.senderKeyIDField) \(WireFormat.describe(headerValues.first ?? "")) is not pinned for this app",
                              field: Self.senderKeyIDField)
        }
        return key
    }

    /// The HPKE `info` `pushseal:v2|HPKE-AUTH-X25519-A256GCM|<key_id>|<app_id>|<sender_key_id>`
    /// (FORMAT.md §V.3.2), in a temporary buffer valid during `body`.
    /// - Throws: `FormatError` `.missingField` when the context has no `sender_key_id` value.
    public func withBinding<R>(_ context: EnvelopeContext, _ body: (RawSpan) throws -> R) throws -> R {
        guard context.headerValues.count == 1, let sender = context.headerValues.first else {
            throw FormatError(.missingField, "\(Self.algorithmName) binds \(Self.senderKeyIDField)", field: Self.senderKeyIDField)
        }
        return try HPKEEnvelopeSupport.withInfo([HPKEEnvelopeSupport.version, Self.algorithmName, context.keyID, context.appID, sender], body)
    }

    /// Seals to the device public key `key` as the configured sender (`SealAuth`, RFC 9180
    /// §6.1), fresh ephemeral key.
    /// - Throws: `FormatError` `.invalidKey` (not 32 bytes, or no sender private key),
    ///   `.zeroSharedSecret` (a low-order public key); `CryptoError` `.invalidParameter`,
    ///   `.internalFailure`.
    public func seal(_ plaintext: RawSpan, key: SecretBytes, context: EnvelopeContext,
                     into box: inout MutableRawSpan) throws -> Int {
        guard let senderKey, let senderKeyID else { throw Self.noSenderKey() }
        guard let pairCache else {
            let recipient = try HPKEEnvelopeSupport.publicKey(key, algorithm: name)
            return try withBinding(context) { info in
                try HPKEEnvelopeSupport.mapped(context) { try HPKE.seal(plaintext, to: recipient, info: info, sender: senderKey, into: &box) }
            }
        }
        guard key.byteCount == X25519.publicKeyByteCount else { throw HPKEEnvelopeSupport.wrongKey(key, algorithm: name) }
        return try withBinding(context) { info in
            try HPKEEnvelopeSupport.mapped(context) {
                let pair = try pairCache.pair(sender: senderKey, senderKeyID: senderKeyID, recipientPublicKey: key, recipientKeyID: context.keyID)
                return try HPKE.seal(plaintext, for: pair, info: info, into: &box)
            }
        }
    }

    /// Opens with the device private key `key` and the pinned sender key named by
    /// `sender_key_id` (`OpenAuth`), after the checks of ``admit(boxByteCount:headerValues:)``.
    /// - Throws: `FormatError` `.invalidKey`, `.invalidEnc`, `.truncatedBox`, `.unknownSenderKey`,
    ///   `.zeroSharedSecret`, `.authenticationFailed`; `CryptoError` `.internalFailure`.
    public func open(_ box: [UInt8], key: SecretBytes, context: EnvelopeContext) throws -> [UInt8] {
        let recipient = try HPKEEnvelopeSupport.privateKey(key, keyID: context.keyID, cache: keyCache, algorithm: name)
        try HPKEEnvelopeSupport.checkLength(box.count)
        let sender = try sender(context.headerValues)
        return try withBinding(context) { info in
            try HPKEEnvelopeSupport.mapped(context) {
                guard let pairCache, let senderKeyID = context.headerValues.first else {
                    return try HPKE.open(box.span.bytes, with: recipient, info: info, sender: sender)
                }
                let pair = try pairCache.pair(recipient: recipient, recipientKeyID: context.keyID, sender: sender, senderKeyID: senderKeyID)
                return try HPKE.open(box.span.bytes, with: recipient, from: pair, info: info)
            }
        }
    }

    static func noSenderKey() -> FormatError {
        FormatError(.invalidKey, "\(algorithmName) is configured for opening: it has no sender private key to seal with")
    }
}
