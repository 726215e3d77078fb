import PushSealSystem
import PushSealTestSupport
import Testing

@Suite struct MemoryCopyTests {
    /// Every count 0-40 at several source and destination offsets: exactly `count` bytes land,
    /// in order, and the bytes around the destination stay as they were (the inline paths for
    /// 1-3, 4-7 and 8-16 bytes use overlapping stores, so an off-by-one would show here).
    @Test func copiesExactlyCountBytes() {
        var rng = SeededGenerator(seed: 0xC0B1)
        for count in 0...40 {
            for (from, to) in [(0, 0), (1, 3), (7, 5), (13, 2)] {
                let source = (0..<(from + count + 8)).map { _ in UInt8.random(in: 0...255, using: &rng) }
                var destination = [UInt8](repeating: 0xAA, count: to + count + 8)
                source.withUnsafeBytes { s in
                    destination.withUnsafeMutableBytes { d in
                        guard let sb = s.baseAddress, let db = d.baseAddress else { return }
                        Memory.copy(db + to, from: sb + from, count: count)
                    }
                }
                #expect(Array(destination[to..<(to + count)]) == Array(source[from..<(from + count)]), "count \(count), offsets \(from)/\(to)")
                #expect(destination[..<to].allSatisfy { $0 == 0xAA } && destination[(to + count)...].allSatisfy { $0 == 0xAA },
                        "count \(count), offsets \(from)/\(to): wrote outside the destination")
            }
        }
    }
}
