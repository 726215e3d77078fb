#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif
import PushSealSystem

/// An emulated `UNNotificationAttachment`: a local media file shown with a notification.
///
/// Creation validates as iOS does (Apple, "UNNotificationAttachment"): the URL is a file URL
/// naming a regular file; its type is recognised — iOS decides by the file name extension (or a
/// type hint), so a `.tmp` or extensionless file is refused, and PushSeal also checks the
/// content's magic bytes and refuses a file whose content and name disagree; its size is
/// within the limit for its category (image 10 MiB, audio 5 MiB, movie 50 MiB). When the
/// content is handed back, iOS moves the file into its own store, and so does the emulated
/// host (``ExtensionHost`` with a ``SystemAttachmentStore``): the file at the original path is
/// gone afterwards. Without a store the host leaves it in place, in the downloader's
/// per-notification directory of the container (`Attachments/<uuid>/`), which ``MediaStore``
/// removes after its retention or to stay under its size cap.
public struct UNNotificationAttachment: Sendable, Hashable {
    /// The identifier given at creation (a fresh UUID string when an empty one was given).
    public let identifier: String
    /// The local file URL.
    public let url: URL
    /// The Uniform Type Identifier, e.g. `public.png`.
    public let type: String
    /// The media type recognised from the content.
    public let mediaType: MediaType
    /// The file's size in bytes at creation.
    public let byteCount: Int

    /// An attachment already validated, at the place the system moved its file to.
    init(identifier: String, movedURL: URL, type: String, mediaType: MediaType, byteCount: Int) {
        self.identifier = identifier
        self.url = movedURL
        self.type = type
        self.mediaType = mediaType
        self.byteCount = byteCount
    }

    /// Creates an attachment for the file at `url`, validating it like iOS.
    /// - Parameters:
    ///   - identifier: a unique identifier; empty means "make one up" (a UUID string).
    ///   - url: a `file:` URL of an existing regular file.
    ///   - typeHint: a Uniform Type Identifier standing in for the file name extension
    ///     (`UNNotificationAttachmentOptionsTypeHintKey`), or `nil`.
    /// - Throws: `ExtensionError` `.attachmentInvalidURL` (not a file URL, no such regular
    ///   file), `.attachmentUnrecognizedType` (extension or content names no supported type, or
    ///   they disagree), `.attachmentInvalidFileSize` (empty or over the limit).
    public init(identifier: String, url: URL, typeHint: String? = nil) throws {
        guard url.isFileURL else {
            throw ExtensionError(.attachmentInvalidURL, "attachment URL is not a file URL (scheme \(url.scheme ?? "none"))")
        }
        let path = url.path
        guard let status = try? PrivateFile.status(followingLinks: path), status.kind == .regular else {
            throw ExtensionError(.attachmentInvalidURL, "no regular file at the attachment URL")
        }
        let size = status.byteCount

        let named: MediaType?
        if let typeHint {
            named = MediaType.allCases.first { $0.uniformTypeIdentifier == typeHint }
            guard named != nil else {
                throw ExtensionError(.attachmentUnrecognizedType, "type hint \(typeHint) is not a supported media type")
            }
        } else {
            let ext = url.pathExtension
            named = MediaType(fileExtension: ext)
            guard named != nil else {
                throw ExtensionError(.attachmentUnrecognizedType,
                                     ext.isEmpty ? "file has no name extension and no type hint; iOS picks the type from the extension"
                                                 : "file extension .\(ext) names no supported media type")
            }
        }
        guard size > 0 else {
            throw ExtensionError(.attachmentInvalidFileSize, "attachment file is empty")
        }
        guard let handle = try? FileDescriptor.open(path, .readOnly) else {
            throw ExtensionError(.attachmentInvalidURL, "attachment file is not readable")
        }
        let header = (try? handle.read(upToCount: MediaType.sniffByteCount)) ?? []
        handle.close()
        guard let sniffed = MediaType.sniff(header) else {
            throw ExtensionError(.attachmentUnrecognizedType, "content matches no supported media type (magic bytes)")
        }
        if let named, named.category != sniffed.category || (named.category == .image && named != sniffed) {
            throw ExtensionError(.attachmentUnrecognizedType,
                                 "content is \(sniffed.rawValue) but the name or hint says \(named.rawValue)")
        }
        guard size <= sniffed.category.maxByteCount else {
            throw ExtensionError(.attachmentInvalidFileSize,
                                 "\(sniffed.category.rawValue) of \(size) bytes is over the limit of \(sniffed.category.maxByteCount) bytes")
        }
        self.identifier = identifier.isEmpty ? UUID().uuidString : identifier
        self.url = url
        self.type = sniffed.uniformTypeIdentifier
        self.mediaType = sniffed
        self.byteCount = size
    }
}
