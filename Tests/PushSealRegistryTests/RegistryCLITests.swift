import PushSealWire
import PushSealSystem
import Foundation
import PushSealCrypto
import PushSealRegistry
import Testing

/// `push-keys` and `push-seal` with `--registry` / `PUSHSEAL_REGISTRY`: the documented flow and exit codes.
@Suite struct RegistryCLITests {
    static func tool(_ name: String) -> String { Registry.buildDirectory.appendingPathComponent(name).path }

    /// Runs a tool with extra environment; stdin from `input` (a file path) or /dev/null.
    static func run(_ argv: [String], env: [String: String] = [:], input: String? = nil) throws -> (status: Int32, stdout: String, stderr: String) {
        var all = env.map { "\($0.key)=\($0.value)" }
        let base = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("PUSHSEAL_") }
        all += base.map { "\($0.key)=\($0.value)" }
        if let input { return try spawn(["/bin/sh", "-c", "exec \"$@\" < \"$0\"", input] + argv, environment: all) }
        return try spawn(argv, environment: all)
    }

    @Test func theDocumentedFlowAndExitCodes() throws {
        let server = try PostgresServer.sharedServer()
        let cs = try server.createDatabase()
        let dir = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("pushseal-regcli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        defer { try? FileManager.default.removeItem(at: dir) }
        let keys = Self.tool("push-keys"), seal = Self.tool("push-seal")
        let kek = dir.appendingPathComponent("kek").path
        let env = ["PUSHSEAL_REGISTRY": cs, "PUSHSEAL_KEK_FILE": kek]

        #expect(try Self.run([keys, "list"], env: ["PUSHSEAL_REGISTRY": cs]).status == 78, "no schema yet: run migrate")
        #expect(try Self.run([keys, "registry", "migrate"], env: env).stdout.contains("applied \(RegistrySchema.currentVersion)"))
        #expect(try Self.run([keys, "registry", "new-kek", "--out", kek]).status == 0)
        #expect(try Self.run([keys, "registry", "new-kek", "--out", kek]).status == 73, "never overwritten")
        let generated = try Self.run([keys, "generate", "--registry", cs, "--kek-file", kek, "--app-id", "com.example.app", "--recipient", "alice"])
        #expect(generated.status == 0)
        let input = dir.appendingPathComponent("lines.jsonl").path
        _ = FileManager.default.createFile(atPath: input, contents: Data("{\"recipient\":\"alice\",\"notification\":{\"title\":\"hi\",\"body\":\"there\"}}\n".utf8))
        let batch = try Self.run([seal, "batch", "--app-id", "com.example.app"], env: env, input: input)
        #expect(batch.status == 0 && batch.stdout.contains("\"encrypted_data\"") && batch.stdout.contains(generated.stdout.trimmingCharacters(in: .whitespacesAndNewlines)))
        let list = try Self.run([keys, "list", "--json"], env: env)
        #expect(list.status == 0 && list.stdout.contains("\"sealCount\":1024"))
        // Both stores at once is a usage error; an unreachable database is 69; a wrong KEK 77.
        #expect(try Self.run([keys, "list", "--registry", cs, "--keychain", dir.path]).status == 64)
        let down = try Self.run([keys, "list", "--registry", "host=\(dir.path)/nothing user=x dbname=x"])
        #expect(down.status == 69 && down.stderr.contains("push-keys: error: cannot connect to the registry"))
        let other = dir.appendingPathComponent("other").path
        #expect(try Self.run([keys, "registry", "new-kek", "--out", other]).status == 0)
        #expect(try Self.run([keys, "list", "--kek-file", other], env: ["PUSHSEAL_REGISTRY": cs]).status == 77)
        chmod(kek, 0o644)
        #expect(try Self.run([keys, "list"], env: env).status == 77, "a KEK file others can read is refused")
        chmod(kek, 0o600)
        // Rewrap, then the old KEK is refused and the new one seals.
        #expect(try Self.run([keys, "registry", "rewrap", "--kek-file", kek, "--new-kek-file", other], env: ["PUSHSEAL_REGISTRY": cs]).stdout == "1\n")
        #expect(try Self.run([seal, "batch", "--app-id", "com.example.app"], env: env, input: input).status == 77)
        #expect(try Self.run([seal, "batch", "--app-id", "com.example.app", "--kek-file", other], env: ["PUSHSEAL_REGISTRY": cs], input: input).status == 0)
        // Out to a keychain and back.
        let kc = dir.appendingPathComponent("kc").path
        #expect(try Self.run([keys, "registry", "export", "--keychain", kc, "--kek-file", other], env: ["PUSHSEAL_REGISTRY": cs]).stdout == "com.example.app\talice\n")
        let fromFile = try Self.run([keys, "list", "--keychain", kc, "--json"])
        #expect(fromFile.status == 0 && fromFile.stdout.contains("\"sealCount\":2048"))
    }
}
