import Foundation
import Testing
@testable import PushSealAPNs
import PushSealTestSupport

/// Issue 26's acceptance: push-send SIGKILLed at random points of a 20,000-line run and resumed
/// until a run ends by itself, over both mocks. Counted against the mock's own record:
/// - every line has exactly one final outcome (an outcome that is not a resendable failure);
/// - no notification without a collapse id is accepted twice.
/// Every 7th line has a collapse id (those may be sent again after a kill, by design).
/// The seed is printed; `PUSHSEAL_CHAOS_SEED` replays a run.
@Suite("push-send chaos: SIGKILL and --resume over both mocks", .serialized)
struct PushSendChaosTests {
    static let count = 20_000

    static func input(_ path: String) throws {
        var text = ""
        text.reserveCapacity(count * 260)
        for n in 1...count {
            let collapse = n % 7 == 0 ? ",\"apns-collapse-id\":\"c\(n)\"" : ""
            text += "{\"recipient\":\"r\(n)\",\"line\":\(n),\"payload\":{\"aps\":{\"alert\":\"x\"}},\"headers\":{\"apns-push-type\":\"alert\",\"apns-topic\":\"\(MockAPNs.topic)\",\"apns-priority\":\"10\"\(collapse)},\"deviceToken\":\"\(token(n))\"}\n"
        }
        try text.write(toFile: path, atomically: true, encoding: .utf8)
    }

    @Test("SIGKILL at random points and --resume: one final outcome per line, none accepted twice without a collapse id",
          arguments: [MockAPNs.Kind.node, .native])
    func killAndResume(_ kind: MockAPNs.Kind) throws {
        if kind == .native, !MockAPNs.nativeAvailable { Issue.record("the native mock is not built: \(MockAPNs.nativeBuild)"); return }
        let seed = ProcessInfo.processInfo.environment["PUSHSEAL_CHAOS_SEED"].flatMap { UInt64($0) } ?? UInt64.random(in: 1...UInt64.max)
        var random = SeededRandom(seed: seed)
        var kills = 0, duplicates = 0, unconfirmed = 0
        for trial in 1...2 {
            let mock = try MockAPNs(kind: kind)
            defer { mock.stop() }
            let inputPath = mock.directory.appendingPathComponent("in.jsonl").path
            try Self.input(inputPath)
            let out = mock.directory.appendingPathComponent("out.jsonl").path
            var runs = 0
            var lastStatus: Int32 = -1
            while true {
                runs += 1
                let before = (try? FileManager.default.attributesOfItem(atPath: out)[.size] as? Int) ?? 0
                let p = try TestChild([Guarded.executable] + PushSend.base(mock) + ["--outcomes", out] + (runs > 1 ? ["--resume", out] : []) + [inputPath],
                                      stdout: .null, stderr: .null)
                // Up to two kills per trial, each once the file grew by 5-40 % of a whole run's outcomes.
                if runs <= 2 {
                    let threshold = before + Int(Double(Self.count * 230) * (0.05 + 0.35 * random.unit()))
                    while p.isRunning, ((try? FileManager.default.attributesOfItem(atPath: out)[.size] as? Int) ?? 0) < threshold {
                        usleep(2000)
                    }
                    if p.isRunning {
                        p.signal(SIGKILL)
                        kills += 1
                    }
                }
                let exit = p.wait()
                lastStatus = exit.status
                if exit.signal == nil { break }
                #expect(runs < 6, "a run ends by itself")
                if runs >= 6 { break }
            }
            #expect(lastStatus == 0 || lastStatus == 75, "the last run ends by itself: \(lastStatus)")
            // One final outcome per line.
            var final: [Int: Int] = [:]
            for o in Guarded.outcomes(out) {
                guard let n = o["line"] as? Int, let k = (o["outcome"] as? String).flatMap(APNsOutcome.Kind.init(rawValue:)) else { continue }
                if !APNsResumeRule.isResendable(kind: k, status: o["status"] as? Int, reason: o["reason"] as? String) { final[n, default: 0] += 1 }
                if o["reason"] as? String == "mayHaveBeenDelivered", o["resumed"] as? Bool == true { unconfirmed += 1 }
            }
            let missing = (1...Self.count).filter { final[$0] == nil }
            let doubled = final.filter { $0.value > 1 }
            #expect(missing.isEmpty, "trial \(trial): \(missing.count) lines without a final outcome (first \(missing.prefix(5)))")
            #expect(doubled.isEmpty, "trial \(trial): \(doubled.count) lines with two final outcomes")
            // Accepted twice, by the mock's record.
            mock.stop()
            var acceptedByToken: [String: Int] = [:]
            for r in try mock.records() where r["refused"] == nil && (r["status"] as? Int) == 200 {
                if let t = r["token"] as? String { acceptedByToken[t, default: 0] += 1 }
            }
            let twice = (1...Self.count).filter { $0 % 7 != 0 && (acceptedByToken[token($0)] ?? 0) > 1 }
            duplicates += twice.count
            #expect(twice.isEmpty, "trial \(trial) (seed \(seed)): \(twice.count) accepted twice without a collapse id")
        }
        print("chaos \(kind) seed \(seed): \(kills) kills, \(duplicates) accepted twice without a collapse id (\(kills > 0 ? Double(duplicates) / Double(kills) : 0) per kill), \(unconfirmed) marked mayHaveBeenDelivered on resume")
    }
}

/// SplitMix64 for the kill points (seeded: a failing run can be replayed).
struct SeededRandom {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    mutating func unit() -> Double { Double(next() >> 11) / Double(1 << 53) }
}
