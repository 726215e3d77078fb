/// An AES-256-GCM sealed box: nonce(12) ‖ ciphertext ‖ tag(16), exactly CryptoKit's
/// `AES.GCM.SealedBox.combined` layout, held in one array.
public struct SealedBox: Sendable, Hashable {
    /// nonce(12) ‖ ciphertext ‖ tag(16).
    public let combined: [UInt8]

    /// Wraps a combined box read from the wire.
    /// - Parameter combined: at least 28 bytes (an empty plaintext's box).
    /// - Throws: `CryptoError` `.truncatedBox` when shorter than nonce plus tag.
    public init(combined: [UInt8]) throws {
        guard combined.count >= AES256GCM.minimumCombinedByteCount else {
            throw CryptoError(.truncatedBox, "a sealed box is at least \(AES256GCM.minimumCombinedByteCount) bytes (12-byte nonce, 16-byte tag), got \(combined.count)")
        }
        self.combined = combined
    }

    /// Builds a box from parts.
    /// - Throws: `CryptoError` `.invalidNonceSize` unless `nonce` is 12 bytes,
    ///   `.invalidTagSize` unless `tag` is 16 bytes.
    public init(nonce: [UInt8], ciphertext: [UInt8], tag: [UInt8]) throws {
        guard nonce.count == AES256GCM.nonceByteCount else {
            throw CryptoError(.invalidNonceSize, "an AES-256-GCM nonce is \(AES256GCM.nonceByteCount) bytes, got \(nonce.count)")
        }
        guard tag.count == AES256GCM.tagByteCount else {
            throw CryptoError(.invalidTagSize, "an AES-256-GCM tag is \(AES256GCM.tagByteCount) bytes, got \(tag.count)")
        }
        combined = nonce + ciphertext + tag
    }

    init(uncheckedCombined: [UInt8]) { combined = uncheckedCombined }

    /// The 12-byte nonce.
    public var nonce: ArraySlice<UInt8> { combined[0..<AES256GCM.nonceByteCount] }
    /// The ciphertext, as long as the plaintext.
    public var ciphertext: ArraySlice<UInt8> { combined[AES256GCM.nonceByteCount..<(combined.count - AES256GCM.tagByteCount)] }
    /// The 16-byte tag.
    public var tag: ArraySlice<UInt8> { combined[(combined.count - AES256GCM.tagByteCount)...] }
}
