import Foundation
import PushSealCrypto
import PushSealSystem
@testable import PushSealKeychain
import Testing

/// Multi-process tests with the `keychain-stress` helper executable from the build directory.
@Suite(.serialized) struct ConcurrencyTests {
    static var helper: URL { Fixture.buildDirectory.appendingPathComponent("keychain-stress") }

    /// A `keychain-stress` child (``ChildProcess``: posix_spawn, reaped by its pid); its
    /// standard error goes to a file read when it has ended, its standard output to `stdout`
    /// (a pipe's write end) or `/dev/null`.
    final class Helper {
        let child: ChildProcess
        private let errorFile: String
        private var ended: ChildProcess.Exit?

        init(_ args: [String], stdout: FileDescriptor? = nil) throws {
            guard FileManager.default.isExecutableFile(atPath: ConcurrencyTests.helper.path) else {
                throw KeychainError(.keychainMissing, "keychain-stress is not built at \(ConcurrencyTests.helper.path): run `swift build --build-tests` first")
            }
            errorFile = NSTemporaryDirectory() + "pushseal-kc-stress-\(UUID().uuidString).err"
            guard let child = ChildProcess.spawn([ConcurrencyTests.helper.path] + args,
                                                 stdout: stdout.map { .descriptor($0.rawValue) } ?? .null,
                                                 stderr: .file(errorFile)) else {
                throw KeychainError(.io, "cannot start \(ConcurrencyTests.helper.path)")
            }
            self.child = child
        }

        /// Whether the child still runs (reaps it once it has ended).
        var isRunning: Bool {
            if ended == nil { ended = child.poll() }
            return ended == nil
        }

        /// Waits for the end: the exit and what it wrote to standard error.
        func finish() -> (exit: ChildProcess.Exit, stderr: String) {
            let exit = ended ?? child.wait()
            ended = exit
            defer { unlink(errorFile) }
            return (exit, String(decoding: FileManager.default.contents(atPath: errorFile) ?? Data(), as: UTF8.self))
        }
    }

    @Test func twoProcessesAdd200ItemsEach() throws {
        let (root, dir) = try Fixture.keychain()
        defer { try? FileManager.default.removeItem(at: root) }
        let a = try Helper(["add", dir.path, "app", "200", "app"])
        let b = try Helper(["add", dir.path, "ext", "200", "ext"])
        for p in [a, b] {
            let r = p.finish()
            #expect(r.exit.status == 0 && r.exit.signal == nil, "\(r.stderr)")
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
        let a = try Helper(["update", dir.path, "500", "A"])
        let b = try Helper(["update", dir.path, "500", "B"])
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
            let r = p.finish()
            #expect(r.exit.status == 0 && r.exit.signal == nil, "\(r.stderr)")
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
            let out = try FileDescriptor.makePipe()
            let p = try Helper(["write-loop", dir.path], stdout: out.write)
            out.write.close()
            // Wait until it is writing, then kill it at a random moment.
            let ready = try out.read.read(upToCount: 5)
            out.read.close()
            #expect(String(decoding: ready, as: UTF8.self).hasPrefix("ready"), "round \(round)")
            usleep(UInt32.random(in: 0...8000, using: &g))
            p.child.send(SIGKILL)
            #expect(p.finish().exit.signal == SIGKILL)
            // The keychain opens; the victim holds a value some writer wrote; bystanders are intact.
            let fresh = try Keychain(opening: dir, as: Fixture.app)
            let victim = Fixture.text(try fresh.copyData(ItemQuery(service: "stress", account: "victim"))) ?? ""
            #expect(victim == lastVictim || (victim.hasPrefix("victim-\(p.child.pid)-")), "round \(round): \(victim)")
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
