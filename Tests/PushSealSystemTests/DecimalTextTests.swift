import PushSealSystem
import Testing

@Suite struct DecimalTextTests {
    /// 0, ±1, the extremes, a time stamp, and every power of ten with its neighbours.
    static let values: [Int64] = {
        var values: [Int64] = [0, 1, -1, 9, 10, 99, 100, -105, 1_700_000_000, 1_700_000_000_777, Int64.max, Int64.min]
        var p: Int64 = 1
        for _ in 0..<18 {
            p *= 10
            values += [p - 1, p, -p, -(p - 1)]
        }
        return values
    }()

    @Test("DecimalText.write gives what String(_:) gives, from 0 to the extremes")
    func matchesString() {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: DecimalText.maxByteCount) { buffer in
            guard let base = buffer.baseAddress else { return }
            for v in Self.values {
                let n = DecimalText.write(v, to: base)
                #expect(String(decoding: UnsafeBufferPointer(start: base, count: n), as: UTF8.self) == String(v))
            }
        }
    }

    @Test("DecimalText.write(_:endingAt:) ends its digits just before the end and writes nothing else")
    func endingAtMatchesString() {
        for v in Self.values {
            var buffer = [UInt8](repeating: 0xAA, count: DecimalText.maxByteCount + 4)
            let n = buffer.withUnsafeMutableBytes { b -> Int in
                guard let base = b.baseAddress else { return 0 }
                return DecimalText.write(v, endingAt: base + DecimalText.maxByteCount + 2)
            }
            let end = DecimalText.maxByteCount + 2
            #expect(String(decoding: buffer[(end - n)..<end], as: UTF8.self) == String(v))
            #expect(buffer[..<(end - n)].allSatisfy { $0 == 0xAA } && buffer[end...].allSatisfy { $0 == 0xAA })
        }
    }
}
