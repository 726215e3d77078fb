import PushSealCrypto
public import PushSealWire

/// Encrypts a media file for a sealed notification, so the server hosting it (a CDN) never
/// sees the image either.
///
/// The blob is AES-256-GCM under a fresh random 32-byte key per file, laid out as CryptoKit's
/// combined box: nonce(12) ‖ ciphertext ‖ tag(16), with empty AAD. The descriptor that goes
/// inside the sealed notification's `media` carries the URL, the MIME type (sniffed from
/// magic bytes), the lower-case hex SHA-256 of the blob (what the device downloads) and the
/// key in standard base64. The key appears nowhere else.
public enum MediaSealer {
    /// The largest file accepted, in bytes (64 MiB; iOS attachments are at most 50 MB for video).
    public static let maxFileByteCount = 64 << 20

    /// A sealed media file.
    public struct Sealed: Sendable {
        /// The blob to upload: nonce(12) ‖ ciphertext ‖ tag(16).
        public let blob: [UInt8]
        /// The descriptor for the notification's `media` member.
        public let media: MediaDescriptor
    }

    /// Seals `file` under a fresh key.
    /// - Parameters:
    ///   - file: the media file's bytes (1 byte to ``maxFileByteCount``).
    ///   - url: where the blob will be served: empty (fill it in before sealing) or an absolute
    ///     `https://` or `http://` URL (`PushNotification.isValidMediaURL(_:)`).
    ///   - type: the MIME type (`PushNotification.isValidMediaType(_:)`, e.g.
    ///     `image/jpeg`); `nil` sniffs it from the magic bytes (``sniffType(_:)``).
    /// - Returns: the blob and its descriptor.
    /// - Throws: `SenderError` `.invalidMedia` (empty or too large, or a `url` or `type` the
    ///   sealer would refuse), `.sealFailed`.
    public static func seal(_ file: [UInt8], url: String, type: String? = nil) throws -> Sealed {
        guard url.isEmpty || PushNotification.isValidMediaURL(url) else {
            throw SenderError(.invalidMedia, "the media url must be an absolute https:// or http:// URL (or empty, to fill in later), got \(PushNotification.excerpt(url))")
        }
        if let type, !PushNotification.isValidMediaType(type) {
            throw SenderError(.invalidMedia, "the media type must be a MIME type type/subtype of token characters such as image/jpeg, got \(PushNotification.excerpt(type))")
        }
        guard !file.isEmpty else { throw SenderError(.invalidMedia, "the media file is empty") }
        guard file.count <= maxFileByteCount else {
            throw SenderError(.invalidMedia, "the media file is \(file.count) bytes, at most \(maxFileByteCount) are accepted")
        }
        let key = SecretBytes(randomByteCount: AES256GCM.keyByteCount)
        let box: SealedBox
        let digest: [UInt8]
        do {
            box = try AES256GCM.seal(file, with: key)
            digest = try SHA256Hasher.hash(box.combined)
        } catch let e as CryptoError {
            throw SenderError(.sealFailed, "could not seal the media file: \(e.code)")
        }
        let media = MediaDescriptor(url: url, type: type ?? sniffType(file), sha256: digest, key: key)
        return Sealed(blob: box.combined, media: media)
    }

    /// The MIME type from a file's magic bytes: JPEG, PNG, GIF, WebP, HEIC, MP4, QuickTime,
    /// M4A, MP3, WAV, AIFF; `application/octet-stream` otherwise.
    public static func sniffType(_ b: [UInt8]) -> String {
        func at(_ offset: Int, _ s: String) -> Bool {
            let u = Array(s.utf8)
            return b.count >= offset + u.count && Array(b[offset..<(offset + u.count)]) == u
        }
        if b.count >= 3, b[0] == 0xFF, b[1] == 0xD8, b[2] == 0xFF { return "image/jpeg" }
        if b.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return "image/png" }
        if at(0, "GIF87a") || at(0, "GIF89a") { return "image/gif" }
        if at(0, "RIFF") && at(8, "WEBP") { return "image/webp" }
        if at(0, "RIFF") && at(8, "WAVE") { return "audio/wav" }
        if at(0, "FORM") && (at(8, "AIFF") || at(8, "AIFC")) { return "audio/aiff" }
        if at(4, "ftyp") {
            if at(8, "heic") || at(8, "heix") || at(8, "mif1") || at(8, "msf1") { return "image/heic" }
            if at(8, "qt  ") { return "video/quicktime" }
            if at(8, "M4A ") { return "audio/mp4" }
            return "video/mp4"
        }
        if at(0, "ID3") || (b.count >= 2 && b[0] == 0xFF && (b[1] & 0xE0) == 0xE0) { return "audio/mpeg" }
        return "application/octet-stream"
    }
}
