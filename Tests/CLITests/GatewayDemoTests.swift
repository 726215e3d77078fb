import Foundation
import Testing

/// `make demo-gateway` (scripts/demo-gateway.sh) on the built tools, so the demo cannot rot: a
/// throwaway PostgreSQL, the native mock APNs, two push-gateway instances, Examples/gateway/backend.py
/// registering 20 emulated phones and sending to them, send.mjs sending three more, push-open on
/// every phone. The script checks each step itself (every notification accepted once, no plaintext
/// in the database, every payload decrypted by its phone's key and the pinned sender key) and exits
/// non-zero on the first failure.
@Suite struct GatewayDemoTests {
    static var postgresInstalled: Bool {
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []
        return versions.contains { FileManager.default.isExecutableFile(atPath: "/usr/lib/postgresql/\($0)/bin/initdb") }
    }
    static var gatewayBuilt: Bool {
        FileManager.default.isExecutableFile(atPath: KeysCLI.buildDirectory.appendingPathComponent("push-gateway").path)
    }

    @Test(.enabled(if: postgresInstalled, "PostgreSQL is not installed (scripts/install-deps.sh)"),
          .enabled(if: gatewayBuilt, "push-gateway is not built"))
    func demoRegistersSendsAndOpensOnEveryPhone() throws {
        let script = KeysCLI.repo.appendingPathComponent("scripts/demo-gateway.sh").path
        let r = try KeysCLI.run(script, ["--bin", KeysCLI.buildDirectory.path])
        #expect(r.status == 0, "demo-gateway: \(r.stderr.suffix(2000))")
        #expect(r.stdout.contains("final statuses (GET /v1/notifications/{id}): accepted 20\n"), "\(r.stdout)")
        #expect(r.stdout.contains("the mock accepted 23 requests, 23 distinct notifications, none twice\n"))
        let opened = r.stdout.split(separator: "\n").filter { $0.hasPrefix("   phone-") && $0.contains(": decrypted — ") }
        #expect(opened.count == 23, "\(r.stdout)")
        #expect(r.stdout.contains("   phone-07: decrypted — Hello phone-07 / Your order #1006 has shipped\n"))
        #expect(r.stdout.contains("   phone-03: decrypted — From Node / A second message for phone-03\n"))
    }
}
