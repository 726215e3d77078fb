import PushSealSystem
import Testing

@Suite struct DecimalTextTests {
    @Test("DecimalText.write gives what String(_:) gives, from 0 to the extremes")
    func matchesString() {
        var values: [Int64] = [0, 1, -1, 9, 10, 99, 100, -105, 1_700_000_000_777, Int64.max, Int64.min]
        var p: Int64 = 1
        for _ in 0..<18 {
            p *= 10
            values += [p - 1, p, -p, -(p - 1)]
        }
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: DecimalText.maxByteCount) { buffer in
            guard let base = buffer.baseAddress else { return }
            for v in values {
                let n = DecimalText.write(v, to: base)
                #expect(String(decoding: UnsafeBufferPointer(start: base, count: n), as: UTF8.self) == String(v))
            }
        }
    }
}
