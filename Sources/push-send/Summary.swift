import PushSealAPNs
import PushSealCLI
import PushSealSystem

/// The end-of-run summary: text for stderr, Prometheus text for `--metrics`.
enum Summary {
    static func text(_ c: OutcomeLog.Counts, statistics s: APNsClient.Statistics, mints: Int) -> String {
        let order = ["accepted", "rejected", "unregistered", "failed", "invalid"]
        var parts: [String] = []
        for o in order {
            guard let n = c.byOutcome[o], n > 0 else { continue }
            let reasons = c.byReason.filter { $0.key.hasPrefix(o + " ") }.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }
                .map { "\($0.key.split(separator: " ").dropFirst().filter { $0 != "-" }.joined(separator: " ")): \($0.value)" }
            parts.append("\(n) \(o == "invalid" ? "not sent (bad input)" : o)" + (reasons.isEmpty ? "" : " (" + reasons.joined(separator: ", ") + ")"))
        }
        // Reasons come from the server: shown escaped (no terminal control, one line).
        var out = "push-send: \(c.total) notifications: " + Output.terminalSafe(parts.isEmpty ? "none" : parts.joined(separator: ", ")) + "\n"
        let p50 = c.latency.quantile(0.5).map { format($0) } ?? "-"
        let p99 = c.latency.quantile(0.99).map { format($0) } ?? "-"
        out += "push-send: latency p50 \(p50) ms, p99 \(p99) ms; \(s.requests) requests\(s.refusedStreamsResent > 0 ? " (and \(s.refusedStreamsResent) refused streams resent)" : ""), \(s.connectionsOpened) connections opened, \(mints) provider token\(mints == 1 ? "" : "s") minted\n"
        if s.badDeviceTokenBurst || s.suppressedInvalidations > 0 {
            out += "push-send: warning: \(s.suppressedInvalidations) BadDeviceToken answers were not turned into invalidations"
                + (s.badDeviceTokenBurst ? " (they came in a burst)" : "") + "\nhint: check --environment (development tokens fail in production) and the topic\n"
        }
        return out
    }

    static func format(_ ms: Double) -> String {
        let scaled = (ms * 100).rounded() / 100
        return String(describing: scaled)
    }

    /// Writes the Prometheus text exposition (version 0.0.4) to `path` (via a temporary file and rename).
    static func writePrometheus(_ path: String, _ c: OutcomeLog.Counts, statistics s: APNsClient.Statistics, mints: Int) throws {
        var t = "# HELP pushsend_notifications_total Notifications by final outcome, HTTP status and reason.\n# TYPE pushsend_notifications_total counter\n"
        for (o, n) in c.byOutcome.sorted(by: { $0.key < $1.key }) {
            let reasons = c.byReason.filter { $0.key.hasPrefix(o + " ") }
            var rest = n
            // Only known reasons (or plain codes) become label values; the others are summed as `other`.
            var byLabel: [String: Int] = [:]
            for (k, v) in reasons {
                let f = k.split(separator: " ")
                let reason = f.count > 2 ? APNsReason.labelValue(f[2...].joined(separator: " ")) : ""
                byLabel["\(f.count > 1 ? f[1] : "-") \(reason)", default: 0] += v
                rest -= v
            }
            for (k, v) in byLabel.sorted(by: { $0.key < $1.key }) {
                let f = k.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: false)
                t += "pushsend_notifications_total{outcome=\"\(o)\",status=\"\(f[0])\",reason=\"\(f.count > 1 ? f[1] : "")\"} \(v)\n"
            }
            if rest > 0 { t += "pushsend_notifications_total{outcome=\"\(o)\",status=\"\(o == "accepted" ? "200" : "-")\",reason=\"\"} \(rest)\n" }
        }
        t += "# HELP pushsend_latency_seconds Time from queueing to the final outcome.\n# TYPE pushsend_latency_seconds summary\n"
        for q in [0.5, 0.99] {
            if let v = c.latency.quantile(q) { t += "pushsend_latency_seconds{quantile=\"\(q)\"} \(v / 1000)\n" }
        }
        t += "pushsend_latency_seconds_count \(c.latency.count)\n"
        t += "# HELP pushsend_requests_total HTTP/2 requests sent, retries included.\n# TYPE pushsend_requests_total counter\npushsend_requests_total \(s.requests)\n"
        t += "# HELP pushsend_refused_streams_resent_total Requests resent because APNs refused their stream (not processed; not in requests).\n# TYPE pushsend_refused_streams_resent_total counter\npushsend_refused_streams_resent_total \(s.refusedStreamsResent)\n"
        t += "# HELP pushsend_connections_opened_total Connections opened.\n# TYPE pushsend_connections_opened_total counter\npushsend_connections_opened_total \(s.connectionsOpened)\n"
        t += "# HELP pushsend_provider_tokens_minted_total Provider tokens (JWTs) minted.\n# TYPE pushsend_provider_tokens_minted_total counter\npushsend_provider_tokens_minted_total \(mints)\n"
        t += "# HELP pushsend_invalidations_suppressed_total BadDeviceToken answers not turned into invalidations.\n# TYPE pushsend_invalidations_suppressed_total counter\npushsend_invalidations_suppressed_total \(s.suppressedInvalidations)\n"
        // Atomically (a scraper never reads half a file), through a 0600 temporary file beside it.
        let slash = path.lastIndex(of: "/")
        let directory = slash.map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
        let name = slash.map { String(path[path.index(after: $0)...]) } ?? path
        do {
            try PrivateFile.replaceAtomically(Array(t.utf8), at: path, directory: directory,
                                              uniqueName: ".\(name).\(PrivateFile.processID).tmp")
        } catch let e as SystemError {
            throw CLIError(code: "cannotCreate", "cannot create the metrics file \(quoted(path)): \(Output.errorText(e.errno))", exitCode: .cannotCreate)
        }
    }
}
