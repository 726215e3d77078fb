import PushSealTestSupport
import Foundation
import PushSealCrypto
import Testing
@testable import PushSealExtension

private func server() throws -> MediaServer {
    try #require(MediaServer.shared, "python3 is needed to run the local media server")
}

private func filesIn(_ dir: URL) -> [String] {
    ((try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []).sorted()
}

@Suite(.serialized) struct MediaDownloaderTests {
    @Test func extensionlessPNGGetsPNGName() throws {
        let s = try server()
        let dir = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let d = MediaDownloader(containerDirectory: dir, allowInsecureLoopback: true)
        let media = try d.download(MediaDownload(url: s.url("/photo")), timeoutSeconds: 5)
        #expect(media.mediaType == .png)
        #expect(media.fileURL.pathExtension == "png")
        #expect(media.redirectCount == 0)
        #expect(try UNNotificationAttachment(identifier: "m", url: media.fileURL).type == "public.png")
        // One directory per notification in the store (F9); nothing else left in the container.
        #expect(filesIn(dir) == [MediaStore.attachmentsDirectoryName])
        #expect(media.fileURL.deletingLastPathComponent().deletingLastPathComponent().lastPathComponent == MediaStore.attachmentsDirectoryName)
        #expect(filesIn(media.fileURL.deletingLastPathComponent()) == [media.fileURL.lastPathComponent])
    }

    @Test func redirectIsFollowedAndCounted() throws {
        let s = try server()
        let dir = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let d = MediaDownloader(containerDirectory: dir, allowInsecureLoopback: true)
        #expect(try d.download(MediaDownload(url: s.url("/redirect")), timeoutSeconds: 5).redirectCount == 1)
        #expect(try d.download(MediaDownload(url: s.url("/hop/6")), timeoutSeconds: 5).redirectCount == 3)
        #expect(throws: ExtensionError(.mediaTooManyRedirects, "")) {
            try d.download(MediaDownload(url: s.url("/hop/5")), timeoutSeconds: 5)
        }
    }

    @Test(arguments: [("/error-page", ExtensionError.Code.attachmentUnrecognizedType),
                      ("/lying-png", .attachmentUnrecognizedType),
                      ("/missing", .mediaHTTPStatus),
                      ("/huge.jpg", .attachmentInvalidFileSize),
                      ("/huge-length.jpg", .attachmentInvalidFileSize)])
    func failingRoutesLeaveNoFile(_ path: String, _ code: ExtensionError.Code) throws {
        let s = try server()
        let dir = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let d = MediaDownloader(containerDirectory: dir, allowInsecureLoopback: true)
        #expect(throws: ExtensionError(code, "")) { try d.download(MediaDownload(url: s.url(path)), timeoutSeconds: 10) }
        #expect(filesIn(dir).isEmpty)
    }

    @Test func hugeJPEGIsAbortedJustPastTheImageLimit() throws {
        let s = try server()
        let dir = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let logger = CollectingLogger()
        let d = MediaDownloader(containerDirectory: dir, allowInsecureLoopback: true, logger: logger)
        _ = try? d.download(MediaDownload(url: s.url("/huge.jpg")), timeoutSeconds: 10)
        // The reason says where it stopped: past 10 MiB, far before 30 MB.
        let line = try #require(logger.lines.first { $0.contains("stage=download event=failed") })
        let abortedAt = try #require(line.split(separator: " ").last.flatMap { Int($0.filter(\.isNumber)) })
        #expect(abortedAt > MediaType.Category.image.maxByteCount)
        #expect(abortedAt < MediaType.Category.image.maxByteCount + 4 * 1_048_576)
    }

    @Test(arguments: ["/stall", "/drip"])
    func stallAndDripTimeOut(_ path: String) throws {
        let s = try server()
        let dir = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let d = MediaDownloader(containerDirectory: dir, allowInsecureLoopback: true)
        // The code alone proves the timeout fired: without it /stall would end after 120 s with
        // the connection closed and /drip would finish its image (no timing assertion needed).
        #expect(throws: ExtensionError(.mediaTimedOut, "")) { try d.download(MediaDownload(url: s.url(path)), timeoutSeconds: 1) }
        #expect(filesIn(dir).isEmpty)
    }

    @Test func cancellationStopsAStall() throws {
        let s = try server()
        let dir = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let d = MediaDownloader(containerDirectory: dir, allowInsecureLoopback: true)
        let token = DownloadCancellation()
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.2) { token.cancel() }
        #expect(throws: ExtensionError(.mediaCancelled, "")) { try d.download(MediaDownload(url: s.url("/stall")), timeoutSeconds: 10, cancellation: token) }
    }

    @Test func policyFollowsAppTransportSecurity() throws {
        let dir = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let strict = MediaDownloader(containerDirectory: dir)
        let loose = MediaDownloader(containerDirectory: dir, allowInsecureLoopback: true)
        for url in ["http://127.0.0.1:1/a.png", "http://localhost/a", "http://[::1]/a"] {
            #expect(throws: ExtensionError(.mediaURLRefused, "")) { try strict.checkPolicy(try #require(URL(string: url))) }
            try loose.checkPolicy(try #require(URL(string: url)))
        }
        for url in ["http://example.com/a.png", "http://127.0.0.1.example.com/a", "ftp://127.0.0.1/a", "file:///etc/passwd"] {
            #expect(throws: ExtensionError(.mediaURLRefused, "")) { try loose.checkPolicy(try #require(URL(string: url))) }
        }
        try strict.checkPolicy(try #require(URL(string: "https://example.com/a.png")))
        #expect(throws: ExtensionError(.mediaURLRefused, "")) { try strict.download(MediaDownload(url: "http://127.0.0.1:1/a"), timeoutSeconds: 1) }
    }

    @Test func plainMediaDigestIsChecked() throws {
        let s = try server()
        let dir = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let bytes = sampleBytes(.gif, byteCount: 5000)
        try writeFile(bytes, named: "anim", in: s.filesDirectory)
        let hex = try SHA256Hasher.hash(bytes).map { String(format: "%02x", $0) }.joined()
        let d = MediaDownloader(containerDirectory: dir, allowInsecureLoopback: true)
        #expect(try d.download(MediaDownload(url: s.url("/files/anim?ct=image/gif"), sha256Hex: hex.uppercased()), timeoutSeconds: 5).mediaType == .gif)
        let wrong = String(repeating: "0", count: 64)
        #expect(throws: ExtensionError(.mediaDigestMismatch, "")) {
            try d.download(MediaDownload(url: s.url("/files/anim"), sha256Hex: wrong), timeoutSeconds: 5)
        }
        #expect(throws: ExtensionError(.mediaInvalidDescriptor, "")) {
            try d.download(MediaDownload(url: s.url("/files/anim"), sha256Hex: "xyz"), timeoutSeconds: 5)
        }
    }

    @Test func sealedMediaIsVerifiedThenOpened() throws {
        let s = try server()
        let dir = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let plain = sampleBytes(.jpeg, byteCount: 200_000)
        let key = SecretBytes(randomByteCount: 32)
        let box = try AES256GCM.seal(plain, with: key).combined
        let name = "box-\(UUID().uuidString)"
        try writeFile(box, named: name, in: s.filesDirectory)
        let hex = try SHA256Hasher.hash(box).map { String(format: "%02x", $0) }.joined()
        let d = MediaDownloader(containerDirectory: dir, allowInsecureLoopback: true)

        let media = try d.download(MediaDownload(url: s.url("/files/\(name)"), type: "image/jpeg", sha256Hex: hex, key: key), timeoutSeconds: 5)
        #expect(media.mediaType == .jpeg)
        #expect(media.fileURL.pathExtension == "jpg")
        #expect(try Data(contentsOf: media.fileURL) == Data(plain))
        #expect(media.downloadedByteCount == plain.count + 28)
        d.store.removeAttachment(at: media.fileURL)

        #expect(throws: ExtensionError(.mediaDecryptionFailed, "")) {
            try d.download(MediaDownload(url: s.url("/files/\(name)"), key: SecretBytes(randomByteCount: 32)), timeoutSeconds: 5)
        }
        var flipped = box
        flipped[flipped.count / 2] ^= 1
        try writeFile(flipped, named: name + "-flipped", in: s.filesDirectory)
        #expect(throws: ExtensionError(.mediaDigestMismatch, "")) {
            try d.download(MediaDownload(url: s.url("/files/\(name)-flipped"), sha256Hex: hex, key: key), timeoutSeconds: 5)
        }
        #expect(throws: ExtensionError(.mediaDecryptionFailed, "")) {
            try d.download(MediaDownload(url: s.url("/files/\(name)-flipped"), key: key), timeoutSeconds: 5)
        }
        // Only the (now empty) attachment store is left: no partial box, no unverified plaintext.
        #expect(filesIn(dir) == [MediaStore.attachmentsDirectoryName])
        #expect(filesIn(d.store.attachmentsDirectory).isEmpty)
    }
}
