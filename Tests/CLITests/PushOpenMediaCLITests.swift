import PushSealTestSupport
import PushSealCrypto
import PushSealWire
import Foundation
import Testing

/// push-open's media path, run as a user runs it: the binary alone, libcurl loaded only when a
/// notification has media (CCurlLazy), against the tests' local HTTP server.
///
/// The push-open under test is the one built beside this test bundle, or the one named by the
/// environment variable `PUSHSEAL_TEST_PUSH_OPEN` (scripts/check-push-open-product.sh sets it
/// to a push-open built with `swift build --product push-open` alone, in a scratch path of its
/// own). push-keys, which provisions the keychain, is always the one beside the test bundle.
@Suite(.serialized)
struct PushOpenMediaCLITests {
    static var pushOpen: String {
        ProcessInfo.processInfo.environment["PUSHSEAL_TEST_PUSH_OPEN"] ?? PushOpenCLITests.binary("push-open").path
    }

    /// n12 (a photo at `http://127.0.0.1:PORT/cat.jpg`) resealed with the server's port and the
    /// key `setUp` imports as `k1`; returns the payload file's name in `dir`.
    static func mediaPayload(port: Int, url: String? = nil, in dir: URL) throws -> String {
        let cases = try requireSharedData("cases")
        var plain = try String(contentsOf: cases.appendingPathComponent("notifications/n12.plain.json"), encoding: .utf8)
        if let url { plain = plain.replacingOccurrences(of: "http://127.0.0.1:PORT/cat.jpg", with: url) }
        plain = plain.replacingOccurrences(of: "PORT", with: String(port))
        let sealed = try WireFormat.seal(encodedPlaintext: Array(plain.utf8), key: SecretBytes(copying: Array(0..<32)),
                                         keyID: "k1", appID: "com.example.app")
        let original = try Data(contentsOf: cases.appendingPathComponent("notifications/n12.payload.json"))
        var payload = try #require(try JSONSerialization.jsonObject(with: original) as? [String: Any])
        payload["encrypted_data"] = sealed.encryptedData
        try JSONSerialization.data(withJSONObject: payload).write(to: dir.appendingPathComponent("media.payload.json"))
        return "media.payload.json"
    }

    static func open(_ executable: String, _ payload: String, in dir: URL, env: [String: String] = [:]) throws -> (KeysCLI.Result, [String: Any]) {
        try #require(FileManager.default.isExecutableFile(atPath: executable), "push-open is not built at \(executable)")
        let r = try KeysCLI.run(executable, PushOpenCLITests.base + ["--allow-insecure-loopback", "--no-replay-guard", payload], env: env, cwd: dir)
        let json = (try? JSONSerialization.jsonObject(with: Data(r.stdout.utf8))) as? [String: Any] ?? [:]
        return (r, json)
    }

    /// The attachment is the server's JPEG, as a file in the App Group container.
    static func expectAttached(_ r: KeysCLI.Result, _ json: [String: Any]) throws {
        #expect(r.status == 0, "\(r.stderr)")
        #expect(json["outcome"] as? String == "decrypted")
        #expect(json["reason"] as? String == "mediaAttached", "\(json["detail"] ?? "")")
        #expect(json["title"] as? String == "Photo from Ana")
        let attachments = try #require(json["attachments"] as? [[String: Any]])
        try #require(attachments.count == 1)
        #expect(attachments[0]["type"] as? String == "public.jpeg")
        let path = try #require(attachments[0]["url"] as? String)
        let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        #expect(bytes.starts(with: [0xFF, 0xD8, 0xFF]))
        #expect(attachments[0]["byteCount"] as? Int == bytes.count)
    }

    @Test func mediaNotificationDownloadsAndAttachesItsImage() throws {
        let server = try #require(MediaServer.shared, "python3 is needed to run the local media server")
        let dir = try PushOpenCLITests.setUp()
        defer { try? FileManager.default.removeItem(at: dir) }
        let (r, json) = try Self.open(Self.pushOpen, try Self.mediaPayload(port: server.port, in: dir), in: dir)
        try Self.expectAttached(r, json)
    }

    /// F9 of the December review: what an extension killed mid-download left in the App Group
    /// container (`.<uuid>.download`, `.<uuid>.opening`, older than the 30 s budget and held by
    /// nobody) is swept by the next download, and the attachment lands in a directory of its own
    /// under `Attachments/`, not loose in the container.
    @Test func aDownloadSweepsWhatAKilledExtensionLeftBehind() throws {
        let server = try #require(MediaServer.shared, "python3 is needed to run the local media server")
        let dir = try PushOpenCLITests.setUp()
        defer { try? FileManager.default.removeItem(at: dir) }
        let container = dir.appendingPathComponent("dev/app-groups/group.x")
        try FileManager.default.createDirectory(at: container, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let stale = [".0A1B2C3D-download-left.download", ".0A1B2C3D-download-left.opening"].map { container.appendingPathComponent($0) }
        for url in stale {
            try Data(repeating: 0x41, count: 4096).write(to: url)
            try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: -3600), .posixPermissions: 0o600],
                                                  ofItemAtPath: url.path)
        }
        let (r, json) = try Self.open(Self.pushOpen, try Self.mediaPayload(port: server.port, in: dir), in: dir)
        try Self.expectAttached(r, json)
        for url in stale { #expect(!FileManager.default.fileExists(atPath: url.path), "\(url.lastPathComponent) was not swept") }
        let attachment = try #require((json["attachments"] as? [[String: Any]])?.first?["url"] as? String)
        // Handed back, the attachment was moved into the system's store (a directory per
        // notification), and the container's Attachments/ keeps nothing of it.
        #expect(URL(fileURLWithPath: attachment).deletingLastPathComponent().deletingLastPathComponent().lastPathComponent == "notification-attachments",
                "the attachment is not in a directory of its own in the system's store: \(attachment)")
        let left = (try? FileManager.default.contentsOfDirectory(atPath: container.appendingPathComponent("Attachments").path)) ?? []
        #expect(left.isEmpty, "\(left)")
    }

    /// F7 of the December review: without the test flag, a media URL whose name resolves to the
    /// local host (here `localhost`, as DNS rebinding would arrange) is refused on the address
    /// the socket would connect to, before any request; the text is shown without the media.
    @Test func aNameThatResolvesToLoopbackIsRefusedWithoutTheTestFlag() throws {
        let server = try #require(MediaServer.shared, "python3 is needed to run the local media server")
        let dir = try PushOpenCLITests.setUp()
        defer { try? FileManager.default.removeItem(at: dir) }
        let payload = try Self.mediaPayload(port: server.port, url: "https://localhost:PORT/cat.jpg", in: dir)
        let r = try KeysCLI.run(Self.pushOpen, PushOpenCLITests.base + ["--no-replay-guard", payload], cwd: dir)
        let json = (try? JSONSerialization.jsonObject(with: Data(r.stdout.utf8))) as? [String: Any] ?? [:]
        #expect(r.status == 0, "\(r.stderr)")
        #expect(json["title"] as? String == "Photo from Ana")
        #expect((json["attachments"] as? [[String: Any]] ?? []).isEmpty)
        #expect("\(json["detail"] ?? "")".contains("loopback"), "not refused as loopback: \(json["reason"] ?? "") \(json["detail"] ?? "")")
    }

    /// push-open needs nothing from its build directory at run time: copied alone into an empty
    /// directory it still downloads and attaches the media (the media fetcher used to be a
    /// library beside the executable, and push-open alone showed `media:mediaFetcherUnavailable`).
    @Test func pushOpenCopiedAloneStillAttachesMedia() throws {
        let server = try #require(MediaServer.shared, "python3 is needed to run the local media server")
        let dir = try PushOpenCLITests.setUp()
        defer { try? FileManager.default.removeItem(at: dir) }
        let alone = dir.appendingPathComponent("bin")
        try FileManager.default.createDirectory(at: alone, withIntermediateDirectories: true)
        let copy = alone.appendingPathComponent("push-open")
        try FileManager.default.copyItem(atPath: Self.pushOpen, toPath: copy.path)
        #expect(try FileManager.default.contentsOfDirectory(atPath: alone.path) == ["push-open"])
        let (r, json) = try Self.open(copy.path, try Self.mediaPayload(port: server.port, in: dir), in: dir)
        try Self.expectAttached(r, json)
    }

    /// libcurl is not mapped at start-up, nor for a notification without media; only a
    /// notification with media loads it. The dynamic loader's own log (`LD_DEBUG=files`, on
    /// stderr) names every object it loads, at start-up (DT_NEEDED) and by dlopen.
    @Test func libcurlIsLoadedOnlyForANotificationWithMedia() throws {
        let server = try #require(MediaServer.shared, "python3 is needed to run the local media server")
        let dir = try PushOpenCLITests.setUp()
        defer { try? FileManager.default.removeItem(at: dir) }
        func loaded(_ stderr: String) -> [String] {
            stderr.split(separator: "\n").filter { $0.contains("file=") }.map(String.init)
        }

        let (plain, plainJSON) = try Self.open(Self.pushOpen, PushOpenCLITests.casePath("notifications/n08.payload.json"), in: dir,
                                               env: ["LD_DEBUG": "files"])
        #expect(plain.status == 0)
        #expect(plainJSON["reason"] as? String == "decrypted")
        let plainFiles = loaded(plain.stderr)
        try #require(plainFiles.contains { $0.contains("libc.so") }, "no LD_DEBUG output: \(plain.stderr.prefix(500))")
        #expect(!plainFiles.contains { $0.contains("libcurl") }, "\(plainFiles.filter { $0.contains("libcurl") })")

        let (media, mediaJSON) = try Self.open(Self.pushOpen, try Self.mediaPayload(port: server.port, in: dir), in: dir,
                                               env: ["LD_DEBUG": "files"])
        #expect(mediaJSON["reason"] as? String == "mediaAttached", "\(mediaJSON["detail"] ?? "")")
        let mediaFiles = loaded(media.stderr)
        #expect(mediaFiles.contains { $0.contains("file=libcurl.so.4") && $0.contains("dynamically loaded") },
                "libcurl was not dlopened: \(mediaFiles.prefix(5))")
    }
}
