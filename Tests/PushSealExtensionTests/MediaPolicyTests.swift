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

/// F7 (media SSRF) and F9 (the container accumulates media) of the December review.
/// No test connects anywhere but loopback: the refused classes are checked on the URL (no
/// network on any code version), the connection-time check with names and spellings that
/// resolve to loopback.
@Suite(.serialized) struct MediaPolicyTests {
    /// One address of every refused class, as an https URL host: refused before any request.
    static let refusedHosts: [(String, MediaAddressPolicy.AddressClass)] = [
        ("127.0.0.1", .loopback), ("127.8.9.10", .loopback), ("[::1]", .loopback),
        ("10.1.2.3", .privateNetwork), ("172.16.0.1", .privateNetwork), ("172.31.255.254", .privateNetwork), ("192.168.1.1", .privateNetwork),
        ("100.64.0.1", .sharedAddressSpace), ("100.127.255.254", .sharedAddressSpace),
        ("169.254.169.254", .linkLocal), ("[fe80::1]", .linkLocal),
        ("224.0.0.1", .multicast), ("239.255.255.250", .multicast), ("[ff02::1]", .multicast),
        ("0.0.0.0", .unspecified), ("0.1.2.3", .unspecified), ("[::]", .unspecified),
        ("192.0.2.2", .documentation), ("198.51.100.7", .documentation), ("203.0.113.9", .documentation), ("[2001:db8::1]", .documentation),
        ("198.18.0.1", .benchmarking), ("198.19.255.1", .benchmarking),
        ("[fc00::1]", .uniqueLocal), ("[fd12:3456::1]", .uniqueLocal),
        ("192.0.0.8", .specialPurpose), ("240.0.0.1", .specialPurpose), ("255.255.255.255", .specialPurpose),
        ("[2001::1]", .specialPurpose), ("[100::1]", .specialPurpose),
        // IPv4-mapped and embedded forms are judged as the IPv4 address.
        ("[::ffff:127.0.0.1]", .loopback), ("[::ffff:10.0.0.1]", .privateNetwork), ("[::ffff:169.254.169.254]", .linkLocal),
        ("[64:ff9b::a00:1]", .privateNetwork), ("[2002:7f00:1::]", .loopback),
        // Other spellings of 127.0.0.1 and 10.0.0.1 that the resolver and libcurl accept.
        ("2130706433", .loopback), ("0177.0.0.1", .loopback), ("0x7f.0.0.1", .loopback), ("127.1", .loopback),
        ("0x7f000001", .loopback), ("017700000001", .loopback), ("167772161", .privateNetwork), ("012.0.0.1", .privateNetwork),
    ]

    @Test func everySpecialPurposeClassIsRefusedOnTheURL() throws {
        let dir = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let strict = MediaDownloader(containerDirectory: dir)
        for (host, kind) in Self.refusedHosts {
            let url = try #require(URL(string: "https://\(host):8443/a.png"), "\(host)")
            #expect(throws: ExtensionError(.mediaURLRefused, "")) { try strict.checkPolicy(url) }
            let bytes = try #require(MediaAddressPolicy.ipLiteral(url.host ?? ""), "\(host)")
            #expect(MediaAddressPolicy.classify(bytes) == kind, "\(host)")
        }
        // Public addresses and names pass the URL check (names are checked when connecting).
        for host in ["93.184.216.34", "8.8.8.8", "172.32.0.1", "100.128.0.1", "192.0.3.1", "[2606:4700::1111]", "example.com", "cdn.example.net"] {
            try strict.checkPolicy(try #require(URL(string: "https://\(host)/a.png")))
        }
    }

    /// The test flag opens loopback only (never a private or link-local address), and with an
    /// allow-list only its ports.
    @Test func theTestFlagOpensLoopbackOnItsPortsOnly() throws {
        let dir = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let anyPort = MediaDownloader(containerDirectory: dir, allowInsecureLoopback: true)
        let onePort = MediaDownloader(containerDirectory: dir, allowInsecureLoopback: true, allowedLoopbackPorts: [8080])
        for url in ["http://127.0.0.1:8080/a", "https://127.0.0.1:9/a", "http://[::ffff:127.0.0.1]:8080/a", "http://2130706433:8080/a"] {
            try anyPort.checkPolicy(try #require(URL(string: url)))
        }
        try onePort.checkPolicy(try #require(URL(string: "http://127.0.0.1:8080/a")))
        for url in ["http://127.0.0.1:8081/a", "http://127.0.0.1/a", "https://[::1]:9/a"] {
            #expect(throws: ExtensionError(.mediaURLRefused, "")) { try onePort.checkPolicy(try #require(URL(string: url))) }
        }
        for url in ["https://10.0.0.1/a", "https://169.254.169.254/a", "https://[fd00::1]/a", "http://192.168.0.1/a"] {
            #expect(throws: ExtensionError(.mediaURLRefused, "")) { try anyPort.checkPolicy(try #require(URL(string: url))) }
        }
    }

    /// Without the flag a name that resolves to loopback is refused where the socket would be
    /// opened (the URL check cannot know what a name resolves to), as are other spellings.
    @Test func loopbackIsRefusedOnTheConnectedAddress() throws {
        let s = try server()
        let dir = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let strict = MediaDownloader(containerDirectory: dir)
        for url in ["https://localhost:\(s.port)/photo", "https://[::ffff:127.0.0.1]:\(s.port)/photo",
                    "https://2130706433:\(s.port)/photo", "https://0177.0.0.1:\(s.port)/photo"] {
            #expect(throws: ExtensionError(.mediaURLRefused, "")) { try strict.download(MediaDownload(url: url), timeoutSeconds: 5) }
        }
        #expect(filesIn(dir).isEmpty)
    }

    /// The flag allows exactly the test server's port: the first hop works; a redirect from it
    /// to another loopback port — by IP literal, by a name that resolves to loopback, in
    /// decimal, or IPv4-mapped — is refused by the policy, never connected.
    @Test func redirectToLoopbackElsewhereIsRefused() throws {
        let s = try server()
        let dir = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let logger = CollectingLogger()
        let d = MediaDownloader(containerDirectory: dir, allowInsecureLoopback: true, allowedLoopbackPorts: [s.port], logger: logger)
        #expect(try d.download(MediaDownload(url: s.url("/photo")), timeoutSeconds: 5).mediaType == .png)
        #expect(try d.download(MediaDownload(url: s.url("/redirect")), timeoutSeconds: 5).redirectCount == 1)
        let other = s.port == 65_535 ? s.port - 1 : s.port + 1
        for target in ["http://127.0.0.1:\(other)/x", "http://localhost:\(other)/x", "https://localhost:\(other)/x",
                       "http://2130706433:\(other)/x", "http://[::ffff:127.0.0.1]:\(other)/x", "https://169.254.169.254/latest"] {
            let url = s.url("/to?u=" + (target.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? target))
            #expect(throws: ExtensionError(.mediaURLRefused, "")) { try d.download(MediaDownload(url: url), timeoutSeconds: 5) }
        }
        // The name's refusal comes from the connection check: the reason names the address.
        #expect(logger.lines.contains { $0.contains("connection refused by policy") && $0.contains("port \(other)") })
    }

    // MARK: F9

    /// A `.download` and an `.opening` left by a killed extension are swept by the next
    /// download once older than the budget; fresh ones, and ones a live download holds, stay.
    @Test func staleTemporariesAreSwept() throws {
        let s = try server()
        let dir = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let stale = [".\(UUID().uuidString).download", ".\(UUID().uuidString).opening"]
        let fresh = ".\(UUID().uuidString).download"
        let held = ".\(UUID().uuidString).opening"
        let old = Date(timeIntervalSinceNow: -(MediaStore.defaultStaleAgeSeconds + 60))
        for name in stale + [fresh, held] {
            try writeFile(Array(repeating: 7, count: 1000), named: name, in: dir)
        }
        for name in stale + [held] {
            try FileManager.default.setAttributes([.modificationDate: old], ofItemAtPath: dir.appendingPathComponent(name).path)
        }
        let lock = try #require(TemporaryFileLock(path: dir.appendingPathComponent(held).path, wait: true))
        defer { lock.release() }
        let d = MediaDownloader(containerDirectory: dir, allowInsecureLoopback: true)
        let media = try d.download(MediaDownload(url: s.url("/photo")), timeoutSeconds: 5)
        #expect(filesIn(dir) == [fresh, held, MediaStore.attachmentsDirectoryName].sorted())
        #expect(FileManager.default.fileExists(atPath: media.fileURL.path))
    }

    /// Each notification's media gets its own directory; the store stays under its cap by
    /// dropping the oldest, drops expired ones, and refuses when downloads in flight fill it.
    @Test func attachmentsArePerNotificationAndCapped() throws {
        let s = try server()
        let dir = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let bytes = sampleBytes(.png, byteCount: 100_000)
        try writeFile(bytes, named: "cap.png", in: s.filesDirectory)
        // Room for the reserve of one download (50 MiB) plus two files of 100 kB.
        let cap = MediaType.largestMaxByteCount + 2 * bytes.count + 1000
        let store = MediaStore(containerDirectory: dir, capByteCount: cap)
        let d = MediaDownloader(containerDirectory: dir, allowInsecureLoopback: true, store: store)
        var files: [URL] = []
        for _ in 0..<4 {
            let media = try d.download(MediaDownload(url: s.url("/files/cap.png?ct=image/png")), timeoutSeconds: 5)
            files.append(media.fileURL)
        }
        #expect(Set(files.map { $0.deletingLastPathComponent() }).count == 4, "one directory per notification")
        let kept = filesIn(store.attachmentsDirectory)
        #expect(kept.count == 3, "\(kept)")
        #expect(!FileManager.default.fileExists(atPath: files[0].path), "the oldest was evicted")
        #expect(files.dropFirst().allSatisfy { FileManager.default.fileExists(atPath: $0.path) })

        // Past the retention, a directory is removed by the next download.
        let expired = Date(timeIntervalSinceNow: -(MediaStore.defaultRetentionSeconds + 60))
        try FileManager.default.setAttributes([.modificationDate: expired], ofItemAtPath: files[1].deletingLastPathComponent().path)
        let next = try d.download(MediaDownload(url: s.url("/files/cap.png")), timeoutSeconds: 5)
        #expect(!FileManager.default.fileExists(atPath: files[1].path))
        store.removeAttachment(at: next.fileURL)
        #expect(!FileManager.default.fileExists(atPath: next.fileURL.deletingLastPathComponent().path))

        // A store too small for even one download refuses before any request.
        let tiny = MediaDownloader(containerDirectory: dir, allowInsecureLoopback: true,
                                   store: MediaStore(containerDirectory: dir, capByteCount: 1_048_576))
        #expect(throws: ExtensionError(.mediaTransferFailed, "")) { try tiny.download(MediaDownload(url: s.url("/photo")), timeoutSeconds: 5) }
    }
}
