import Foundation
import PushSealCrypto
import PushSealKeychain
@testable import PushSealKeyRecords
@testable import PushSealServerKeys
import Testing
import PushSealDeviceKeys

/// Times and durations out of 0 ... 9999-12-31T23:59:59Z are refused with `timeOutOfRange`
/// before anything is written: no operation traps on overflow, and a refused one leaves every
/// file of both keychains (items, audit log, lock files) byte for byte as it was.
@Suite struct TimeBoundsTests {
    let alice = "alice-iphone"
    let app = KeysFixture.appID
    static let max = KeyTime.maxTimeSeconds
    /// Values no time or duration may take, whatever the other argument is.
    static let extremes: [Int64] = [Int64.min, -1, KeyTime.maxTimeSeconds + 1, Int64.max]

    /// Every file below `dir` (relative path → bytes), for "nothing changed".
    static func snapshot(_ dir: URL) throws -> [String: [UInt8]] {
        var out: [String: [UInt8]] = [:]
        let base = dir.standardizedFileURL.path
        guard let walker = FileManager.default.enumerator(atPath: base) else { return out }
        for case let relative as String in walker {
            var isDirectory: ObjCBool = false
            let path = base + "/" + relative
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue else { continue }
            out[relative] = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
        }
        return out
    }

    @Test func theBoundIsTheSendersLastFourDigitYearSecond() throws {
        // 9999-12-31T23:59:59Z, computed from the calendar rather than copied.
        var utc = Calendar(identifier: .gregorian)
        utc.timeZone = try #require(TimeZone(identifier: "UTC"))
        let date = try #require(utc.date(from: DateComponents(year: 9999, month: 12, day: 31, hour: 23, minute: 59, second: 59)))
        #expect(KeyTime.maxTimeSeconds == Int64(date.timeIntervalSince1970))
        #expect(try KeyTime.time(Self.max - 10, plus: 10, named: "graceSeconds") == Self.max)
        #expect(try KeyTime.time(0, plus: 0, named: "graceSeconds") == 0)
        expectKeys(.timeOutOfRange) { try KeyTime.time(Self.max - 10, plus: 11, named: "graceSeconds") }
        expectKeys(.timeOutOfRange) { try KeyTime.time(Int64.max, plus: Int64.max, named: "graceSeconds") }
        expectKeys(.timeOutOfRange) { try KeyTime.time(1, plus: -1, named: "graceSeconds") }
        for t in Self.extremes {
            expectKeys(.timeOutOfRange) { try KeyTime.checkTime(t) }
            expectKeys(.timeOutOfRange) { try KeyTime.checkDuration(t, named: "graceSeconds") }
        }
    }

    @Test func everyOperationRefusesExtremeTimesAndChangesNothing() throws {
        let f = try KeysFixture()
        defer { f.cleanup() }
        let t0: Int64 = 1_767_225_600
        let first = try f.server.generate(appID: app, recipient: alice, now: t0)
        try f.device.importRecord(try f.server.exportRecord(appID: app, recipient: alice), now: t0)
        // A pending key to promote (the journal of an unfinished rotation records it).
        let pending = try f.server.rotate(appID: app, recipient: alice, promote: false, now: t0 + 1)
        let server = try Self.snapshot(f.serverDir), device = try Self.snapshot(f.deviceDir)
        let record = try f.server.exportRecord(appID: app, recipient: alice)

        for t in Self.extremes {
            expectKeys(.timeOutOfRange) { try f.server.generate(appID: app, recipient: "bob", now: t) }
            expectKeys(.timeOutOfRange) { try f.server.promote(appID: app, recipient: alice, keyID: pending.keyID, now: t) }
            expectKeys(.timeOutOfRange) { try f.server.revoke(appID: app, recipient: alice, keyID: first.keyID, now: t) }
            expectKeys(.timeOutOfRange) { try f.server.prune(now: t) }
            expectKeys(.timeOutOfRange) { try f.server.due(now: t) }
            expectKeys(.timeOutOfRange) { try f.server.rotate(appID: app, recipient: alice, device: f.device, now: t) }
            expectKeys(.timeOutOfRange) { try f.device.importRecord(record, now: t) }
            expectKeys(.timeOutOfRange) { try f.extensionKeyring().key(for: first.keyID, appID: app, now: t) }
            // The same values as durations.
            expectKeys(.timeOutOfRange) { try f.server.due(now: t0, rotationPeriodSeconds: t) }
            expectKeys(.timeOutOfRange) { try f.server.promote(appID: app, recipient: alice, keyID: pending.keyID, graceSeconds: t, now: t0) }
            expectKeys(.timeOutOfRange) { try f.server.rotate(appID: app, recipient: alice, graceSeconds: t, device: f.device, now: t0) }
            expectKeys(.timeOutOfRange) { try f.device.importRecord(record, graceSeconds: t, now: t0) }
        }
        // In range each, out of range together: the reviewer's 15250284452w, and one second too many.
        let weeks: Int64 = 15_250_284_452 * 604_800
        expectKeys(.timeOutOfRange) { try f.server.promote(appID: app, recipient: alice, keyID: pending.keyID, graceSeconds: weeks, now: t0) }
        expectKeys(.timeOutOfRange) { try f.server.rotate(appID: app, recipient: alice, graceSeconds: Self.max - t0 + 1, now: t0) }
        expectKeys(.timeOutOfRange) { try f.server.rotate(appID: app, recipient: alice, graceSeconds: 1, now: Self.max) }

        #expect(try Self.snapshot(f.serverDir) == server)
        #expect(try Self.snapshot(f.deviceDir) == device)
        #expect(try f.server.keyset(appID: app, recipient: alice).rotationKeyID == pending.keyID)

        // The last second itself is a valid notAfter.
        let ks = try f.server.promote(appID: app, recipient: alice, keyID: pending.keyID, graceSeconds: Self.max - t0 - 5, now: t0 + 5)
        #expect(ks.keys.first { $0.keyID == first.keyID }?.notAfter == Self.max)
        #expect(ks.primary?.keyID == pending.keyID)
    }

    @Test func aRefusedRotationWritesNoPendingKeyOnEitherSide() throws {
        let f = try KeysFixture()
        defer { f.cleanup() }
        try f.server.generate(appID: app, recipient: alice, now: 1_767_225_600)
        try f.device.importRecord(try f.server.exportRecord(appID: app, recipient: alice), now: 1_767_225_600)
        let server = try Self.snapshot(f.serverDir), device = try Self.snapshot(f.deviceDir)
        var steps: [RotationStep] = []
        expectKeys(.timeOutOfRange) {
            try f.server.rotate(appID: app, recipient: alice, graceSeconds: Int64.max, device: f.device, now: 1_767_225_700) { steps.append($0) }
        }
        #expect(steps.isEmpty)
        #expect(try Self.snapshot(f.serverDir) == server)
        #expect(try Self.snapshot(f.deviceDir) == device)
        #expect(try f.server.keyset(appID: app, recipient: alice).keys.count == 1)
    }

    /// A journal written by an earlier version (which accepted any grace) is refused on resume
    /// before anything is written, and `promote` with a grace in range finishes the rotation.
    @Test func aResumedRotationWithAnOverflowingJournalGraceIsRefusedAndPromoteFinishesIt() throws {
        let f = try KeysFixture()
        defer { f.cleanup() }
        let t0: Int64 = 1_767_225_600
        try f.server.generate(appID: app, recipient: alice, now: t0)
        try f.server.mutate(appID: app, recipient: alice) { ks, _ in
            ks.keys.append(ManagedKey(info: KeyInfo(keyID: "OldJrnl1", status: .pending, createdAt: t0),
                                      secret: SecretBytes(randomByteCount: AES256GCM.keyByteCount)))
            ks.rotation = Keyset.Rotation(keyID: "OldJrnl1", graceSeconds: Int64.max, phase: .added)
            return [KeyStore.AuditEvent(event: "add", time: t0)]
        }
        let before = try Self.snapshot(f.serverDir)
        do {
            try f.server.rotate(appID: app, recipient: alice, now: t0 + 10)
            Issue.record("a resumed rotation with an overflowing grace succeeded")
        } catch let e as KeysError {
            #expect(e.code == .invalidState)
            #expect(e.reason.contains("push-keys promote --key-id OldJrnl1 --grace"), "\(e.reason)")
        }
        #expect(try Self.snapshot(f.serverDir) == before)
        let ks = try f.server.promote(appID: app, recipient: alice, keyID: "OldJrnl1", graceSeconds: 86_400, now: t0 + 20)
        #expect(ks.primary?.keyID == "OldJrnl1" && ks.rotationKeyID == nil)
        #expect(ks.keys.first { $0.status == .decryptOnly }?.notAfter == t0 + 20 + 86_400)
    }

    /// A stored time out of range (written before times were checked) makes `due` saturate the
    /// age instead of trapping: the keyset is due by age.
    @Test func dueSaturatesTheAgeOfAStoredTimeOutOfRange() throws {
        let f = try KeysFixture()
        defer { f.cleanup() }
        try f.server.generate(appID: app, recipient: alice, now: 1_767_225_600)
        try f.server.mutate(appID: app, recipient: alice) { ks, _ in
            ks.keys[0].info.createdAt = Int64.min
            ks.keys[0].info.promotedAt = nil
            return [KeyStore.AuditEvent(event: "setCreatedAt", time: 0)]
        }
        let due = try f.server.due(now: Self.max)
        #expect(due.count == 1)
        #expect(due.first?.ageSeconds == Int64.max)
        #expect(due.first?.reasons == ["age"])
        #expect(KeyTime.age(at: 0, since: Int64.max) == -Int64.max)
        #expect(KeyTime.age(at: Self.max, since: Int64.min) == Int64.max)
        #expect(KeyTime.age(at: 100, since: 40) == 60)
    }

    @Test func keyRecordsWithTimesPastTheBoundAreMalformed() throws {
        let f = try KeysFixture()
        defer { f.cleanup() }
        try f.server.generate(appID: app, recipient: alice, now: 1_767_225_600)
        let text = String(decoding: try f.server.exportRecord(appID: app, recipient: alice).encoded(), as: UTF8.self)
        #expect(throws: Never.self) { try KeyRecord(decoding: Array(text.utf8)) }
        for member in ["createdAt", "promotedAt"] {
            let late = text.replacingOccurrences(of: "\"\(member)\":1767225600", with: "\"\(member)\":\(Self.max + 1)")
            #expect(late != text)
            expectKeys(.malformedRecord) { try KeyRecord(decoding: Array(late.utf8)) }
            let last = text.replacingOccurrences(of: "\"\(member)\":1767225600", with: "\"\(member)\":\(Self.max)")
            #expect(throws: Never.self) { try KeyRecord(decoding: Array(last.utf8)) }
        }
        let notAfter = text.replacingOccurrences(of: "\"sealCount\"", with: "\"notAfter\":\(Int64.max),\"sealCount\"")
        expectKeys(.malformedRecord) { try KeyRecord(decoding: Array(notAfter.utf8)) }
    }
}
