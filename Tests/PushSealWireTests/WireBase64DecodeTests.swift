import PushSealSystem
import PushSealTestSupport
import Testing
@testable import PushSealWire
import PushSealCrypto

/// The fast table decoder (public text) against libsodium's constant-time decoder (keys):
/// the same bytes or the same refusal on every input.
@Suite("Wire format v1: fast base64 decoder agrees with libsodium")
struct WireBase64DecodeTests {

    /// Outcome of a decoder: bytes, or the error code.
    static func outcome(_ body: () throws -> [UInt8]) -> String {
        do { return "ok " + (try body()).map { String($0, radix: 16) }.joined(separator: ",") } catch let e as FormatError {
            return "error \(e.code.name)"
        } catch { return "error other" }
    }

    static func compare(_ text: [UInt8], seed: UInt64) {
        let fast = outcome { try text.withUnsafeBytes { try WireBase64.decode($0) } }
        let sodium = outcome { try text.withUnsafeBytes { try WireBase64.decodeSecret($0) } }
        #expect(fast == sodium, "seed \(seed): input \(String(decoding: text, as: UTF8.self).debugDescription)")
    }

    /// Random text of lengths 0–300 from a biased alphabet: digits of both alphabets, `=`,
    /// whitespace, NUL and other bytes — mostly invalid, exercising every rule.
    @Test func randomTextAgrees() {
        let seed: UInt64 = 0x5EED_0B64
        var rng = SeededGenerator(seed: seed)
        let pool = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/-_=  \t\r\n".utf8) + [0, 0x21, 0x2E, 0x7F, 0xC3, 0xFF]
        for length in 0...300 {
            for _ in 0..<8 {
                let text = (0..<length).map { _ in pool[Int(rng.next() % UInt64(pool.count))] }
                Self.compare(text, seed: seed)
            }
        }
    }

    /// Encodings of random bytes of lengths 0–300, in every spelling FORMAT.md §4 allows and
    /// with one character changed, dropped or added: both decoders agree on all of them.
    @Test func randomEncodingsAndTheirMutationsAgree() throws {
        let seed: UInt64 = 0xB64_2026
        var rng = SeededGenerator(seed: seed)
        let noise = Array("A/+_-= \n\u{0}!".utf8)
        for length in 0...300 {
            let bytes = (0..<length).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
            let standard = Array(WireBase64.encode(bytes).utf8)
            let urlSafe = standard.compactMap { c -> UInt8? in
                switch c {
                case UInt8(ascii: "+"): UInt8(ascii: "-")
                case UInt8(ascii: "/"): UInt8(ascii: "_")
                case UInt8(ascii: "="): nil
                default: c
                }
            }
            var wrapped: [UInt8] = []
            for (i, c) in standard.enumerated() {
                if i > 0, i % 16 == 0 { wrapped += [0x0D, 0x0A] }
                wrapped.append(c)
            }
            #expect(try standard.withUnsafeBytes { try WireBase64.decode($0) } == bytes)
            #expect(try urlSafe.withUnsafeBytes { try WireBase64.decode($0) } == bytes)
            #expect(try wrapped.withUnsafeBytes { try WireBase64.decode($0) } == bytes)
            for spelling in [standard, urlSafe, wrapped] where !spelling.isEmpty {
                var changed = spelling
                changed[Int(rng.next() % UInt64(changed.count))] = noise[Int(rng.next() % UInt64(noise.count))]
                var dropped = spelling
                dropped.remove(at: Int(rng.next() % UInt64(dropped.count)))
                var added = spelling
                added.insert(noise[Int(rng.next() % UInt64(noise.count))], at: Int(rng.next() % UInt64(added.count + 1)))
                for text in [spelling, changed, dropped, added] { Self.compare(text, seed: seed) }
            }
        }
    }
}
