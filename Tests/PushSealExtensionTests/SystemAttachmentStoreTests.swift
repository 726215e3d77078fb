import PushSealSystem
import PushSealJSON
import Foundation
import Testing
@testable import PushSealExtension

/// An extension that writes its media once to a fixed path and reuses that path for every later
/// notification (a "cached path", the bug the system's store exposes on a phone).
private final class CachedPathExtension: UNNotificationServiceExtension, @unchecked Sendable {
    let path: URL
    init(path: URL) { self.path = path }
    override func didReceive(_ request: UNNotificationRequest, withContentHandler contentHandler: ContentHandler) {
        var content = request.content.mutableCopy()
        content.title = "decrypted"
        if !FileManager.default.fileExists(atPath: path.path), request.identifier == "first" {
            try? Data(sampleBytes(.png)).write(to: path)
        }
        if let attachment = try? UNNotificationAttachment(identifier: "media", url: path) {
            content.attachments = [attachment]
        }
        contentHandler(content)
    }
}

private let alert: JSONValue = .object(["aps": .object(["alert": .object(["title": "New", "body": "Open the app"]), "mutable-content": .integer(1)])])

@Suite struct SystemAttachmentStoreTests {
    /// iOS moves the attachment into its own store when the content is handed back: the file at
    /// the original path is gone, so an extension reusing that path for a second notification
    /// gets no attachment (UNNotificationAttachment refuses the missing file), as on a phone.
    @Test func theHostMovesTheAttachmentAndACachedPathFailsTheSecondTime() throws {
        let dir = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let cached = dir.appendingPathComponent("cached media ü.png")
        let store = SystemAttachmentStore(directory: dir.appendingPathComponent("system store"))
        let host = ExtensionHost(attachmentStore: store) { _ in CachedPathExtension(path: cached) }

        let first = host.run(UNNotificationRequest(identifier: "first", apnsPayload: alert))
        let moved = try #require(first.content?.attachments.first)
        #expect(!FileManager.default.fileExists(atPath: cached.path))
        #expect(moved.url.path.hasPrefix(store.notificationDirectory(for: "first").path))
        #expect(FileManager.default.fileExists(atPath: moved.url.path))

        let second = host.run(UNNotificationRequest(identifier: "second", apnsPayload: alert))
        #expect(second.content?.title == "decrypted")
        #expect(second.content?.attachments.isEmpty == true)
    }

    /// Delivering the same notification again replaces its copy in the store (F9: one per notification).
    @Test func theSameNotificationKeepsOneCopy() throws {
        let dir = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let store = SystemAttachmentStore(directory: dir.appendingPathComponent("store"))
        for round in 0..<3 {
            let file = dir.appendingPathComponent("m\(round).png")
            try Data(sampleBytes(.png)).write(to: file)
            let attachment = try UNNotificationAttachment(identifier: "", url: file)
            _ = try store.store([attachment], identifier: "same")
        }
        let kept = try FileManager.default.contentsOfDirectory(atPath: store.notificationDirectory(for: "same").path)
        #expect(kept == ["m2.png"])
        #expect(try FileManager.default.contentsOfDirectory(atPath: store.directory.path).count == 1)
    }

    /// A store that fails: the content without its attachment, decrypted without media
    /// (`media:storeFailed`), delivered once; the file the system could not take is removed.
    @Test func aFailingStoreDeliversWithoutTheAttachmentOnce() throws {
        let dir = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("media.png")
        let store = SystemAttachmentStore(directory: dir.appendingPathComponent("store"), failsToStore: true)
        let runs = Locked(0)
        let host = ExtensionHost(attachmentStore: store) { _ in
            runs.withLock { $0 += 1 }
            return CachedPathExtension(path: file)
        }
        let result = host.run(UNNotificationRequest(identifier: "first", apnsPayload: alert))
        #expect(result.content?.title == "decrypted")
        #expect(result.content?.attachments.isEmpty == true)
        #expect(result.log.filter { $0.contains("event=attachmentStoreFailed") }.count == 1)
        #expect(runs.withLock { $0 } == 1)
        #expect(!FileManager.default.fileExists(atPath: file.path))
        #expect(!FileManager.default.fileExists(atPath: store.notificationDirectory(for: "first").path))
    }

    /// The decrypting extension's outcome becomes decryptedWithoutMedia / media:storeFailed.
    @Test func aDecryptedOutcomeBecomesDecryptedWithoutMedia() throws {
        let dir = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("media.png")
        try Data(sampleBytes(.png)).write(to: file)
        let attachment = try UNNotificationAttachment(identifier: "media", url: file)
        var content = UNNotificationContent().mutableCopy()
        content.body = "text"
        content.attachments = [attachment]
        let delivered = UNNotificationContent(content)
        let host = ExtensionHost(attachmentStore: SystemAttachmentStore(directory: dir.appendingPathComponent("s"), failsToStore: true)) { _ in
            DeliveringExtension(content: delivered)
        }
        let result = host.run(UNNotificationRequest(identifier: "n", apnsPayload: alert))
        #expect(result.outcome == .decryptedWithoutMedia)
        #expect(result.reason == FallbackReason.mediaStoreFailed)
        #expect(result.content?.body == "text")
    }
}

/// Delivers fixed content as decrypted with media.
private final class DeliveringExtension: UNNotificationServiceExtension, @unchecked Sendable {
    let content: UNNotificationContent
    init(content: UNNotificationContent) { self.content = content }
    override func didReceive(_ request: UNNotificationRequest, withContentHandler contentHandler: ContentHandler) {
        contentHandler.deliver(content, outcome: .decrypted, reason: FallbackReason.mediaAttached, detail: "decrypted; media attached")
    }
}
