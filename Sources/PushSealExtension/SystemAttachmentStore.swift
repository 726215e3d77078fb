#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif
import PushSealCrypto
import PushSealSystem

/// The system's own attachment store, as ``ExtensionHost`` emulates it: when an extension hands
/// its content back, iOS moves every validated attachment file into a store of its own
/// (Apple, "UNNotificationAttachment": "Once validated, attached files are moved into the
/// attachment data store"), so the file at the original path is gone afterwards — an extension
/// that keeps a path and reuses it for a later notification finds nothing there.
///
/// Layout: `<directory>/<notification>/<file name>`, `<notification>` being the first 32 hex
/// digits of the SHA-256 of the request's identifier (any identifier is a safe directory name
/// that way). One directory per notification: delivering a notification again (the same
/// identifier) replaces its files, so a notification opened several times keeps one copy of
/// its media (security review F9). Directories and files are 0700 and 0600.
///
/// The move can fail on iOS (a full disk, a file the system cannot take); ``failsToStore``
/// makes every move fail, to try that path: the host then delivers the content without its
/// attachments (``NotificationOutcome/decryptedWithoutMedia``, reason
/// ``FallbackReason/mediaStoreFailed`` (`media:storeFailed`)), once, and removes the files it could not take.
public struct SystemAttachmentStore: Sendable {
    /// The store's directory (created 0700 on first use).
    public let directory: URL
    /// True: every move fails (an emulation switch standing for iOS failing to store a file).
    public let failsToStore: Bool

    /// Creates a store (nothing is touched until a notification is delivered).
    /// - Parameters:
    ///   - directory: where the system keeps attachments; created 0700 when missing.
    ///   - failsToStore: make every move fail (default false).
    public init(directory: URL, failsToStore: Bool = false) {
        self.directory = directory
        self.failsToStore = failsToStore
    }

    /// The directory of one notification's attachments: `<directory>/<32 hex digits>`.
    /// - Parameter identifier: the notification request's identifier.
    public func notificationDirectory(for identifier: String) -> URL {
        let digest = (try? SHA256Hasher.hash(Array(identifier.utf8))) ?? []
        let name = digest.prefix(16).map { byte in
            let hex = Array("0123456789abcdef")
            return String([hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]])
        }.joined()
        return directory.appendingPathComponent(name.isEmpty ? "notification" : name, isDirectory: true)
    }

    /// Moves every attachment of a delivered notification into the store.
    /// - Parameters:
    ///   - attachments: the delivered content's attachments (validated when made).
    ///   - identifier: the notification request's identifier.
    /// - Returns: the attachments at their new places.
    /// - Throws: `ExtensionError` `.mediaTransferFailed` when a file cannot be moved (or
    ///   ``failsToStore``); the files not moved are then removed, and the store keeps nothing
    ///   of this notification.
    func store(_ attachments: [UNNotificationAttachment], identifier: String) throws -> [UNNotificationAttachment] {
        let target = notificationDirectory(for: identifier)
        do {
            guard !failsToStore else {
                throw ExtensionError(.mediaTransferFailed, "the system could not move the attachment into its store (emulated failure)")
            }
            try? FileManager.default.removeItem(at: target)  // one copy per notification
            guard (try? PrivateFile.makeDirectory(directory.path)) != nil, (try? PrivateFile.makeDirectory(target.path)) != nil else {
                throw ExtensionError(.mediaTransferFailed, "cannot create the system's attachment store")
            }
            var moved: [UNNotificationAttachment] = []
            for attachment in attachments {
                let destination = target.appendingPathComponent(attachment.url.lastPathComponent)
                guard (try? FileManager.default.moveItem(at: attachment.url, to: destination)) != nil else {
                    throw ExtensionError(.mediaTransferFailed, "cannot move the attachment file into the system's store")
                }
                Self.removeEmptyParent(of: attachment.url)
                moved.append(attachment.moved(to: destination))
            }
            return moved
        } catch {
            try? FileManager.default.removeItem(at: target)
            for attachment in attachments {
                try? FileManager.default.removeItem(at: attachment.url)
                Self.removeEmptyParent(of: attachment.url)
            }
            throw error
        }
    }

    /// Removes the file's directory when it is a notification's directory of a container's
    /// media store (`…/Attachments/<uuid>/`) and is now empty.
    private static func removeEmptyParent(of file: URL) {
        let parent = file.deletingLastPathComponent()
        guard parent.deletingLastPathComponent().lastPathComponent == MediaStore.attachmentsDirectoryName else { return }
        if (try? FileManager.default.contentsOfDirectory(atPath: parent.path))?.isEmpty == true {
            try? FileManager.default.removeItem(at: parent)
        }
    }
}

extension UNNotificationAttachment {
    /// The same attachment at another place (after the system moved its file).
    func moved(to url: URL) -> UNNotificationAttachment {
        UNNotificationAttachment(identifier: identifier, movedURL: url, type: type, mediaType: mediaType, byteCount: byteCount)
    }
}
