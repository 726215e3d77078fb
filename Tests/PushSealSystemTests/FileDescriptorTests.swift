import Foundation
import PushSealSystem
import PushSealTestSupport
import Testing

@Suite struct FileDescriptorTests {
    @Test func writeAllThenReadAllRoundTripsAndHonoursTheLimit() throws {
        let dir = try TemporaryDirectory("system")
        let path = dir.appending("data").path
        var rng = SeededGenerator()
        let bytes = (0..<200_000).map { _ in UInt8.random(in: 0...255, using: &rng) }
        try PrivateFile.createExclusive(path, bytes)
        let file = try FileDescriptor.open(path, .readOnly)
        #expect(try file.readAll(limit: bytes.count) == bytes, seedNote())
        let again = try FileDescriptor.open(path, .readOnly)
        let error = expectCode(.tooLarge) { try again.readAll(limit: bytes.count - 1) }
        #expect(error?.path == path)
    }

    @Test func createExclusiveRefusesAnExistingFileAndKeepsIt() throws {
        let dir = try TemporaryDirectory("system")
        let path = dir.appending("key").path
        try PrivateFile.createExclusive(path, [1, 2, 3])
        expectCode(.alreadyExists) { try PrivateFile.createExclusive(path, [9]) }
        #expect(try PrivateFile.read(path, maxByteCount: 16) == [1, 2, 3])
        #expect(try PrivateFile.status(path)?.mode == 0o600)
    }

    @Test func privateFileRulesRefuseLooseModesLinksAndFIFOs() throws {
        let dir = try TemporaryDirectory("system")
        let path = dir.appending("item").path
        try PrivateFile.createExclusive(path, [7])
        #expect(chmod(path, 0o644) == 0)
        let loose = expectCode(.insecureMode) { try PrivateFile.read(path, maxByteCount: 16) }
        #expect(loose?.fileMode == 0o644)
        #expect(chmod(path, 0o600) == 0)
        let link = dir.appending("link").path
        #expect(symlink(path, link) == 0)
        expectCode(.symbolicLink) { try PrivateFile.open(link, .readOnly) }
        expectCode(.symbolicLink) { try PrivateFile.read(link, maxByteCount: 16) }
        let fifo = dir.appending("fifo").path
        #expect(mkfifo(fifo, 0o600) == 0)
        expectCode(.notRegularFile) { try PrivateFile.open(fifo, .writeOnly) }
        #expect(try PrivateFile.read(dir.appending("absent").path, maxByteCount: 16) == nil)
    }

    @Test func replaceAtomicallyLeavesTheNewBytesAndNoTempFile() throws {
        let dir = try TemporaryDirectory("system")
        let path = dir.appending("meta").path
        try PrivateFile.createExclusive(path, Array("old".utf8))
        try PrivateFile.replaceAtomically(Array("new".utf8), at: path, directory: dir.path, uniqueName: ".tmp-test")
        #expect(try PrivateFile.read(path, maxByteCount: 16) == Array("new".utf8))
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path) == ["meta"])
    }

    @Test func exclusiveLockSerializesThreads() throws {
        let dir = try TemporaryDirectory("system")
        let lock = dir.appending("lock").path
        let inside = Locked(0)
        let maxInside = Locked(0)
        let done = DispatchGroup()
        for _ in 0..<4 {
            done.enter()
            #expect(startDetachedThread {
                defer { done.leave() }
                for _ in 0..<20 {
                    // flock is per open file description, so each holder opens its own.
                    try? PrivateFile.withExclusiveLock(lock) {
                        let n = inside.withLock { $0 += 1; return $0 }
                        maxInside.withLock { $0 = max($0, n) }
                        inside.withLock { $0 -= 1 }
                    }
                }
            })
        }
        done.wait()
        #expect(maxInside.withLock { $0 } == 1)
        #expect(try PrivateFile.status(lock)?.mode == 0o600)
    }

    @Test func lockedHandsOutEachIndexOnce() {
        let next = Locked(0)
        let taken = Locked<[Int]>([])
        DispatchQueue.concurrentPerform(iterations: 4) { _ in
            while let i = next.takeIndex(below: 1000) { taken.withLock { $0.append(i) } }
        }
        #expect(taken.withLock { $0.sorted() } == Array(0..<1000))
    }

    @Test func hexRoundTripsAndRefusesBadDigits() {
        var rng = SeededGenerator(stream: 1)
        let bytes = (0..<64).map { _ in UInt8.random(in: 0...255, using: &rng) }
        #expect(Hex.decode(Hex.encode(bytes)) == bytes, seedNote())
        #expect(Hex.decode(Hex.encode(bytes, uppercase: true)) == bytes, seedNote())
        #expect(Hex.encode([0x0a, 0xff]) == "0aff")
        #expect(Hex.byte(0x1f, uppercase: true) == "1F")
        #expect(Hex.decode("abc") == nil)
        #expect(Hex.decode("zz") == nil)
    }

    /// The table-driven decoder against a digit-by-digit reference (``Hex/value(ofDigit:)``):
    /// every byte value in either place of a pair, and random strings of hex digits with a few
    /// other bytes and odd lengths mixed in.
    @Test func hexDecodeMatchesADigitByDigitReference() {
        func reference(_ u: [UInt8]) -> [UInt8]? {
            guard u.count % 2 == 0 else { return nil }
            var out: [UInt8] = []
            for i in stride(from: 0, to: u.count, by: 2) {
                guard let hi = Hex.value(ofDigit: u[i]), let lo = Hex.value(ofDigit: u[i + 1]) else { return nil }
                out.append(hi << 4 | lo)
            }
            return out
        }
        func decoded(_ u: [UInt8]) -> [UInt8]? { u.withUnsafeBufferPointer { Hex.decode(utf8: $0) } }
        for b in 0...255 {
            for pair in [[UInt8(b), 0x30], [0x41, UInt8(b)]] { #expect(decoded(pair) == reference(pair), "byte \(b)") }
        }
        var rng = SeededGenerator(stream: 2)
        let digits = Array("0123456789abcdefABCDEF".utf8)
        for _ in 0..<2_000 {
            let count = Int.random(in: 0...80, using: &rng)
            let u = (0..<count).map { _ in
                UInt8.random(in: 0...99, using: &rng) == 0 ? UInt8.random(in: 0...255, using: &rng) : digits[Int.random(in: 0..<digits.count, using: &rng)]
            }
            #expect(decoded(u) == reference(u), seedNote())
            if let s = String(validating: u, as: UTF8.self) { #expect(Hex.decode(s) == reference(u), seedNote()) }
        }
    }

    @Test("makePipe's ends are close-on-exec (no child inherits one but through a dup), and a spawned child sees end of file only when the write end is closed")
    func pipesAreCloseOnExec() throws {
        let pipe = try FileDescriptor.makePipe()
        #expect(fcntl(pipe.read.rawValue, F_GETFD) & FD_CLOEXEC != 0)
        #expect(fcntl(pipe.write.rawValue, F_GETFD) & FD_CLOEXEC != 0)
        let child = try #require(ChildProcess.spawn(["/bin/sh", "-c", "printf ready"], stdout: .descriptor(pipe.write.rawValue)))
        pipe.write.close()
        #expect(try pipe.read.readAll(limit: 64) == Array("ready".utf8))
        #expect(child.wait().status == 0)
    }

    @Test func errorsCompareByCodeOnly() {
        #expect(SystemError(.io, "one") == SystemError(.io, "two"))
        #expect(SystemError(.io, "one") != SystemError(.notFound, "one"))
        #expect(SystemError.call("open", "/x", errno: ENOENT).code == .notFound)
        #expect(SystemError.call("open", "/x", errno: EACCES).code == .permissionDenied)
        #expect(SystemError.domain == "system")
    }
}
