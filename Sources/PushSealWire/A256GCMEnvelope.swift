public import PushSealCrypto
import PushSealSystem

/// Version 1's algorithm (FORMAT.md §3): `enc_alg` `A256GCM`, AES-256-GCM with a fresh
/// random 12-byte nonce, box nonce(12) ‖ ciphertext ‖ tag(16), 32-byte key on both sides,
/// AAD `pushseal:v1|A256GCM|<key_id>|<app_id>`. The one production entry of
/// ``EnvelopeRegistry/standard``.
public struct A256GCMEnvelope: EnvelopeAlgorithm {
    /// Creates the (stateless) algorithm.
    public init() {}

    /// `A256GCM`.
    public var name: String { WireFormat.algorithm }
    /// 32 bytes.
    public var keyByteCount: Int { AES256GCM.keyByteCount }
    /// 28 bytes: nonce and tag.
    public var minimumBoxByteCount: Int { AES256GCM.minimumCombinedByteCount }
    /// `12 + plaintextByteCount + 16`.
    public func boxByteCount(plaintextByteCount: Int) -> Int { AES256GCM.minimumCombinedByteCount + plaintextByteCount }

    /// The AAD `pushseal:v1|<enc_alg>|<key_id>|<app_id>` as an array (FORMAT.md §3.2).
    /// - Parameters:
    ///   - algorithm: the `enc_alg` value as it appears in the payload.
    ///   - keyID: the `key_id` value as it appears in the payload.
    ///   - appID: the app's bundle identifier.
    /// - Returns: the AAD bytes, no terminator.
    public static func aad(algorithm: String, keyID: String, appID: String) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(WireFormat.version.utf8.count + algorithm.utf8.count + keyID.utf8.count + appID.utf8.count + 3)
        for part in [WireFormat.version, algorithm, keyID] {
            out.append(contentsOf: part.utf8)
            out.append(WireFormat.aadSeparator)
        }
        out.append(contentsOf: appID.utf8)
        return out
    }

    /// The AAD `pushseal:v1|A256GCM|<key_id>|<app_id>`, written on the stack (≤ 340 bytes for
    /// valid ids) and passed to `body`.
    public func withBinding<R>(_ context: EnvelopeContext, _ body: (RawSpan) throws -> R) throws -> R {
        try Self.withAAD(keyID: context.keyID, appID: context.appID, body)
    }

    /// The AAD from its constant prefix (``aadPrefix``), `keyID`, `|` and `appID`, in a
    /// temporary buffer valid during `body`.
    static func withAAD<R>(keyID: String, appID: String, _ body: (RawSpan) throws -> R) rethrows -> R {
        try TemporaryBytes.joining(aadPrefix, keyID, WireFormat.aadSeparator, appID, body)
    }

    /// `pushseal:v1|A256GCM|`: ``WireFormat/version``, ``WireFormat/algorithm`` and their
    /// separators as one literal (a test holds it to those constants).
    static var aadPrefix: StaticString { "pushseal:v1|A256GCM|" }

    /// Seals with a fresh random nonce.
    /// - Throws: `FormatError` `.invalidKey` (not 32 bytes); `CryptoError` `.internalFailure`,
    ///   `.invalidParameter` (box too small).
    public func seal(_ plaintext: RawSpan, key: SecretBytes, context: EnvelopeContext,
                     into box: inout MutableRawSpan) throws -> Int {
        guard key.byteCount == AES256GCM.keyByteCount else { throw Self.wrongKey(key) }
        return try Self.withAAD(keyID: context.keyID, appID: context.appID) { aad in
            try AES256GCM.seal(plaintext, with: key, authenticating: aad, into: &box)
        }
    }

    /// Opens nonce(12) ‖ ciphertext ‖ tag(16).
    /// - Throws: `FormatError` `.authenticationFailed`, `.invalidKey`, `.truncatedBox`.
    public func open(_ box: [UInt8], key: SecretBytes, context: EnvelopeContext) throws -> [UInt8] {
        guard key.byteCount == AES256GCM.keyByteCount else { throw Self.wrongKey(key) }
        guard box.count >= minimumBoxByteCount else {
            throw FormatError(.truncatedBox, "an A256GCM box is at least \(minimumBoxByteCount) bytes, got \(box.count)", field: WireFormat.encryptedDataField)
        }
        do {
            return try Self.withAAD(keyID: context.keyID, appID: context.appID) { aad in
                try AES256GCM.open(combined: box.span.bytes, with: key, authenticating: aad)
            }
        } catch let error as CryptoError where error.code == .authenticationFailed {
            throw FormatError(.authenticationFailed, "the box did not authenticate for key id \(WireFormat.describe(context.keyID)) and app id \(WireFormat.describe(context.appID)) (wrong key, wrong key id or app id, or modified data)")
        }
    }

    static func wrongKey(_ key: SecretBytes) -> FormatError {
        FormatError(.invalidKey, "an A256GCM key is \(AES256GCM.keyByteCount) bytes, got \(key.byteCount)")
    }
}
