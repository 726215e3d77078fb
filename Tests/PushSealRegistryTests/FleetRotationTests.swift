import Foundation
import Testing

/// Issue 24, "Tests": the whole fleet story on a throwaway PostgreSQL registry, with the built
/// tools as a backend and 50 emulated phones would use them. Each phone (a device keychain in a
/// temporary directory) makes its own key and pins the published sender keys; the backend mints
/// it a registration token (`push-keys registration-token`), takes the recipient from the
/// token's `sub` (what `POST /v1/devices` does; the token's checks are RegistrationTokenTests') and
/// stores the upload body with `push-keys register`. Then a staged rotation — `sender add` →
/// phones refresh their pins and upload again → `sender status` (50 of 50) → `sender promote`
/// without `--force` (it refuses before the refresh) → `sender retire` — with `push-seal batch`
/// sealing to every phone before, in between and after: push-open over every payload on its
/// phone shows zero fallbacks. Then the one-shot `sender rotate`: the phones that did not refresh
/// show the fallback the docs predict (`unknownSenderKey`), the ones that did decrypt.
@Suite(.serialized) struct FleetRotationTests {
    static let app = "com.example.app"
    static let phones = 50
    static let parallel = 4
    typealias Run = (status: Int32, stdout: String, stderr: String)

    /// Collects what parallel phone steps found (each step runs its tools on another thread).
    final class Findings: @unchecked Sendable {
        private let lock = NSLock()
        private var values: [Int: String] = [:]
        private var problems: [String] = []
        func set(_ i: Int, _ v: String) { lock.lock(); values[i] = v; lock.unlock() }
        func fail(_ s: String) { lock.lock(); problems.append(s); lock.unlock() }
        var all: [Int: String] { lock.lock(); defer { lock.unlock() }; return values }
        var failures: [String] { lock.lock(); defer { lock.unlock() }; return problems }
    }

    /// Runs `body(i)` for every phone, `parallel` at a time; returns what it set and the failures.
    static func eachPhone(_ body: @escaping @Sendable (Int, Findings) throws -> Void) -> Findings {
        let f = Findings()
        DispatchQueue.concurrentPerform(iterations: parallel) { lane in
            for i in stride(from: lane, to: phones, by: parallel) {
                do { try body(i, f) } catch { f.fail("phone \(i): \(error)") }
            }
        }
        return f
    }

    static func json(_ s: String) -> [String: Any] { (try? JSONSerialization.jsonObject(with: Data(s.utf8))) as? [String: Any] ?? [:] }

    /// The JWT's claims (its middle part, base64url).
    static func claims(_ jwt: String) -> [String: Any] {
        let parts = jwt.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ".")
        guard parts.count == 3 else { return [:] }
        var b64 = parts[1].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while b64.count % 4 != 0 { b64 += "=" }
        guard let data = Data(base64Encoded: b64) else { return [:] }
        return (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] ?? [:]
    }

    @Test func fiftyPhonesStagedRotationWithoutFallbacksThenOneShotRotate() throws {
        let dir = try TokenCLITests.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let keys = RegistryCLITests.tool("push-keys"), seal = RegistryCLITests.tool("push-seal"), open = RegistryCLITests.tool("push-open")
        let s = try TokenCLITests.storeArguments("registry", in: dir)
        let app = ["--app-id", Self.app]
        @Sendable func run(_ argv: [String], input: String? = nil) throws -> Run { try RegistryCLITests.run(argv, input: input) }
        @Sendable func path(_ name: String) -> String { dir.appendingPathComponent(name).path }
        @Sendable func phone(_ i: Int) -> [String] { ["--keychain", dir.appendingPathComponent("phone-\(i)").path, "--access-group", "T.shared", "--app-id", Self.app] }

        // The server: a sender key in the registry, its published records, a registration token secret.
        #expect(try run([keys, "sender", "generate"] + s + app).status == 0)
        let published0 = path("published-0.json")
        try Data(try run([keys, "sender", "export"] + s + app + ["--all"]).stdout.utf8).write(to: URL(fileURLWithPath: published0))
        let secret = path("token-secret")
        #expect(try run([keys, "registration-token", "new-secret", "--out", secret]).status == 0)

        // 50 phones: key made on the phone, sender keys pinned, token minted, upload stored for the token's sub.
        let provisioned = Self.eachPhone { i, f in
            let id = phone(i)
            guard try run([keys, "keychain", "init", "--keychain", id[1]]).status == 0 else { return f.fail("phone \(i): keychain init") }
            let record = try run([keys, "device", "generate"] + id)
            guard record.status == 0 else { return f.fail("phone \(i): device generate: \(record.stderr)") }
            guard try run([keys, "device", "pin-sender"] + id + [published0]).status == 0 else { return f.fail("phone \(i): pin-sender") }
            let token = try run([keys, "registration-token", "--secret-file", secret, "--recipient", "installation-\(i)"] + app)
            guard let sub = Self.claims(token.stdout)["sub"] as? String else { return f.fail("phone \(i): no token: \(token.stderr)") }
            try Self.upload(record.stdout, pinnedFrom: published0, to: path("upload-\(i).json"), phone: i)
            let stored = try run([keys, "register"] + s + app + ["--recipient", sub, path("upload-\(i).json")])
            guard stored.status == 0 else { return f.fail("phone \(i): register: \(stored.stderr)") }
            f.set(i, sub)
        }
        #expect(provisioned.failures.isEmpty, "\(provisioned.failures)")
        #expect(provisioned.all.count == Self.phones && Set(provisioned.all.values).count == Self.phones)

        // Seal one notification to every phone (one push-seal batch run per phase).
        func sealAll(_ phase: String) throws -> [Int: String] {
            let input = path("in-\(phase).jsonl")
            try Data((0..<Self.phones).map { #"{"recipient":"installation-\#($0)","notification":{"title":"\#(phase)","body":"to \#($0)"}}"# }
                .joined(separator: "\n").utf8 + [10]).write(to: URL(fileURLWithPath: input))
            let out = try run([seal, "batch"] + s + app + [input])
            #expect(out.status == 0, "\(out.stderr)")
            var payloads: [Int: String] = [:]
            for line in out.stdout.split(separator: "\n") {
                let o = Self.json(String(line))
                guard let r = o["recipient"] as? String, let n = Int(r.dropFirst("installation-".count)), let p = o["payload"] else { continue }
                let file = path("payload-\(phase)-\(n).json")
                try JSONSerialization.data(withJSONObject: p).write(to: URL(fileURLWithPath: file))
                payloads[n] = (p as? [String: Any])?["sender_key_id"] as? String ?? "none"
            }
            #expect(payloads.count == Self.phones, "\(phase): \(payloads.count) payloads")
            return payloads
        }
        /// push-open of `phase`'s payload on every phone: outcome and reason per phone.
        func openAll(_ phase: String) -> [Int: String] {
            let f = Self.eachPhone { i, f in
                let r = try run([open] + phone(i) + ["--no-replay-guard", path("payload-\(phase)-\(i).json")])
                let o = Self.json(r.stdout)
                f.set(i, "\(o["outcome"] as? String ?? "none") \(o["reason"] as? String ?? "-")")
            }
            #expect(f.failures.isEmpty, "\(f.failures)")
            return f.all
        }
        let before = try sealAll("before")
        let oldID = try #require(before[0])

        // add: published, not sealing; the phones have not refreshed: promote refused.
        let added = try run([keys, "sender", "add"] + s + app + ["--json"])
        let nextID = try #require((Self.json(added.stdout)["senderKey"] as? [String: Any])?["keyId"] as? String, "\(added.stderr)")
        let between = try sealAll("between")
        #expect(Set(before.values) == [oldID] && Set(between.values) == [oldID])
        #expect(try run([keys, "sender", "status"] + s + app).stdout.contains("next \(nextID) pinned by 0 of \(Self.phones) (0 %)"))
        #expect(try run([keys, "sender", "promote"] + s + app).status == 1)

        // The phones refresh (the "keys changed" push): pin what is published now, upload again.
        let published1 = path("published-1.json")
        try Data(try run([keys, "sender", "export"] + s + app + ["--all"]).stdout.utf8).write(to: URL(fileURLWithPath: published1))
        let refreshed = Self.eachPhone { i, f in
            guard try run([keys, "device", "pin-sender"] + phone(i) + [published1]).status == 0 else { return f.fail("phone \(i): pin-sender") }
            let body = path("upload-\(i).json")
            try Self.upload(nil, pinnedFrom: published1, to: body, phone: i)
            let again = try run([keys, "register"] + s + app + ["--recipient", "installation-\(i)", body])
            if again.status != 0 || !again.stdout.contains("already registered") { f.fail("phone \(i): upload again: \(again.stdout) \(again.stderr)") }
        }
        #expect(refreshed.failures.isEmpty, "\(refreshed.failures)")
        let status = try run([keys, "sender", "status"] + s + app)
        #expect(status.stdout.contains("next \(nextID) pinned by \(Self.phones) of \(Self.phones) (100 %); pins not reported by 0"), "\(status.stdout)")

        // promote without --force (every active registration pinned it), seal, retire, seal.
        let promoted = try run([keys, "sender", "promote"] + s + app)
        #expect(promoted.status == 0, "\(promoted.stderr)")
        let after = try sealAll("after")
        #expect(try run([keys, "sender", "retire"] + s + app).status == 0)
        let retired = try sealAll("retired")
        #expect(Set(after.values) == [nextID] && Set(retired.values) == [nextID])

        // Zero fallbacks on any phone, over every payload of every phase.
        for phase in ["before", "between", "after", "retired"] {
            let outcomes = openAll(phase)
            let fallbacks = outcomes.filter { !$0.value.hasPrefix("decrypted") }
            #expect(outcomes.count == Self.phones && fallbacks.isEmpty, "\(phase): \(fallbacks.sorted { $0.key < $1.key })")
        }

        // One-shot rotate: switches at once. Half the phones refresh after it, half do not.
        #expect(try run([keys, "sender", "rotate"] + s + app).status == 0)
        let published2 = path("published-2.json")
        try Data(try run([keys, "sender", "export"] + s + app + ["--all"]).stdout.utf8).write(to: URL(fileURLWithPath: published2))
        let halfRefreshed = Self.eachPhone { i, f in
            guard i % 2 == 0 else { return }
            if try run([keys, "device", "pin-sender"] + phone(i) + [published2]).status != 0 { f.fail("phone \(i): pin-sender") }
        }
        #expect(halfRefreshed.failures.isEmpty, "\(halfRefreshed.failures)")
        let rotated = try sealAll("rotated")
        #expect(Set(rotated.values).count == 1 && !Set(rotated.values).contains(nextID))
        let outcomes = openAll("rotated")
        for i in 0..<Self.phones {
            let expected = i % 2 == 0 ? "decrypted decrypted" : "original unknownSenderKey"
            #expect(outcomes[i] == expected, "phone \(i) (\(i % 2 == 0 ? "refreshed" : "not refreshed")): \(outcomes[i] ?? "none")")
        }
    }

    /// Writes the upload body: `record` (the device's registration record; `nil`: keep the one
    /// already in `file`), the phone's APNs device token, and the sender key ids of the records
    /// in `published` as `pinnedSenderKeyIds`.
    static func upload(_ record: String?, pinnedFrom published: String, to file: String, phone: Int) throws {
        let registration: Any
        if let record {
            registration = try JSONSerialization.jsonObject(with: Data(record.utf8))
        } else {
            registration = try #require(Self.json(try String(contentsOfFile: file, encoding: .utf8))["registration"])
        }
        let pins = try String(contentsOfFile: published, encoding: .utf8).split(separator: "\n").compactMap { Self.json(String($0))["senderKeyId"] as? String }
        let token = String(format: "%064x", phone + 1)
        let body: [String: Any] = ["registration": registration, "apnsDeviceToken": token, "apnsEnvironment": "production", "pinnedSenderKeyIds": pins]
        try JSONSerialization.data(withJSONObject: body).write(to: URL(fileURLWithPath: file))
    }
}
