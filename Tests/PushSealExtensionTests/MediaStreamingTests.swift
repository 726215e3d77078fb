import Foundation
import PushSealCrypto
import Testing
@testable import PushSealExtension
@testable import PushSealMediaFetch

private func server() throws -> MediaServer {
    try #require(MediaServer.shared, "python3 is needed to run the local media server")
}

private func filesIn(_ dir: URL) -> [String] {
    ((try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []).sorted()
}

private func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

/// Streaming of media: the bounded delegate queue and the chunked opening of sealed media.
@Suite(.serialized) struct MediaStreamingTests {
    @Test func boundedQueueMakesTheProducerWait() throws {
        let queue = BoundedDelegateQueue(maxPendingOperationCount: 2)
        let gate = DispatchSemaphore(value: 0)
        let added = Locked(0)
        let producer = Thread {
            for _ in 0..<4 {
                queue.addOperation { gate.wait() }
                added.withLock { $0 += 1 }
            }
        }
        producer.start()
        Thread.sleep(forTimeInterval: 0.3)
        // Two operations pending (one running, blocked on the gate): the third add waits.
        #expect(added.withLock { $0 } == 2)
        for _ in 0..<4 { gate.signal() }
        queue.waitUntilAllOperationsAreFinished()
        Thread.sleep(forTimeInterval: 0.05)
        #expect(added.withLock { $0 } == 4)
    }

    @Test func boundedQueueDoesNotWaitOnItself() throws {
        let queue = BoundedDelegateQueue(maxPendingOperationCount: 1)
        let ran = Locked(0)
        queue.addOperation {
            // Adding from inside the queue while its only slot is taken must not deadlock.
            queue.addOperation { ran.withLock { $0 += 1 } }
            ran.withLock { $0 += 1 }
        }
        queue.waitUntilAllOperationsAreFinished()
        Thread.sleep(forTimeInterval: 0.05)
        queue.waitUntilAllOperationsAreFinished()
        #expect(ran.withLock { $0 } == 2)
    }

    /// A sealed file of several chunks opens byte for byte; only `<uuid>.<ext>` remains.
    @Test(arguments: [0, 1, MediaDownloader.openChunkByteCount - 1, MediaDownloader.openChunkByteCount,
                      3 * MediaDownloader.openChunkByteCount + 17])
    func sealedMediaOpensInChunks(_ extra: Int) throws {
        let s = try server()
        let dir = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        var plain = sampleBytes(.png, byteCount: 64 + extra)
        for i in plain.indices.dropFirst(16) { plain[i] = UInt8(truncatingIfNeeded: i &* 31 &+ 7) }
        let key = SecretBytes(randomByteCount: 32)
        let box = try AES256GCM.seal(plain, with: key).combined
        let name = "chunks-\(UUID().uuidString)"
        try writeFile(box, named: name, in: s.filesDirectory)
        let d = MediaDownloader(containerDirectory: dir, allowInsecureLoopback: true)
        let media = try d.download(MediaDescriptor(url: s.url("/files/\(name)"), sha256Hex: hex(try SHA256Hasher.hash(box)), key: key),
                                   timeoutSeconds: 5)
        #expect(media.mediaType == .png)
        #expect(media.byteCount == plain.count)
        #expect(try Data(contentsOf: media.fileURL) == Data(plain))
        #expect(filesIn(dir) == [media.fileURL.lastPathComponent])
        let mode = try FileManager.default.attributesOfItem(atPath: media.fileURL.path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
    }

    /// FORMAT.md §5: the media box has empty AAD, so a box sealed with any AAD does not open.
    @Test func mediaBoxAADIsEmpty() throws {
        let s = try server()
        let dir = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let plain = sampleBytes(.jpeg, byteCount: 5000)
        let key = SecretBytes(randomByteCount: 32)
        let withAAD = try AES256GCM.seal(plain, with: key, authenticating: Array("pushseal:v1|A256GCM|k1|com.example.app".utf8)).combined
        let name = "aad-\(UUID().uuidString)"
        try writeFile(withAAD, named: name, in: s.filesDirectory)
        let d = MediaDownloader(containerDirectory: dir, allowInsecureLoopback: true)
        #expect(throws: ExtensionError(.mediaDecryptionFailed, "")) {
            try d.download(MediaDescriptor(url: s.url("/files/\(name)"), key: key), timeoutSeconds: 5)
        }
        #expect(filesIn(dir).isEmpty)
    }

    /// A modified tag, a truncated box, and authentic bytes that are no media leave no file.
    @Test func failedOpeningLeavesNoFile() throws {
        let s = try server()
        let dir = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let key = SecretBytes(randomByteCount: 32)
        let plain = sampleBytes(.gif, byteCount: 200_000)
        var badTag = try AES256GCM.seal(plain, with: key).combined
        badTag[badTag.count - 1] ^= 0x80
        let notMedia = try AES256GCM.seal(Array("<html>not an image</html>".utf8), with: key).combined
        let cases: [([UInt8], ExtensionError.Code)] = [
            (badTag, .mediaDecryptionFailed),
            (Array(badTag.prefix(27)), .mediaDecryptionFailed),
            (notMedia, .attachmentUnrecognizedType),
        ]
        let d = MediaDownloader(containerDirectory: dir, allowInsecureLoopback: true)
        for (bytes, code) in cases {
            let name = "bad-\(UUID().uuidString)"
            try writeFile(bytes, named: name, in: s.filesDirectory)
            #expect(throws: ExtensionError(code, "")) {
                try d.download(MediaDescriptor(url: s.url("/files/\(name)"), key: key), timeoutSeconds: 5)
            }
            #expect(filesIn(dir).isEmpty)
        }
    }
}
