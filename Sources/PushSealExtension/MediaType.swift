/// A media type an attachment may have, as iOS recognises them, identified by content.
///
/// Source: Apple, "UNNotificationAttachment" — supported file types and maximum sizes
/// (audio 5 MB: AIFF, WAV, MP3, MPEG-4 audio; image 10 MB: JPEG, GIF, PNG; movie 50 MB:
/// MPEG, MPEG-2, MPEG-4, AVI). PushSeal reads "MB" as MiB (1,048,576 bytes).
public enum MediaType: String, Sendable, CaseIterable {
    /// JPEG (`FF D8 FF`).
    case jpeg
    /// PNG (`89 50 4E 47 0D 0A 1A 0A`).
    case png
    /// GIF (`GIF87a` / `GIF89a`).
    case gif
    /// MPEG-4 video: an ISO base media file (`ftyp` at offset 4) with a non-audio brand.
    case mpeg4Video
    /// MPEG-1/2 video: program stream pack (`00 00 01 BA`) or sequence header (`00 00 01 B3`).
    case mpegVideo
    /// AVI (`RIFF` … `AVI `).
    case avi
    /// MP3: an `ID3` tag or an MPEG-1/2 layer III frame sync.
    case mp3
    /// AAC: MPEG-4 audio in an ISO file (`ftyp` brand `M4A `, `M4B `, `M4P `) or an ADTS stream.
    case aac
    /// AIFF / AIFF-C (`FORM` … `AIFF` / `AIFC`).
    case aiff
    /// WAV (`RIFF` … `WAVE`).
    case wav

    /// The broad kind of a media type, which decides its size limit.
    public enum Category: String, Sendable {
        /// Still or animated image: at most 10 MiB.
        case image
        /// Sound: at most 5 MiB.
        case audio
        /// Video: at most 50 MiB.
        case movie

        /// The largest attachment of this category iOS accepts, in bytes.
        public var maxByteCount: Int {
            switch self {
            case .image: 10 * 1_048_576
            case .audio: 5 * 1_048_576
            case .movie: 50 * 1_048_576
            }
        }
    }

    /// The largest limit of any category (50 MiB), used while a download's type is unknown.
    public static let largestMaxByteCount = Category.movie.maxByteCount

    /// How many leading bytes ``sniff(_:)`` looks at (12).
    public static let sniffByteCount = 12

    /// Image, audio or movie.
    public var category: Category {
        switch self {
        case .jpeg, .png, .gif: .image
        case .mpeg4Video, .mpegVideo, .avi: .movie
        case .mp3, .aac, .aiff, .wav: .audio
        }
    }

    /// The Uniform Type Identifier iOS reports as the attachment's `type`.
    public var uniformTypeIdentifier: String {
        switch self {
        case .jpeg: "public.jpeg"
        case .png: "public.png"
        case .gif: "com.compuserve.gif"
        case .mpeg4Video: "public.mpeg-4"
        case .mpegVideo: "public.mpeg"
        case .avi: "public.avi"
        case .mp3: "public.mp3"
        case .aac: "public.mpeg-4-audio"
        case .aiff: "public.aiff-audio"
        case .wav: "com.microsoft.waveform-audio"
        }
    }

    /// The file name extension PushSeal gives a downloaded file of this type (no dot).
    public var fileExtension: String {
        switch self {
        case .jpeg: "jpg"
        case .png: "png"
        case .gif: "gif"
        case .mpeg4Video: "mp4"
        case .mpegVideo: "mpg"
        case .avi: "avi"
        case .mp3: "mp3"
        case .aac: "m4a"
        case .aiff: "aiff"
        case .wav: "wav"
        }
    }

    /// The type a file name extension names (case-insensitive, no dot), or `nil` (e.g. `tmp`).
    public init?(fileExtension ext: String) {
        switch ext.lowercased() {
        case "jpg", "jpeg", "jpe": self = .jpeg
        case "png": self = .png
        case "gif": self = .gif
        case "mp4", "m4v": self = .mpeg4Video
        case "mpg", "mpeg", "mpe", "m2v": self = .mpegVideo
        case "avi": self = .avi
        case "mp3": self = .mp3
        case "m4a", "aac": self = .aac
        case "aif", "aiff", "aifc": self = .aiff
        case "wav", "wave": self = .wav
        default: return nil
        }
    }

    /// The type a MIME type names (parameters after `;` ignored, case-insensitive), or `nil`.
    /// - Parameter mimeType: e.g. `image/png`, `audio/mpeg; charset=binary`.
    public init?(mimeType: String) {
        let essence = mimeType.split(separator: ";", maxSplits: 1).first.map(String.init) ?? ""
        switch essence.trimmingWhitespace().lowercased() {
        case "image/jpeg", "image/jpg", "image/pjpeg": self = .jpeg
        case "image/png": self = .png
        case "image/gif": self = .gif
        case "video/mp4", "video/x-m4v": self = .mpeg4Video
        case "video/mpeg", "video/mpg": self = .mpegVideo
        case "video/avi", "video/x-msvideo", "video/msvideo": self = .avi
        case "audio/mpeg", "audio/mp3", "audio/mpeg3": self = .mp3
        case "audio/aac", "audio/mp4", "audio/x-m4a", "audio/m4a", "audio/aacp": self = .aac
        case "audio/aiff", "audio/x-aiff": self = .aiff
        case "audio/wav", "audio/x-wav", "audio/wave", "audio/vnd.wave": self = .wav
        default: return nil
        }
    }

    /// Recognises a media type from a file's first bytes (magic numbers), or `nil`.
    ///
    /// - Parameter header: the file's first bytes; ``sniffByteCount`` (12) suffice, fewer may
    ///   give `nil` for types whose signature is longer.
    /// - Returns: the type, or `nil` for anything else (HTML error pages, text, empty files).
    public static func sniff<Bytes: Collection>(_ header: Bytes) -> MediaType? where Bytes.Element == UInt8 {
        let b = Array(header.prefix(sniffByteCount))
        func at(_ offset: Int, _ ascii: String) -> Bool {
            let s = Array(ascii.utf8)
            return b.count >= offset + s.count && Array(b[offset..<(offset + s.count)]) == s
        }
        if b.count >= 3, b[0] == 0xFF, b[1] == 0xD8, b[2] == 0xFF { return .jpeg }
        if b.count >= 8, b[0..<8] == [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] { return .png }
        if at(0, "GIF87a") || at(0, "GIF89a") { return .gif }
        if at(4, "ftyp") {
            if at(8, "M4A ") || at(8, "M4B ") || at(8, "M4P ") { return .aac }
            return b.count >= 12 ? .mpeg4Video : nil
        }
        if b.count >= 4, b[0] == 0, b[1] == 0, b[2] == 1, b[3] == 0xBA || b[3] == 0xB3 { return .mpegVideo }
        if at(0, "RIFF") {
            if at(8, "AVI ") { return .avi }
            if at(8, "WAVE") { return .wav }
            return nil
        }
        if at(0, "FORM"), at(8, "AIFF") || at(8, "AIFC") { return .aiff }
        if at(0, "ID3") { return .mp3 }
        if b.count >= 2, b[0] == 0xFF, b[1] & 0xE0 == 0xE0 {
            let layer = (b[1] >> 1) & 0x03
            let version = (b[1] >> 3) & 0x03
            if layer == 0b00, b[1] & 0xF0 == 0xF0 { return .aac }          // ADTS: 12-bit sync, layer 0
            if layer == 0b01, version != 0b01 { return .mp3 }                 // layer III, valid version
        }
        return nil
    }
}

extension String {
    /// The string without leading and trailing spaces and tabs.
    func trimmingWhitespace() -> String {
        var s = Substring(self)
        while let f = s.first, f == " " || f == "\t" { s = s.dropFirst() }
        while let l = s.last, l == " " || l == "\t" { s = s.dropLast() }
        return String(s)
    }
}
