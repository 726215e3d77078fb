import Foundation
import Testing

/// `make bench-gateway` (scripts/bench-gateway.sh) at tiny sizes on the built tools, so the
/// benchmark cannot rot: it must run end to end (PostgreSQL, the mock, two gateways, the pipeline,
/// the load generator) and print its table with every notification accepted. No figure is
/// checked: timings are the benchmark's business, not a test's.
@Suite struct GatewayBenchTests {
    @Test(.enabled(if: GatewayDemoTests.postgresInstalled, "PostgreSQL is not installed (scripts/install-deps.sh)"),
          .enabled(if: GatewayDemoTests.gatewayBuilt, "push-gateway is not built"))
    func benchPrintsItsTableWithEveryNotificationAccepted() throws {
        let script = KeysCLI.repo.appendingPathComponent("scripts/bench-gateway.sh").path
        let r = try KeysCLI.run(script, ["--bin", KeysCLI.buildDirectory.path], env: [
            "BENCH_GATEWAY_N": "1000", "BENCH_GATEWAY_THROUGHPUT_N": "500", "BENCH_GATEWAY_LATENCY_SECONDS": "1",
            "BENCH_GATEWAY_RECIPIENTS": "3", "BENCH_GATEWAY_CLIENTS": "2",
        ])
        #expect(r.status == 0, "bench-gateway: \(r.stderr.suffix(2000))")
        let lines = r.stdout.split(separator: "\n").map(String.init)
        #expect(lines.first == "## push-gateway end to end, beside the push-seal batch | push-send pipeline", "\(r.stdout)")
        for format in ["v1", "v2"] {
            let pipeline = lines.first { $0.hasPrefix("| \(format): pipeline (") }
            #expect(pipeline?.contains("500 of 500 accepted") == true, "\(r.stdout)")
            let gateway = lines.first { $0.hasPrefix("| \(format): gateway, POSTs of 500") }
            #expect(gateway?.contains("500 of 500 accepted (accepted 500)") == true, "\(r.stdout)")
            #expect(gateway?.contains("% of the pipeline**") == true, "\(r.stdout)")
        }
        // The v2 rows are sealed in auth mode (the app has a sender key), the v1 rows are not HPKE.
        #expect(lines.contains { $0.hasPrefix("| v2: gateway") && $0.contains("payload format HPKE-AUTH-X25519-A256GCM;") }, "\(r.stdout)")
        #expect(lines.contains { $0.hasPrefix("| v1: gateway") && !$0.contains("HPKE") }, "\(r.stdout)")
        #expect(lines.contains { $0.hasPrefix("| latency: 500 requests (202 500)") }, "\(r.stdout)")
        #expect(lines.contains { $0.hasPrefix("| latency: the gateways' own time per request") && $0.hasSuffix("(500 requests) |") }, "\(r.stdout)")
        #expect(lines.contains { $0.hasPrefix("| latency: from the 202 to accepted") && $0.hasSuffix("(500 accepted) |") }, "\(r.stdout)")
        let rss = lines.first { $0.hasPrefix("| peak RSS (VmHWM) per instance, 1000 notifications") }
        #expect(rss?.contains("(1000 of 1000 accepted; accepted 1000)") == true, "\(r.stdout)")
        #expect(rss?.range(of: #"\| [0-9]+\.[0-9]/[0-9]+\.[0-9] MiB; the run took"#, options: .regularExpression) != nil, "\(r.stdout)")
    }
}
