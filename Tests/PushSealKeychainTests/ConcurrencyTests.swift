import Foundation
import PushSealCrypto
@testable import PushSealKeychain
import Testing

/// Multi-process tests with the `keychain-stress` helper executable from the build directory.
@Suite(.serialized) struct ConcurrencyTests {
    static var helper: URL { Fixture.buildDirectory.appendingPathComponent("keychain-stress") }

    static func spawn(_ args: [String], stdout: Pipe? = nil) throws -> Process {
        guard FileManager.default.isExecutableFile(atPath: helper.path) else {
            throw KeychainError(.keychainMissing, "keychain-stress is not built at \(helper.path): run `swift build --build-tests` first")
        }
        let p = Process()
        p.executableURL = helper
        p.arguments = args
        p.standardOutput = stdout ?? FileHandle.nullDevice
        let err = Pipe()
        p.standardError = err
        try p.run()
        return p
    }

    static func finish(_ p: Process) -> (status: Int32, stderr: String) {
        let data = (p.standardError as? Pipe)?.fileHandleForReading.readDataToEndOfFile() ?? Data()
        p.waitUntilExit()
        return (p.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    @Test func twoProcessesAdd200ItemsEach() throws {
        let (root, dir) = try Fixture.keychain()
        defer { try? FileManager.default.removeItem(at: root) }
        let a = try Self.spawn(["add", dir.path, "app", "200", "app"])
        let b = try Self.spawn(["add", dir.path, "ext", "200", "ext"])
        for p in [a, b] {
            let r = Self.finish(p)
            #expect(r.status == 0, "\(r.stderr)")
        }
        let kc = try Keychain(opening: dir, as: Fixture.ext)
        let all = try kc.copyMatching(ItemQuery(service: "stress"), limit: .all, returning: [.data])
        #expect(all.count == 400)
        let accounts = Set(all.map(\.attributes.account))
        for prefix in ["app", "ext"] {
            for i in 0..<200 { #expect(accounts.contains("\(prefix)-\(i)")) }
        }
        #expect(all.allSatisfy { Fixture.text($0.data) == $0.attributes.account + "-secret" })
    }

    @Test func twoProcessesUpdateOneItem500TimesEach() throws {
        let (root, dir) = try Fixture.keychain()
        defer { try? FileManager.default.removeItem(at: root) }
        let kc = try Keychain(opening: dir, as: Fixture.app)
        try kc.add(service: "stress", account: "shared", data: Fixture.secret("initial"))
        let a = try Self.spawn(["update", dir.path, "500", "A"])
        let b = try Self.spawn(["update", dir.path, "500", "B"])
        // Read while they write: every read must see a complete, authentic item.
        var reads = 0
        let query = ItemQuery(service: "stress", account: "shared")
        while a.isRunning || b.isRunning {
            let item = try kc.copyMatching(query, returning: [.data])[0]
            let value = Fixture.text(item.data) ?? ""
            #expect(value == "initial" || value.hasPrefix("A-") || value.hasPrefix("B-"), "\(value)")
            #expect(item.attributes.label == nil ? value == "initial" : item.attributes.label == value)
            reads += 1
        }
        for p in [a, b] {
            let r = Self.finish(p)
            #expect(r.status == 0, "\(r.stderr)")
        }
        #expect(reads > 0)
        let final = Fixture.text(try kc.copyData(query)) ?? ""
        #expect(final == "A-499" || final == "B-499")
        #expect(try Fixture.itemFiles(dir).count == 1)
    }

    @Test func sigkillDuringWritesLeavesOldOrNewState() throws {
        let (root, dir) = try Fixture.keychain()
        defer { try? FileManager.default.removeItem(at: root) }
        let kc = try Keychain(opening: dir, as: Fixture.app)
        try kc.add(service: "stress", account: "victim", accessibility: .afterFirstUnlock, data: Fixture.secret("victim-0-0"))
        let bystanders = (0..<5).map { "bystander-\($0)" }
        for name in bystanders { try kc.add(service: "other", account: name, data: Fixture.secret(name + "-secret")) }
        var g = SystemRandomNumberGenerator()
        var lastVictim = "victim-0-0"
        for round in 0..<200 {
            let out = Pipe()
            let p = try Self.spawn(["write-loop", dir.path], stdout: out)
            // Wait until it is writing, then kill it at a random moment.
            let ready = out.fileHandleForReading.availableData
            #expect(String(decoding: ready, as: UTF8.self).hasPrefix("ready"), "round \(round)")
            usleep(UInt32.random(in: 0...8000, using: &g))
            kill(p.processIdentifier, SIGKILL)
            p.waitUntilExit()
            #expect(p.terminationReason == .uncaughtSignal)
            // The keychain opens; the victim holds a value some writer wrote; bystanders are intact.
            let fresh = try Keychain(opening: dir, as: Fixture.app)
            let victim = Fixture.text(try fresh.copyData(ItemQuery(service: "stress", account: "victim"))) ?? ""
            #expect(victim == lastVictim || (victim.hasPrefix("victim-\(p.processIdentifier)-")), "round \(round): \(victim)")
            lastVictim = victim
            for name in bystanders {
                #expect(Fixture.text(try fresh.copyData(ItemQuery(service: "other", account: name))) == name + "-secret")
            }
            // Extra items the loop adds and deletes are either whole or absent.
            for item in (try? fresh.copyMatching(ItemQuery(service: "stress"), limit: .all, returning: [.data])) ?? [] {
                let text = Fixture.text(item.data) ?? ""
                #expect(text.hasPrefix("victim-") || text.hasPrefix("extra-"))
            }
        }
    }
}
