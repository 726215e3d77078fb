import PushSealSystem
import Testing
@testable import PushSealAPNs

@Suite("APNs client pacing, window and request headers")
struct APNsRatePacerTests {
    /// Sends `take(at:)` allows at each clock value, taking as many as it allows there.
    static func allowed(_ pacer: inout APNsRatePacer, at times: [UInt64]) -> [Int] {
        times.map { t in
            var n = 0
            while pacer.take(at: t) { n += 1 }
            return n
        }
    }

    @Test("--rate: a full burst at the start, then one send per interval; the time not used beyond the burst is not saved")
    func pacerFollowsTheRate() {
        let start: UInt64 = 5_000_000_000
        // 1000 a second with bursts of 10: an interval of 1 ms.
        var p = APNsRatePacer(ratePerSecond: 1000, burst: 10, now: start)
        #expect(Self.allowed(&p, at: [start]) == [10])
        // The bucket refills one send per interval.
        #expect(p.nextAllowed(at: start) == start + 1_000_000)
        let early = p.take(at: start + 999_999)
        #expect(!early)
        #expect(Self.allowed(&p, at: [start + 1_000_000, start + 1_500_000, start + 2_000_000, start + 4_000_000]) == [1, 0, 1, 2])
        // An idle second gives back the burst, not a second's worth of sends.
        #expect(Self.allowed(&p, at: [start + 1_004_000_000]) == [10])
        // Over any stretch the count stays within rate × time + burst.
        var q = APNsRatePacer(ratePerSecond: 20_000, now: start)
        #expect(q.burst == 200)
        var sent = 0
        for step in 0...1000 { sent += Self.allowed(&q, at: [start + UInt64(step) * 1_000_000])[0] }
        #expect(sent == 200 + 20_000)
    }

    @Test("--rate: a slow rate waits whole intervals; a clock value before the start counts as the start")
    func pacerSlowRate() {
        var p = APNsRatePacer(ratePerSecond: 2, now: 1_000)
        #expect(p.burst == 1)
        let first = p.take(at: 0), second = p.take(at: 1_000)
        #expect(first && !second)
        #expect(p.nextAllowed(at: 1_000) == 500_001_000)
        let before = p.take(at: 500_000_999), due = p.take(at: 500_001_000)
        #expect(!before && due)
    }

    @Test("the in-flight window: places come back once per round; a waiting sender is woken once a batch is free")
    func windowReleasesInBatches() {
        let w = APNsWindow(capacity: 32)
        #expect(w.resumeThreshold == 30)
        for _ in 0..<32 { #expect(w.tryAcquire(registeringWait: false)) }
        #expect(!w.tryAcquire(registeringWait: true), "full: the sender waits")
        w.noteFinished()
        #expect(w.count == 32, "given back at release(), not per outcome")
        #expect(w.release() == 0, "31 in flight: above the threshold, the sender sleeps on")
        #expect(w.count == 31)
        w.noteFinished()
        #expect(w.release() == 1, "30 in flight: the sender is woken")
        #expect(w.release() == 0, "nothing noted since")
        w.acquire()
        #expect(w.count == 31)
        let one = APNsWindow(capacity: 1)
        #expect(one.resumeThreshold == 0)
        one.acquire()
        #expect(!one.tryAcquire(registeringWait: true))
        one.noteFinished()
        #expect(one.release() == 1 && one.count == 0)
    }

    @Test("apns-id: random version 4 UUIDs in lower case, distinct")
    func uuids() {
        var g = SplitMix64(seed: 7)
        var seen = Set<String>()
        for _ in 0..<1000 {
            let u = APNsText.uuid(using: &g)
            #expect(APNsNotification.isUUID(u))
            let bytes = Array(u.utf8)
            #expect(bytes[14] == UInt8(ascii: "4"))
            #expect([UInt8(ascii: "8"), UInt8(ascii: "9"), UInt8(ascii: "a"), UInt8(ascii: "b")].contains(bytes[19]))
            #expect(u == u.lowercased())
            seen.insert(u)
        }
        #expect(seen.count == 1000)
    }

    @Test("device tokens: hex of any even length, either case")
    func hexTokens() {
        #expect(APNsText.isHex("00aAfF") && APNsText.isHex(String(repeating: "ab", count: 100)))
        #expect(!APNsText.isHex("") && !APNsText.isHex("abc") && !APNsText.isHex("12zz") && !APNsText.isHex("ab cd") && !APNsText.isHex("é1"))
    }

    @Test("the request header list: static names, values in order, :path and apns-id not indexed")
    func headerBlock() {
        var h = APNsHeaderBlock()
        h.reset()
        h.field(":path", index: false); h.append("/3/device/", "00ff")
        h.field("apns-expiration"); h.append(Int64(0))
        h.field("apns-priority"); h.append(Int64(-105))
        h.field("apns-topic"); h.append("com.example.app")
        let list = h.entries()
        #expect(list.map(\.0) == [":path", "apns-expiration", "apns-priority", "apns-topic"])
        #expect(list.map(\.1) == ["/3/device/00ff", "0", "-105", "com.example.app"])
        #expect(list.map(\.2) == [3, 2, 2, 2], "NO_COPY_NAME on all, NO_INDEX on :path")
        // Past the first buffers (16 fields, 1 KiB): grown, values intact.
        h.reset()
        let long = String(repeating: "ab", count: 700)
        for k in 0..<40 {
            h.field("apns-topic")
            if k % 2 == 0 { h.append(long) } else { h.append(Int64(k)) }
        }
        let grown = h.entries()
        #expect(grown.count == 40 && grown.enumerated().allSatisfy { $0.element.1 == ($0.offset % 2 == 0 ? long : String($0.offset)) })
    }
}
