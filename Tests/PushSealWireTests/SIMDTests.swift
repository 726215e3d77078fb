@testable import PushSealJSON
import PushSealTestSupport
import CPushSealSIMD
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Testing
@testable import PushSealWire

/// `CPushSealSIMD` at every level this machine has (0 portable, 1 SSSE3/SSE2, 2 AVX2), each
/// against the portable Swift code and libsodium: the vectorized base64 encoder and decoder and
/// the JSON string scan. Inputs are exact-size arrays, so `make sanitize` (ASan) catches any read past
/// the end.
@Suite("CPushSealSIMD: vectorized base64 and JSON scan agree with the portable code")
struct SIMDTests {

    #if arch(x86_64)
    /// Every x86-64 CPU since 2006 has SSSE3: the sender must not silently run portable code.
    @Test func x86ProcessorsGetAVectorizedLevel() {
        if let cap = getenvString("PUSHSEAL_SIMD") {
            #expect(pushseal_simd_level() <= Int32(cap) ?? 2)
        } else {
            #expect(pushseal_simd_level() >= 1)
        }
    }
    #endif

    /// Every length 0–400 at four source alignments: prefix by the C encoder, rest by the
    /// table loop, equals libsodium's encoding; the C encoder consumes whole 3-byte groups
    /// and writes nothing past 4/3 of what it consumed.
    @Test(arguments: [Int32(0), 1, 2])
    func base64AgreesWithLibsodiumAtEveryLength(level: Int32) {
        guard level <= pushseal_simd_level() else { return }
        var rng = SeededGenerator(seed: 0xB64_0000 + UInt64(level))
        for length in 0...400 {
            for offset in 0..<4 {
                let storage = (0..<(offset + length)).map { _ in UInt8.random(in: 0...255, using: &rng) }
                let data = Array(storage[offset...])
                let expected = Array(data.withUnsafeBytes { WireBase64.encodeSecret($0) }.utf8)
                let encodedCount = WireBase64.encodedByteCount(length)
                var out = [UInt8](repeating: 0xEE, count: encodedCount + 64)
                let consumed = storage.withUnsafeBufferPointer { src in
                    out.withUnsafeMutableBufferPointer { dst in
                        pushseal_base64_encode_prefix_at_level(level, src.baseAddress.map { $0 + offset }, length, dst.baseAddress)
                    }
                }
                #expect(consumed % 3 == 0 && consumed <= length, "level \(level) length \(length): consumed \(consumed)")
                if level == 0 { #expect(consumed == 0) }
                let written = consumed / 3 * 4
                #expect(out[written...].allSatisfy { $0 == 0xEE }, "level \(level) length \(length): wrote past \(written)")
                data.withUnsafeBytes { src in
                    out.withUnsafeMutableBytes { dst in
                        if let s = src.baseAddress, let d = dst.baseAddress {
                            WireBase64.encodeTable(s, from: consumed, to: length, into: d, at: written)
                        }
                    }
                }
                #expect(Array(out[0..<encodedCount]) == expected, "level \(level) length \(length) offset \(offset)")
            }
        }
    }

    /// Long inputs through the public entry point (the detected level) equal libsodium.
    @Test func base64PublicEntryPointAgreesOnLongInputs() {
        var rng = SeededGenerator(seed: 0xB64_1000)
        for length in [1_000, 2_076, 4_095, 4_096, 65_537] {
            let data = (0..<length).map { _ in UInt8.random(in: 0...255, using: &rng) }
            #expect(WireBase64.encode(data) == data.withUnsafeBytes { WireBase64.encodeSecret($0) }, "length \(length)")
        }
    }

    /// Whether the SIMD base64 decoder takes `b` (the standard alphabet only).
    static func standardDigit(_ b: UInt8) -> Bool {
        (0x41...0x5A).contains(b) || (0x61...0x7A).contains(b) || (0x30...0x39).contains(b) || b == 0x2B || b == 0x2F
    }

    /// Base64 of random bytes (0–600 of them, at four source alignments), now and then with one
    /// character swapped for another kind (`=`, white space, `-`, `_`, NUL, a byte ≥ 0x80, or a
    /// digit next to one in the table's ranges): the C decoder consumes whole blocks of 16
    /// characters of the standard alphabet and stops before the first block holding anything
    /// else (or with fewer than 16 left), writes exactly 3/4 of what it consumed — the bytes
    /// libsodium decodes from that prefix — and reports '+' or '/' exactly when the prefix holds one.
    @Test(arguments: [Int32(0), 1, 2])
    func base64DecodeAgreesWithLibsodiumAtEveryLength(level: Int32) throws {
        guard level <= pushseal_simd_level() else { return }
        var rng = SeededGenerator(seed: 0xB64D_0000 + UInt64(level))
        let odd: [UInt8] = Array("= \t\r\n-_".utf8) + [0x00, 0x2A, 0x2C, 0x2E, 0x3A, 0x40, 0x5B, 0x60, 0x7B, 0x7F, 0x80, 0xAB, 0xC3, 0xFF]
        var stoppedEarly = 0, sawSpecials = 0
        for round in 0..<1200 {
            let length = Int.random(in: 0...600, using: &rng)
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &rng) }
            var text = Array(bytes.withUnsafeBytes { WireBase64.encodeSecret($0) }.utf8)
            if !text.isEmpty, Int.random(in: 0..<3, using: &rng) == 0 {
                text[Int.random(in: 0..<text.count, using: &rng)] = odd.randomElement(using: &rng) ?? 0
            }
            let offset = round % 4
            let storage = [UInt8](repeating: 0x41, count: offset) + text
            var out = [UInt8](repeating: 0xEE, count: text.count + 64)
            var sawSpecial: Int32 = 0
            let consumed = storage.withUnsafeBufferPointer { src in
                out.withUnsafeMutableBufferPointer { dst in
                    pushseal_base64_decode_prefix_at_level(level, src.baseAddress.map { $0 + offset }, text.count, dst.baseAddress, &sawSpecial)
                }
            }
            let note = "level \(level) round \(round) length \(text.count): consumed \(consumed)"
            #expect(consumed % 16 == 0 && consumed <= text.count, "\(note)")
            if level == 0 { #expect(consumed == 0) }
            #expect(text[0..<consumed].allSatisfy(Self.standardDigit), "\(note): took a character outside the standard alphabet")
            if level > 0, text.count - consumed >= 16 {
                #expect(!text[consumed..<(consumed + 16)].allSatisfy(Self.standardDigit), "\(note): stopped before a plain block")
                stoppedEarly += 1
            }
            let written = consumed / 4 * 3
            #expect(out[written...].allSatisfy { $0 == 0xEE }, "\(note): wrote past \(written)")
            let expected = try Array(text[0..<consumed]).withUnsafeBytes { try WireBase64.decodeSecret($0) }
            #expect(Array(out[0..<written]) == expected, "\(note): other bytes than libsodium's")
            let hasSpecial = text[0..<consumed].contains { $0 == 0x2B || $0 == 0x2F }
            #expect((sawSpecial != 0) == hasSpecial, "\(note): saw + or / \(sawSpecial)")
            if hasSpecial { sawSpecials += 1 }
        }
        if level > 0 { #expect(stoppedEarly > 50 && sawSpecials > 300, "stopped early \(stoppedEarly), saw + or / \(sawSpecials)") }
    }

    /// Whether the JSON string scan must stop at `b`.
    static func flagged(_ b: UInt8) -> Bool { b < 0x20 || b >= 0x80 || b == 0x22 || b == 0x5C }

    /// Bytes the scans must stop at, their neighbours, and plain ones.
    static let specials: [UInt8] = [0x00, 0x09, 0x1F, 0x20, 0x21, 0x22, 0x5B, 0x5C, 0x5D, 0x7E, 0x7F, 0x80, 0xC3, 0xE2, 0xFF]

    /// A random scan case: a text of 0…`maxLength` bytes, plain printable ASCII except that
    /// about one byte in `rate` (never when 0) is from ``specials``; a start index; and the
    /// first flagged byte at or after it (or the length).
    static func scanCase(_ rng: inout SeededGenerator, maxLength: Int, rate: Int) -> (text: [UInt8], start: Int, first: Int) {
        let length = Int.random(in: 0...maxLength, using: &rng)
        let text: [UInt8] = (0..<length).map { _ in
            rate > 0 && Int.random(in: 0..<rate, using: &rng) == 0
                ? specials.randomElement(using: &rng) ?? 0 : UInt8.random(in: 0x20...0x7E, using: &rng)
        }
        let start = length == 0 ? 0 : Int.random(in: 0...length, using: &rng)
        return (text, start, text[start...].firstIndex(where: flagged) ?? length)
    }

    /// Random texts where each byte is plain ASCII with high probability, else one of the
    /// classes the scan stops at (control, `"`, `\`, ≥ 0x80, and the edges 0x1F/0x20/0x7F/0x80):
    /// the C scan stops at the first flagged byte, or with fewer than 16 bytes left, and skips
    /// only plain bytes; level 0 does not move.
    @Test(arguments: [Int32(0), 1, 2])
    func jsonScanStopsAtTheFirstFlaggedByte(level: Int32) {
        guard level <= pushseal_simd_level() else { return }
        var rng = SeededGenerator(seed: 0x15C_0000 + UInt64(level))
        for trial in 0..<3_000 {
            let (text, start, first) = Self.scanCase(&rng, maxLength: 160, rate: [0, 2, 20, 200][trial % 4])
            let length = text.count
            let stop = text.withUnsafeBufferPointer { p in pushseal_json_skip_plain_at_level(level, p.baseAddress, start, length) }
            if level == 0 {
                #expect(stop == start)
            } else {
                #expect(stop >= start && stop <= first, "trial \(trial): stop \(stop), first flagged \(first)")
                #expect(stop == first || length - stop < 16, "trial \(trial): stopped at \(stop) with \(length - stop) left")
            }
        }
    }

    /// The reader's word step (`ByteScan.plainASCIIExits`): its lowest set bit is the first byte
    /// of the word that leaves plain ASCII (below 0x20, `"`, `\`, or 0x80 and above), and it is
    /// zero exactly when there is none. Seeded words mixing plain and flagged bytes, flagged
    /// bytes next to each other (where a borrow runs upward), and every single-byte value.
    @Test func wordStepFindsTheFirstFlaggedByte() {
        func leaves(_ b: UInt8) -> Bool { b < 0x20 || b == 0x22 || b == 0x5C || b >= 0x80 }
        var rng = SeededGenerator(seed: 0xE817)
        let flagged: [UInt8] = [0x00, 0x01, 0x1F, 0x22, 0x5C, 0x80, 0xC3, 0xFF]
        var words: [[UInt8]] = (0...255).map { b in [UInt8](repeating: 0x61, count: 7) + [UInt8(b)] }
        words += (0...255).map { b in [UInt8(b)] + [UInt8](repeating: 0x61, count: 7) }
        for _ in 0..<20_000 {
            words.append((0..<8).map { _ in
                Int.random(in: 0..<4, using: &rng) == 0 ? flagged.randomElement(using: &rng) ?? 0 : UInt8.random(in: 0x20...0x7E, using: &rng)
            })
        }
        for word in words {
            let x = word.withUnsafeBufferPointer { p in p.baseAddress.map { ByteScan.load($0, at: 0) } ?? 0 }
            let exits = ByteScan.plainASCIIExits(x)
            let expected = word.firstIndex(where: leaves)
            if let expected {
                #expect(exits != 0 && exits.trailingZeroBitCount >> 3 == expected, "word \(word)")
            } else {
                #expect(exits == 0, "word \(word)")
            }
            #expect((exits != 0) == ByteScan.leavesPlainASCII(x), "word \(word)")
        }
    }

    /// The portable Swift scan (what non-x86 CPUs run; on x86-64 it only sees the C scan's
    /// stopping point): it skips only plain bytes and stops at a 16-byte block holding a
    /// flagged byte, or with fewer than 16 left. The full scan (C, then Swift) keeps the same
    /// contract.
    @Test func portableAndCombinedScansKeepTheContract() {
        var rng = SeededGenerator(seed: 0x15C_2000)
        for trial in 0..<4_000 {
            let (text, start, first) = Self.scanCase(&rng, maxLength: 200, rate: [0, 3, 30, 300][trial % 4])
            let length = text.count
            text.withUnsafeBufferPointer { p in
                guard let base = p.baseAddress else { return }
                for (name, stop) in [("portable", ByteScan.skipPlainASCII16Portable(base, from: start, end: length)),
                                     ("combined", ByteScan.skipPlainASCII16(base, from: start, end: length))] {
                    #expect(stop >= start && stop <= first, "\(name) trial \(trial): stop \(stop), first flagged \(first)")
                    #expect(length - stop < 16 || first < stop + 16, "\(name) trial \(trial): stopped at \(stop) before a plain block")
                }
            }
        }
    }

    /// Inputs that end exactly at an inaccessible page: any read past the end crashes the test
    /// process, so over-reads fail plain `swift test`, not only `make sanitize`. Every level,
    /// lengths 0–200, the C functions and the Swift code after them.
    @Test func nothingReadsPastTheEndOfItsInput() throws {
        #if canImport(Glibc)
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        guard let region = mmap(nil, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0),
              region != MAP_FAILED else {
            Issue.record("mmap failed: cannot place inputs before a guard page")
            return
        }
        defer { munmap(region, 2 * page) }
        #expect(mprotect(region + page, page, PROT_NONE) == 0)
        let guardPage = region.assumingMemoryBound(to: UInt8.self) + page
        var rng = SeededGenerator(seed: 0x6A2D)
        var out = [UInt8](repeating: 0, count: 400)
        for level in Int32(0)...pushseal_simd_level() {
            for length in 0...200 {
                let src = guardPage - length
                for k in 0..<length { src[k] = k % 7 == 0 ? 0x22 : UInt8.random(in: 0x20...0x7E, using: &rng) }
                let expected = WireBase64.encodeSecret(UnsafeRawBufferPointer(start: src, count: length))
                let consumed = out.withUnsafeMutableBufferPointer { pushseal_base64_encode_prefix_at_level(level, src, length, $0.baseAddress) }
                out.withUnsafeMutableBytes { o in
                    if let d = o.baseAddress { WireBase64.encodeTable(UnsafeRawPointer(src), from: consumed, to: length, into: d, at: consumed / 3 * 4) }
                }
                #expect(String(decoding: out[0..<WireBase64.encodedByteCount(length)], as: UTF8.self) == expected, "level \(level) length \(length)")
                // Base64 text of the same length ending at the guard page: the decoder reads up to it, never past.
                for k in 0..<length { src[k] = UInt8(ascii: "A") + UInt8(k % 26) }
                var sawSpecial: Int32 = 0
                let decoded = out.withUnsafeMutableBufferPointer { pushseal_base64_decode_prefix_at_level(level, src, length, $0.baseAddress, &sawSpecial) }
                #expect(decoded <= length && (level == 0 || length - decoded < 16), "level \(level) length \(length): decoded \(decoded)")
                // A text with no flagged byte: the scans run to the very end.
                for k in 0..<length { src[k] = 0x61 }
                let stop = pushseal_json_skip_plain_at_level(level, src, 0, length)
                _ = ByteScan.skipPlainASCII16Portable(src, from: stop, end: length)
                #expect(level == 0 || length - stop < 16)
            }
        }
        #endif
    }

    private func getenvString(_ name: String) -> String? {
        #if canImport(Glibc) || canImport(Darwin)
        guard let v = getenv(name) else { return nil }
        return String(cString: v)
        #else
        return nil
        #endif
    }
}
