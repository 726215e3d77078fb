import PushSealTestSupport
import Foundation
import Testing

/// push-open's attachments as UserNotifications handles them (issue 28): the host moves the
/// attachment into the system's store when the content is handed back, one copy per
/// notification (security review F9), and a failed move shows the text without it, once.
@Suite(.serialized)
struct PushOpenAttachmentStoreCLITests {
    /// Every regular file under the device directory whose name is a media file's (the media
    /// the extension or the system keeps), relative to `dev/`.
    static func mediaFiles(in dir: URL) -> [String] {
        let root = dir.appendingPathComponent("dev")
        let names = FileManager.default.enumerator(atPath: root.path)?.allObjects.compactMap { $0 as? String } ?? []
        return names.filter { name in
            let last = (name as NSString).lastPathComponent
            return last.hasSuffix(".jpg") || last.hasSuffix(".download") || last.hasSuffix(".opening") || last.hasSuffix(".png")
        }.sorted()
    }

    /// F9: the same notification opened three times leaves one media file, in the system's
    /// store (not in the App Group container); on 0031154 there were three in the container.
    @Test func aNotificationOpenedThreeTimesKeepsOneMediaFile() throws {
        let server = try #require(MediaServer.shared, "python3 is needed to run the local media server")
        let dir = try PushOpenCLITests.setUp()
        defer { try? FileManager.default.removeItem(at: dir) }
        let payload = try PushOpenMediaCLITests.mediaPayload(port: server.port, in: dir)
        var last = ""
        for _ in 0..<3 {
            let (r, json) = try PushOpenMediaCLITests.open(PushOpenMediaCLITests.pushOpen, payload, in: dir)
            try PushOpenMediaCLITests.expectAttached(r, json)
            last = try #require((json["attachments"] as? [[String: Any]])?.first?["url"] as? String)
        }
        let files = Self.mediaFiles(in: dir)
        #expect(files.count == 1, "\(files)")
        #expect(files.allSatisfy { $0.hasPrefix("notification-attachments/") }, "\(files)")
        #expect(last.contains("/dev/notification-attachments/"))
        #expect(FileManager.default.fileExists(atPath: last))
    }

    /// The system could not store the attachment: the decrypted text without it, one result,
    /// and no decrypted media left anywhere (container or store).
    @Test func aFailedStoreShowsTheTextWithoutTheAttachmentOnce() throws {
        let server = try #require(MediaServer.shared, "python3 is needed to run the local media server")
        let dir = try PushOpenCLITests.setUp()
        defer { try? FileManager.default.removeItem(at: dir) }
        let payload = try PushOpenMediaCLITests.mediaPayload(port: server.port, in: dir)
        let r = try KeysCLI.run(PushOpenMediaCLITests.pushOpen,
                                PushOpenCLITests.base + ["--allow-insecure-loopback", "--no-replay-guard", "--fail-attachment-store", "--verbose", payload],
                                cwd: dir)
        let json = try #require((try? JSONSerialization.jsonObject(with: Data(r.stdout.utf8))) as? [String: Any])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(json["outcome"] as? String == "decryptedWithoutMedia")
        #expect(json["reason"] as? String == "media:storeFailed")
        #expect(json["title"] as? String == "Photo from Ana")
        #expect((json["attachments"] as? [Any])?.isEmpty == true)
        #expect(r.stdout.filter { $0 == "\n" }.count == 1)
        // Once: one delivery, one store attempt, no second run of the extension.
        #expect(r.stderr.components(separatedBy: "event=attachmentStoreFailed").count == 2, "\(r.stderr)")
        #expect(r.stderr.components(separatedBy: "event=didReceive").count == 2, "\(r.stderr)")
        #expect(Self.mediaFiles(in: dir).isEmpty, "\(Self.mediaFiles(in: dir))")
    }

    /// A device directory whose path has spaces and non-ASCII letters: file URLs are built
    /// from paths, the attachment lands and reads back.
    @Test func pathsWithSpacesAndNonASCIILettersWork() throws {
        let server = try #require(MediaServer.shared, "python3 is needed to run the local media server")
        let dir = try PushOpenCLITests.setUp(directoryName: "pushseal open ü é \(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: dir) }
        let payload = try PushOpenMediaCLITests.mediaPayload(port: server.port, in: dir)
        let (r, json) = try PushOpenMediaCLITests.open(PushOpenMediaCLITests.pushOpen, payload, in: dir)
        try PushOpenMediaCLITests.expectAttached(r, json)
        let url = try #require((json["attachments"] as? [[String: Any]])?.first?["url"] as? String)
        #expect(url.contains("pushseal open ü é "))
    }

    /// Newcomer friction 15: an extension identity without an App Group has nowhere to keep its
    /// replay cache; as on a phone, a notification with an id is refused every time
    /// (replayGuardUnavailable), where 0031154 decrypted the same id twice.
    @Test func withoutAnAppGroupANotificationWithAnIDFailsClosed() throws {
        let dir = try PushOpenCLITests.setUp()
        defer { try? FileManager.default.removeItem(at: dir) }
        let payload = PushOpenCLITests.casePath("notifications/n10.payload.json") // carries "id": "otp-1"
        let identity = ["--keychain", "dev", "--app-id", "com.example.app", "--access-group", "T.shared", "--now", "1796000100"]
        for _ in 0..<2 {
            let r = try PushOpenCLITests.run("push-open", identity + [payload], in: dir)
            #expect(r.status == 1, "\(r.stdout)\(r.stderr)")
            #expect(r.json["outcome"] as? String == "original")
            #expect(r.json["reason"] as? String == "replayGuardUnavailable")
        }
        // A notification without an id has nothing to check: it opens.
        let plain = try PushOpenCLITests.run("push-open", identity + [PushOpenCLITests.casePath("notifications/n08.payload.json")], in: dir)
        #expect(plain.json["outcome"] as? String == "decrypted", "\(plain.stdout)")
        // --no-replay-guard still opens it (for trying a payload).
        let off = try PushOpenCLITests.run("push-open", identity + ["--no-replay-guard", payload], in: dir)
        #expect(off.json["outcome"] as? String == "decrypted", "\(off.stdout)")
    }
}
