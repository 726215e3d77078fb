public import PushSealCrypto
import PushSealSystem

/// Wire format version 2, base mode (FORMAT.md §V.2, §V.3): `enc_alg`
/// `HPKE-BASE-X25519-A256GCM`, HPKE (RFC 9180) `mode_base` with DHKEM(X25519, HKDF-SHA256),
/// HKDF-SHA256, AES-256-GCM, single-shot. Box enc(32) ‖ ciphertext ‖ tag(16), empty AAD, HPKE
/// `info` `pushseal:v2|HPKE-BASE-X25519-A256GCM|<key_id>|<app_id>` (§V.3.2). No header fields
/// (a `sender_key_id` in the payload is ignored).
///
/// Keys: sealing takes the device's 32-byte X25519 public key (`SealingKey.key`), opening the
/// device's 32-byte X25519 private key (what the `NotificationKeyProvider` returns for the
/// `key_id`). Configured for opening on an app that pinned sender keys
/// (``init(pinnedSenders:)`` with a non-empty list), it refuses every payload with
/// `FormatError` `.downgradeRefused` before any key lookup (§V.7 step 2).
public struct HPKEBaseEnvelope: EnvelopeAlgorithm {
    /// `HPKE-BASE-X25519-A256GCM`.
    public static let algorithmName = "HPKE-BASE-X25519-A256GCM"

    /// True when the app pinned at least one sender key: base mode is then refused.
    public let refusesBaseMode: Bool
    /// Where opening keeps imported device keys by key id (`nil`: imported at every open).
    public let keyCache: X25519.PrivateKeyCache?
    /// Where sealing keeps imported device public keys by key id (`nil`: imported at every seal).
    public let publicKeyCache: X25519.PublicKeyCache?

    /// For sealing, or for opening on an app that pinned no sender key (no key cache).
    /// - Parameter publicKeyCache: where sealing keeps imported registration keys by key id
    ///   (default: a new cache of `X25519.PublicKeyCache.defaultCapacity` keys); `nil` imports
    ///   the key at every seal.
    public init(publicKeyCache: X25519.PublicKeyCache? = X25519.PublicKeyCache()) {
        refusesBaseMode = false
        keyCache = nil
        self.publicKeyCache = publicKeyCache
    }

    /// For opening on an app whose pinned sender keys are `pinnedSenders`: refuses base mode
    /// (`.downgradeRefused`) when the list is not empty.
    /// - Parameters:
    ///   - pinnedSenders: the sender keys this app pinned (may be empty).
    ///   - keyCache: where imported device keys are kept between opens (shared with the
    ///     ``HPKEAuthEnvelope`` of the same registry), or `nil`.
    public init(pinnedSenders: [PinnedSenderKey], keyCache: X25519.PrivateKeyCache? = nil) {
        refusesBaseMode = !pinnedSenders.isEmpty
        self.keyCache = keyCache
        publicKeyCache = nil
    }

    /// `HPKE-BASE-X25519-A256GCM`.
    public var name: String { Self.algorithmName }
    /// 32 bytes: the X25519 public key (seal) or private key (open).
    public var keyByteCount: Int { X25519.publicKeyByteCount }
    /// 48 bytes: enc(32) and tag(16).
    public var minimumBoxByteCount: Int { HPKE.overheadByteCount }
    /// `32 + plaintextByteCount + 16`.
    public func boxByteCount(plaintextByteCount: Int) -> Int { HPKE.overheadByteCount + plaintextByteCount }

    /// Box length (`.invalidEnc` below 32 bytes, `.truncatedBox` below 48), then
    /// `.downgradeRefused` when the app pinned a sender key (FORMAT.md §V.3 step 7, §V.7 step 2).
    public func admit(boxByteCount: Int, headerValues: [String]) throws {
        try HPKEEnvelopeSupport.checkLength(boxByteCount)
        if refusesBaseMode {
            throw FormatError(.downgradeRefused, "a base-mode (\(Self.algorithmName)) payload for an app that pinned a sender key")
        }
    }

    /// The HPKE `info` `pushseal:v2|HPKE-BASE-X25519-A256GCM|<key_id>|<app_id>` (FORMAT.md
    /// §V.3.2), in a temporary buffer valid during `body`.
    public func withBinding<R>(_ context: EnvelopeContext, _ body: (RawSpan) throws -> R) throws -> R {
        try HPKEEnvelopeSupport.withInfo([HPKEEnvelopeSupport.version, Self.algorithmName, context.keyID, context.appID], body)
    }

    /// Seals to the device public key `key` (`SealBase`, RFC 9180 §6.1), fresh ephemeral key.
    /// - Throws: `FormatError` `.invalidKey` (not 32 bytes), `.zeroSharedSecret` (a low-order
    ///   public key); `CryptoError` `.invalidParameter` (box too small), `.internalFailure`.
    public func seal(_ plaintext: RawSpan, key: SecretBytes, context: EnvelopeContext,
                     into box: inout MutableRawSpan) throws -> Int {
        let recipient = try HPKEEnvelopeSupport.publicKey(key, keyID: context.keyID, cache: publicKeyCache, algorithm: name)
        return try withBinding(context) { info in
            try HPKEEnvelopeSupport.mapped(context) { try HPKE.seal(plaintext, to: recipient, info: info, into: &box) }
        }
    }

    /// Opens with the device private key `key` (`OpenBase`), after the checks of
    /// ``admit(boxByteCount:headerValues:)``.
    /// - Throws: `FormatError` `.invalidKey`, `.invalidEnc`, `.truncatedBox`, `.downgradeRefused`,
    ///   `.zeroSharedSecret`, `.authenticationFailed`; `CryptoError` `.internalFailure`.
    public func open(_ box: [UInt8], key: SecretBytes, context: EnvelopeContext) throws -> [UInt8] {
        let recipient = try HPKEEnvelopeSupport.privateKey(key, keyID: context.keyID, cache: keyCache, algorithm: name)
        try admit(boxByteCount: box.count, headerValues: context.headerValues)
        return try withBinding(context) { info in
            try HPKEEnvelopeSupport.mapped(context) { try HPKE.open(box.span.bytes, with: recipient, info: info) }
        }
    }
}

/// What the two HPKE entries share: the `info` writer, key imports, error mapping.
enum HPKEEnvelopeSupport {
    /// The `info` prefix of version 2.
    static let version = "pushseal:v2"

    /// `parts` joined by `|`, UTF-8, in a temporary buffer valid during `body`.
    static func withInfo<R>(_ parts: [String], _ body: (RawSpan) throws -> R) rethrows -> R {
        try TemporaryBytes.joining(parts, separator: WireFormat.aadSeparator, body)
    }

    /// `.invalidEnc` below 32 bytes, `.truncatedBox` below 48 (FORMAT.md §V.3 step 7).
    static func checkLength(_ count: Int) throws {
        guard count >= HPKE.encByteCount else {
            throw FormatError(.invalidEnc, "\(WireFormat.encryptedDataField) decodes to \(count) bytes: shorter than the 32-byte enc",
                              field: WireFormat.encryptedDataField)
        }
        guard count >= HPKE.overheadByteCount else {
            throw FormatError(.truncatedBox, "\(WireFormat.encryptedDataField) decodes to \(count) bytes; a version 2 box is at least 48 (enc, tag)",
                              field: WireFormat.encryptedDataField)
        }
    }

    static func wrongKey(_ key: SecretBytes, algorithm: String) -> FormatError {
        FormatError(.invalidKey, "an \(algorithm) key is \(X25519.publicKeyByteCount) bytes, got \(key.byteCount)")
    }

    /// The device public key from a sealing key's bytes: from `cache` when it holds the same
    /// bytes for `keyID`, else imported (and kept there when there is a cache).
    static func publicKey(_ key: SecretBytes, keyID: String = "", cache: X25519.PublicKeyCache? = nil,
                          algorithm: String) throws -> X25519.PublicKey {
        guard key.byteCount == X25519.publicKeyByteCount else { throw wrongKey(key, algorithm: algorithm) }
        guard let cache else { return try X25519.PublicKey.imported(from: key) }
        return try cache.publicKey(for: keyID, rawRepresentation: key)
    }

    /// The device private key from an opening key's bytes: from `cache` when it holds the same
    /// bytes for `keyID`, else imported (and kept there).
    static func privateKey(_ key: SecretBytes, keyID: String, cache: X25519.PrivateKeyCache?, algorithm: String) throws -> X25519.PrivateKey {
        guard key.byteCount == X25519.privateKeyByteCount else { throw wrongKey(key, algorithm: algorithm) }
        guard let cache else { return try X25519.PrivateKey(rawRepresentation: key) }
        return try cache.privateKey(for: keyID, rawRepresentation: key)
    }

    /// Runs an HPKE call, turning the core's codes into the wire format's (FORMAT.md §V.8).
    static func mapped<R>(_ context: EnvelopeContext, _ body: () throws -> R) throws -> R {
        do {
            return try body()
        } catch let e as CryptoError {
            switch e.code {
            case .invalidPublicKey:
                throw FormatError(.invalidEnc, "the box is shorter than the 32-byte enc", field: WireFormat.encryptedDataField)
            case .truncatedBox:
                throw FormatError(.truncatedBox, "the box has fewer than 16 bytes after enc", field: WireFormat.encryptedDataField)
            case .zeroSharedSecret:
                throw FormatError(.zeroSharedSecret, "X25519 gave the all-zero value: enc or the sender key is a low-order point (RFC 9180 §7.1.4)")
            case .authenticationFailed:
                throw FormatError(.authenticationFailed, "the box did not authenticate for key id \(WireFormat.describe(context.keyID)) and app id \(WireFormat.describe(context.appID)) (wrong device key, key id, app id or sender key, or modified data)")
            default:
                throw e
            }
        }
    }
}
