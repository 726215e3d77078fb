import PushSealTestSupport
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

/// Records what the fetcher reports, in order; `receive` may block on a gate.
private final class RecordingEvents: MediaFetchEvents, @unchecked Sendable {
    // @unchecked Sendable: every field is touched only under `lock`; `gate`, `firstChunk` and
    // `done` are semaphores.
    enum Event: Equatable { case redirect(String), response(Int, String?, Int?), complete(MediaFetchCompletion) }
    private let lock = NSLock()
    private var _events: [Event] = []
    private var _bytes: [UInt8] = []
    private var _chunkCount = 0
    private var _largestChunk = 0
    private var _inside = 0
    private var _overlapped = false
    private var _connects: [([UInt8], Int)] = []
    let followRedirects: Bool
    let allowConnect: Bool
    let gate: DispatchSemaphore?
    /// Signalled when the first chunk has arrived, before `receive` waits on `gate`.
    let firstChunk = DispatchSemaphore(value: 0)
    let done = DispatchSemaphore(value: 0)

    init(followRedirects: Bool = true, allowConnect: Bool = true, gate: DispatchSemaphore? = nil) {
        self.followRedirects = followRedirects
        self.allowConnect = allowConnect
        self.gate = gate
    }

    /// Every address the fetcher offered before opening a socket (bytes, port).
    var connects: [([UInt8], Int)] { lock.withLock { _connects } }

    func connect(to address: [UInt8], port: Int) -> Bool {
        lock.withLock { _connects.append((address, port)) }
        return allowConnect
    }

    var events: [Event] { lock.withLock { _events } }
    var bytes: [UInt8] { lock.withLock { _bytes } }
    var chunkCount: Int { lock.withLock { _chunkCount } }
    var largestChunk: Int { lock.withLock { _largestChunk } }
    var overlapped: Bool { lock.withLock { _overlapped } }

    private func enter() { lock.withLock { _inside += 1; if _inside > 1 { _overlapped = true } } }
    private func leave() { lock.withLock { _inside -= 1 } }

    func redirect(to url: String) -> Bool {
        enter(); defer { leave() }
        lock.withLock { _events.append(.redirect(url)) }
        return followRedirects
    }

    func response(status: Int, contentType: String?, contentLength: Int?) -> Bool {
        enter(); defer { leave() }
        lock.withLock { _events.append(.response(status, contentType, contentLength)) }
        return true
    }

    func receive(_ bytes: Span<UInt8>) -> Bool {
        enter(); defer { leave() }
        let first = lock.withLock { () -> Bool in
            _chunkCount += 1
            _largestChunk = max(_largestChunk, bytes.count)
            for i in bytes.indices { _bytes.append(bytes[i]) }
            return _chunkCount == 1
        }
        if first {
            firstChunk.signal()
            gate?.wait()
        }
        return true
    }

    func complete(_ completion: MediaFetchCompletion) {
        enter(); defer { leave() }
        lock.withLock { _events.append(.complete(completion)) }
        done.signal()
    }
}

/// A fetcher whose start always throws `error`.
private struct FailingFetcher: MediaFetching {
    let error: MediaFetchError
    func start(url: String, timeoutSeconds: Double, events: any MediaFetchEvents) throws -> any MediaFetchTask { throw error }
}

/// Streaming of media: the libcurl fetcher's callbacks and the chunked opening of sealed media.
@Suite(.serialized) struct MediaStreamingTests {
    /// Backpressure: while the data callback holds the first chunk, nothing else arrives (no
    /// chunk is queued behind it, completion cannot overtake it); afterwards the whole body
    /// arrives in order, in chunks of at most 16 KiB, never two callbacks at once.
    ///
    /// The test waits for the event "the first chunk arrived", never for a time. It then holds
    /// the callback while it waits 0.3 s for a completion that must not come: that window only
    /// gives a broken fetcher a chance to show itself (a correct one passes however slow the
    /// machine), and the `overlapped` check catches any callback that runs during the hold.
    @Test func chunksArriveOneAtATimeAndWaitForTheCallback() throws {
        let s = try server()
        var body = sampleBytes(.jpeg, byteCount: 1_000_000)
        for i in body.indices.dropFirst(16) { body[i] = UInt8(truncatingIfNeeded: i &* 131 &+ i >> 9) }
        let name = "stream-\(UUID().uuidString)"
        try writeFile(body, named: name, in: s.filesDirectory)
        let gate = DispatchSemaphore(value: 0)
        let events = RecordingEvents(gate: gate)
        let task = try CurlMediaFetcher().start(url: s.url("/files/\(name)?ct=image/jpeg"), timeoutSeconds: 10,
                                                   events: events)
        defer { task.finish() }
        try #require(events.firstChunk.wait(timeout: .now() + 20) == .success, "no chunk arrived within 20 s")
        #expect(events.done.wait(timeout: .now() + 0.3) == .timedOut, "the transfer completed while the first chunk was held")
        #expect(events.chunkCount == 1)
        #expect(events.events == [.response(200, "image/jpeg", body.count)])
        gate.signal()
        #expect(events.done.wait(timeout: .now() + 10) == .success)
        #expect(events.events.last == .complete(.finished(status: 200)))
        #expect(events.bytes == body)
        #expect(events.largestChunk <= 16 * 1024)
        #expect(!events.overlapped)
    }

    /// Each hop is offered with an absolute URL (the server sends a relative `Location`).
    @Test func redirectHopsAreOfferedAsAbsoluteURLs() throws {
        let s = try server()
        let events = RecordingEvents()
        let task = try CurlMediaFetcher().start(url: s.url("/hop/7"), timeoutSeconds: 10, events: events)
        defer { task.finish() }
        #expect(events.done.wait(timeout: .now() + 10) == .success)
        #expect(events.events == [.redirect(s.url("/hop/8")), .redirect(s.url("/hop/9")),
                                  .response(200, "image/png", events.bytes.count), .complete(.finished(status: 200))])
        #expect(events.bytes.starts(with: [0x89, 0x50, 0x4E, 0x47]))
    }

    /// A refused redirect is not followed: its own response is the final one.
    @Test func refusedRedirectEndsWithTheRedirectResponse() throws {
        let s = try server()
        let events = RecordingEvents(followRedirects: false)
        let task = try CurlMediaFetcher().start(url: s.url("/redirect"), timeoutSeconds: 10, events: events)
        defer { task.finish() }
        #expect(events.done.wait(timeout: .now() + 10) == .success)
        #expect(events.events == [.redirect(s.url("/photo")), .response(302, nil, 0), .complete(.finished(status: 302))])
    }

    /// `cancel()` ends a transfer that the server never answers, with `.cancelled` (cancelled
    /// once the server has the request, an event, so the transfer is really stalled).
    @Test func cancelEndsAStalledTransfer() throws {
        let s = try server()
        let events = RecordingEvents()
        let stall = s.markedStallURL()
        let task = try CurlMediaFetcher().start(url: stall.url, timeoutSeconds: 30, events: events)
        defer { task.finish() }
        try #require(s.waitForRequest(stall.name), "the request did not reach the server within 20 s")
        task.cancel()
        #expect(events.done.wait(timeout: .now() + 10) == .success)
        #expect(events.events == [.complete(.cancelled)])
    }

    /// A connection refused is a failure with NSURLError's "cannot connect" code (-1004).
    @Test func refusedConnectionFails() throws {
        let events = RecordingEvents()
        let task = try CurlMediaFetcher().start(url: "http://127.0.0.1:1/a.png", timeoutSeconds: 10, events: events)
        defer { task.finish() }
        #expect(events.done.wait(timeout: .now() + 10) == .success)
        #expect(events.events == [.complete(.failed(code: -1004))])
    }

    /// Every socket is offered to the connect callback with the resolved address (F7): the
    /// server's own address and port when allowed; refused, no byte is exchanged and the
    /// transfer fails as "cannot connect".
    @Test func connectionsAreOfferedWithTheResolvedAddress() throws {
        let s = try server()
        let allowed = RecordingEvents()
        let ok = try CurlMediaFetcher().start(url: s.url("/photo"), timeoutSeconds: 10, events: allowed)
        defer { ok.finish() }
        #expect(allowed.done.wait(timeout: .now() + 10) == .success)
        #expect(allowed.connects.map(\.0) == [[127, 0, 0, 1]] && allowed.connects.map(\.1) == [s.port])
        #expect(allowed.events.last == .complete(.finished(status: 200)))

        let refused = RecordingEvents(allowConnect: false)
        // A name, resolved by libcurl: the callback sees the loopback address it resolved to.
        let no = try CurlMediaFetcher().start(url: "http://localhost:\(s.port)/photo", timeoutSeconds: 10, events: refused)
        defer { no.finish() }
        #expect(refused.done.wait(timeout: .now() + 10) == .success)
        #expect(!refused.connects.isEmpty)
        #expect(refused.connects.allSatisfy { MediaAddressPolicy.classify($0.0) == .loopback && $0.1 == s.port })
        #expect(refused.events == [.complete(.failed(code: -1004))])
        #expect(refused.bytes.isEmpty)
    }

    /// Only http(s) URLs start; anything else is refused before any callback.
    @Test(arguments: ["ftp://127.0.0.1/a.png", "file:///etc/passwd", "not a url", ""])
    func nonHTTPURLsAreRefused(_ url: String) throws {
        #expect(throws: MediaFetchError(.urlRefused, "")) {
            try CurlMediaFetcher().start(url: url, timeoutSeconds: 1, events: RecordingEvents())
        }
    }

    /// The fetcher's start errors become the downloader's stable codes: libcurl missing is
    /// `mediaFetcherUnavailable` (with the loader's reason), an unparsable URL `mediaURLRefused`;
    /// no partial file is left either way.
    @Test(arguments: [(MediaFetchError.Code.libcurlUnavailable, ExtensionError.Code.mediaFetcherUnavailable),
                      (.urlRefused, .mediaURLRefused)])
    func fetcherStartErrorsMapToStableCodes(_ thrown: MediaFetchError.Code, _ expected: ExtensionError.Code) throws {
        let dir = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let d = MediaDownloader(containerDirectory: dir, allowInsecureLoopback: true,
                                fetcher: FailingFetcher(error: MediaFetchError(thrown, "libcurl.so.4: cannot open shared object file")))
        do {
            _ = try d.download(MediaDownload(url: "http://127.0.0.1:9/a.png"), timeoutSeconds: 5)
            Issue.record("the download did not fail")
        } catch let error as ExtensionError {
            #expect(error.code == expected)
            #expect(error.reason.contains("libcurl.so.4"))
        }
        #expect(filesIn(dir).allSatisfy { filesIn(dir.appendingPathComponent($0)).isEmpty })
    }

    /// Header parsing of the fetcher (status line, names in any case, values trimmed).
    @Test func headerLinesParse() {
        func status(_ line: String) -> Int { Array(line.utf8).withUnsafeBytes { parseStatus($0) } }
        func header(_ line: String) -> (String, String)? { Array(line.utf8).withUnsafeBytes { splitHeader($0) } }
        #expect(status("HTTP/1.1 200 OK\r\n") == 200)
        #expect(status("HTTP/2 404\r\n") == 404)
        #expect(status("HTTP/1.1 20\r\n") == 0)
        #expect(header("Content-TYPE:  image/png \r\n")! == ("content-type", "image/png"))
        #expect(header("Location:/a:b\r\n")! == ("location", "/a:b"))
        #expect(header("no colon\r\n") == nil)
        #expect(resolveURL("../b?x=1", against: "http://127.0.0.1:8/a/c") == "http://127.0.0.1:8/b?x=1")
        #expect(resolveURL("https://example.com/z", against: "http://127.0.0.1:8/a") == "https://example.com/z")
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
        let media = try d.download(MediaDownload(url: s.url("/files/\(name)"), sha256Hex: hex(try SHA256Hasher.hash(box)), key: key),
                                   timeoutSeconds: 5)
        #expect(media.mediaType == .png)
        #expect(media.byteCount == plain.count)
        #expect(try Data(contentsOf: media.fileURL) == Data(plain))
        #expect(filesIn(dir) == [MediaStore.attachmentsDirectoryName])
        #expect(filesIn(media.fileURL.deletingLastPathComponent()) == [media.fileURL.lastPathComponent])
        let mode = try FileManager.default.attributesOfItem(atPath: media.fileURL.path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
    }

    /// Bounded memory (issue 28: the extension's peak with a 9 MB image stays under 20 MiB,
    /// whatever the size): opening reads the box one chunk at a time and writes each chunk's
    /// plaintext before reading the next, so at most one chunk of box and one of plaintext are
    /// held, independent of the file's size; while the tag is checked, the unverified plaintext
    /// is only in the private `.opening` file (0600, outside `Attachments`), and a wrong tag
    /// leaves no file at all. Seen through the downloader's step observer with a 4 KiB chunk.
    @Test(arguments: [false, true])
    func sealedMediaIsHeldOneChunkAtATimeAndNeverReadableBeforeTheTag(tampered: Bool) throws {
        let s = try server()
        let dir = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let chunk = 4096
        let plain = sampleBytes(.png, byteCount: 25 * chunk + 123)
        let key = SecretBytes(randomByteCount: 32)
        var box = try AES256GCM.seal(plain, with: key).combined
        if tampered { box[box.count - 1] ^= 0x01 }
        let name = "bounded-\(UUID().uuidString)"
        try writeFile(box, named: name, in: s.filesDirectory)
        final class Steps: @unchecked Sendable {
            let lock = NSLock()
            var steps: [MediaDownloader.OpenStep] = []
            /// At the tag check: the container's visible entries, the partial file's mode and size.
            var atTag: (visible: [String], attachments: [String], mode: Int?, size: Int?)?
        }
        let seen = Steps()
        var d = MediaDownloader(containerDirectory: dir, allowInsecureLoopback: true)
        d.openChunkByteCount = chunk
        d.openObserver = { step in
            seen.lock.withLock { seen.steps.append(step) }
            guard case .checkingTag(let partial) = step else { return }
            let attributes = try? FileManager.default.attributesOfItem(atPath: partial.path)
            let attachments = filesIn(dir.appendingPathComponent(MediaStore.attachmentsDirectoryName))
            let visible = filesIn(dir).filter { !$0.hasPrefix(".") && $0 != MediaStore.attachmentsDirectoryName }
            seen.lock.withLock {
                seen.atTag = (visible, attachments.flatMap { filesIn(dir.appendingPathComponent(MediaStore.attachmentsDirectoryName).appendingPathComponent($0)) },
                              attributes?[.posixPermissions] as? Int, (attributes?[.size] as? NSNumber)?.intValue)
            }
        }
        let download = { try d.download(MediaDownload(url: s.url("/files/\(name)"), key: key), timeoutSeconds: 5) }
        if tampered {
            #expect(throws: ExtensionError(.mediaDecryptionFailed, "")) { try download() }
            #expect(filesIn(dir).allSatisfy { filesIn(dir.appendingPathComponent($0)).isEmpty }, "\(filesIn(dir))")
        } else {
            let media = try download()
            #expect(try Data(contentsOf: media.fileURL) == Data(plain))
        }
        let steps = seen.lock.withLock { seen.steps }
        // Nonce, 26 ciphertext chunks (25 full, one of 123 bytes), tag; each chunk written before the next read.
        let reads = steps.compactMap { if case .read(let n) = $0 { n } else { nil } }
        #expect(reads == [AES256GCM.nonceByteCount] + Array(repeating: chunk, count: 25) + [123, AES256GCM.tagByteCount])
        let writes = steps.compactMap { if case .wrote(let n) = $0 { n } else { nil } }
        #expect(writes == Array(repeating: chunk, count: 25) + [123])
        var pendingReads = 0
        for step in steps.dropFirst() {  // after the nonce
            switch step {
            case .read: pendingReads += 1
            case .wrote: pendingReads -= 1
            case .checkingTag: break
            }
            #expect(pendingReads <= 1, "two chunks read before one was written: \(steps)")
        }
        // At the tag check the plaintext is only in the private partial file, complete and 0600.
        let atTag = try #require(seen.lock.withLock { seen.atTag })
        #expect(atTag.visible.isEmpty && atTag.attachments.isEmpty, "\(atTag)")
        #expect(atTag.mode == 0o600 && atTag.size == plain.count, "\(atTag)")
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
            try d.download(MediaDownload(url: s.url("/files/\(name)"), key: key), timeoutSeconds: 5)
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
                try d.download(MediaDownload(url: s.url("/files/\(name)"), key: key), timeoutSeconds: 5)
            }
            #expect(filesIn(dir).isEmpty)
        }
    }
}
