import PushSealSystem
import PushSealAPNs
import PushSealCLI
import PushSealJSON
import PushSealServer

/// Exit codes of push-send beyond the common ones.
enum SendExit {
    /// 2: every line has an outcome, and some were rejected or unregistered by APNs.
    static let someRejected = ExitCode(2)
    /// 75 `EX_TEMPFAIL`: some notifications failed after the retries (no answer from APNs).
    static let someFailed = ExitCode(75)
    /// 130: stopped by SIGINT or SIGTERM after finishing the lines read (`stopped after line N`).
    static let interrupted = ExitCode(130)
    /// 3: stopped because `BadDeviceToken` came in a burst (a development token sent to
    /// production, or the wrong topic): the lines not sent end `failed` `notSent`.
    static let badDeviceTokenBurst = ExitCode(3)
}

/// `push-send`: the whole tool is this one command.
struct SendCommand: OptionsCommand {
    let path: [String] = []
    let options: [OptionSpec] = SendOptions.all
    let help = HelpText(
        overview: "send notifications to APNs over HTTP/2 with a provider token (ES256 JWT from your .p8 key): each input line is push-seal batch's output ({\"line\", \"payload\", \"headers\"}) with a \"deviceToken\"; or give one PAYLOAD.json and --device-token. Writes one outcome line per input line: {\"line\", \"deviceToken\", \"outcome\": \"accepted\" | \"rejected\" | \"unregistered\" | \"failed\", \"status\", \"reason\", \"apnsId\", \"apnsUniqueId\", \"timestamp\" (410, ms since 1970), \"attempts\", \"connection\", \"latencyMs\"}, in completion order",
        usage: [
            "push-send --p8 FILE --key-id ID --team-id ID [--environment production|development] [options] [LINES.jsonl | -]",
            "push-send --p8 FILE --key-id ID --team-id ID --device-token HEX --topic BUNDLE PAYLOAD.json",
        ],
        examples: [
            "push-seal batch --app-id com.example.app --keychain server-kc sends.jsonl | push-send --p8 AuthKey_ABC123DEFG.p8 --key-id ABC123DEFG --team-id DEF123GHIJ --outcomes out.jsonl",
            "push-send --p8 key.p8 --key-id ABC123DEFG --team-id DEF123GHIJ --resume out.jsonl --outcomes out.jsonl sealed.jsonl   # after an interruption",
            "push-send --p8 key.p8 --key-id ABC123DEFG --team-id DEF123GHIJ --environment development --device-token 7f3a... --topic com.example.app payload.json",
        ],
        exitCodes: [
            "0   every notification was accepted",
            "2   every line has an outcome, some rejected or unregistered by APNs (see their outcome lines)",
            "3   stopped: BadDeviceToken came in a burst (a development token sent to production, or the wrong topic); stderr says 'stopped after line N'",
            "64  usage error",
            "65  bad input: the .p8 is not a P-256 key, or a line cannot be sent (non-hex token, payload over 4096 bytes, unknown push type …: outcome \"failed\" with attempts 0, nothing sent for it)",
            "66  the input, .p8 or CA file is missing",
            "73  the outcome, invalidation or metrics file cannot be created",
            "74  I/O error reading the input or writing outcomes (sending stops at the first failed write: 'stopped after line N'; a closed standard output is quiet)",
            "75  some notifications failed after the retries (no final answer from APNs; see docs/apns.md), or --resume skipped lines that failed for good",
            "77  the .p8, outcome or invalidation file is not a regular file of yours with mode 0600, or is a symbolic link",
            "130 stopped by SIGINT or SIGTERM: nothing more is sent, the requests on a stream get their answer (up to --timeout), stderr says 'stopped after line N'",
        ],
        notes: """
        Retries follow docs/apns.md: 429 and 500/503 back off (503/500 on a new connection), ExpiredProviderToken is retried once with a new token, refused streams and streams after a GOAWAY are resent on another connection, other 4xx are final. A request that may have reached APNs is never sent twice unless it has a collapse id.
        Provider tokens: one per key, minted at most once per 20 minutes and renewed before it is 60 minutes old. A line's "line" member (push-seal batch writes it) is its number in the outcomes; else its line number in the input. With --resume FILE (streamed, any size): a line with a final outcome is skipped; a failure that never reached APNs (connectionFailed, notSent, 429/5xx …) is sent again; a line with an intent and no outcome (a killed run) may have reached APNs: sent again only with a collapse id, else recorded failed mayHaveBeenDelivered. A damaged or partial line is passed over.
        Invalidations: delete a token only if you registered it before the 410's timestamp. BadDeviceToken invalidates only after 10 accepted notifications and never in a burst (a development token sent to production, or a wrong topic).
        The summary (counts per outcome and reason, p50/p99 latency, requests, connections, provider tokens minted) goes to stderr at the end; progress to stderr only when it is a terminal.
        --rate N paces the sends (a token bucket: N a second on average, bursts of 1% of N after an idle time) to stay under a quota; latency counts from the paced send, so the summary's p50/p99 are the latency at that offered rate (with --in-flight notifications always in flight instead, latency is about in-flight / throughput).
        """,
        jsonHelp: "report an error that stops push-send as one {\"error\": {…}} object on stdout"
    )

    /// Installs the stop signals before anything else (reliability review R12: a SIGTERM in the
    /// first milliseconds is a clean stop, not exit 143), then parses and runs.
    func run(_ context: CommandContext) throws -> ExitCode {
        // SIGINT/SIGTERM set StopSignals.isRequested (no SA_RESTART: a blocked read returns EINTR).
        do {
            try StopSignals.install()
        } catch let e as SystemError {
            throw CLIError(code: "ioError", "cannot set up the stop signals: \(Output.errorText(e.errno))", exitCode: .ioError)
        }
        let options = try SendOptions(parsing: context.arguments)
        try options.validate()
        return try run(options, context)
    }

    func run(_ o: SendOptions, _ context: CommandContext) throws -> ExitCode {
        if let ca = o.caFile {
            do {
                _ = try FileDescriptor.open(ca, .readOnly)
            } catch let e as SystemError {
                // A stop signal interrupted the set-up (a blocked open returns EINTR): a clean stop, nothing sent.
                if StopSignals.isRequested {
                    Output.stderr("push-send: stopped after line 0\n")
                    return SendExit.interrupted
                }
                throw CLIError(code: "noInput", "cannot read the CA file \(quoted(ca)): \(Output.errorText(e.errno))", exitCode: .noInput)
            }
        }
        var pacer = o.rate.map { APNsRatePacer(ratePerSecond: Double($0), now: monotonicNanoseconds()) }
        let defaults = o.defaults
        let (p8, keyID, teamID) = (o.p8Path, o.keyID, o.teamID)

        // The assembly is PushSealServer's (the gateway's too): key, token cache, client.
        let provider = APNsProviderConfiguration(p8Path: p8, keyID: keyID, teamID: teamID, client: o.clientConfiguration)
        let tokens: ProviderTokenCache
        do {
            tokens = try provider.tokenCache()
        } catch let e as APNsError {
            throw Self.providerKeyError(e, path: p8)
        }

        // Single payload: PAYLOAD.json is the payload (or push-seal's {payload, headers}); checked before anything is sent.
        var single: APNsNotification?
        if let token = defaults.deviceToken, let path = o.input, path != "-", !path.hasSuffix(".jsonl") {
            single = try Self.singleNotification(path: path, token: token, defaults: defaults)
        }

        let resumePath = o.resumePath
        let resume = try resumePath.map(ResumeState.read)
        let outcomesPath = o.outcomesPath
        let outcomesFile = try outcomesPath.map { try Self.openAppend($0, what: "outcome") } ?? .standardOutput
        let invalidationsFile = try o.invalidationsPath.map { try Self.openAppend($0, what: "invalidation") }
        // Intents go to an --outcomes file only (standard output carries one outcome line per input line).
        let log = OutcomeLog(file: outcomesFile, invalidationsFile: invalidationsFile, progress: Output.isTerminal(2), intents: outcomesPath != nil)

        let client: APNsClient
        do {
            client = try APNsClient(configuration: provider.client, tokens: tokens, onOutcome: { log.add($0) },
                                    onInvalidation: { log.addInvalidation($0) }, afterOutcomes: { log.flush() },
                                    beforeSending: { log.recordIntents($0) })
        } catch let e as APNsError {
            throw CLIError(code: e.code.name, e.reason, exitCode: e.code == .badEndpoint ? .noInput : .failure)
        }
        // The first outcome that cannot be written stops the sending: nothing goes out unrecorded.
        log.onFirstFailure { client.stopSending() }
        // A stop signal reaches the client at once, also while this thread waits for a place in
        // the in-flight window (which only outcomes free): a watcher thread, ended by `watchEnd`.
        let watchEnd = try? WakeUpPipe()
        if let watchEnd {
            _ = withAllSignalsBlocked {
                startDetachedThread {
                    let file = FileDescriptor(borrowing: watchEnd.readEnd, path: "")
                    if case .stopped? = try? StopSignals.wait(for: file) { client.stopSending() }
                }
            }
        }
        defer { watchEnd?.wake() }
        func mustStop() -> Bool { StopSignals.isRequested || log.failedWrite != nil || client.statistics.sendingStopped }

        var lastLine = 0
        var resumed = ResumeCounts()
        if let single {
            if !mustStop() {
                try? client.send(single, tag: 1)
                lastLine = 1
            }
        } else {
            var input = FileDescriptor.standardInput
            if let p = o.input, p != "-" {
                do {
                    input = try FileDescriptor.open(p, .readOnly)
                } catch let e as SystemError {
                    client.finish()
                    throw InputReader.openError(p, errno: e.errno)
                }
            }
            var reader = JSONLinesReader(input: input, maxLineByteCount: SendInput.maxLineByteCount)
            var headerCache = SendInput.HeaderCache()
            var lineContext = OutcomeLog.LineContext()
            do {
                while !mustStop(), case .line(let read) = try reader.next(.block) {
                    let (physical, bytes) = (read.number, read.bytes)
                    if read.overlongByteCount != nil {
                        if resume?.isFinal(physical) != true {
                            log.addInvalid(line: physical, deviceToken: "", code: "lineTooLong", message: "the line is over \(SendInput.maxLineByteCount) bytes")
                        }
                        lastLine = physical
                        continue
                    }
                    if bytes.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) {
                        lastLine = physical
                        continue
                    }
                    // Not validated here: client.send checks the notification and throws the same errors.
                    switch SendInput.parse(bytes, physicalLine: physical, defaults: defaults, cache: &headerCache, validating: false, context: &lineContext) {
                    case .notification(let line, let n):
                        if let resume {
                            switch resume.decision(line, hasCollapseID: n.collapseID != nil) {
                            case .skip(let success):
                                resumed.skip(success: success, rejected: resume.isRejected(line))
                                lastLine = physical
                                continue
                            case .failMayHaveBeenDelivered:
                                log.addUnconfirmed(line: line, deviceToken: n.deviceToken, context: lineContext)
                                resumed.unconfirmed += 1
                                lastLine = physical
                                continue
                            case .send:
                                if resume.wasFailedOrInterrupted(line) { resumed.resent += 1 }
                            }
                        }
                        Self.pace(&pacer)
                        // A stop that came while this line was read or paced: it is not sent.
                        if mustStop() { break }
                        log.note(lineContext, tag: line)
                        do {
                            try client.send(n, tag: line)
                        } catch let e as APNsError {
                            log.addInvalid(line: line, deviceToken: n.deviceToken, code: e.code.name, message: e.reason, context: lineContext)
                        }
                    case .invalid(let line, let token, let code, let message):
                        if let resume, resume.isFinal(line) {
                            resumed.skip(success: false, rejected: false)
                        } else {
                            log.addInvalid(line: line, deviceToken: token, code: code, message: message, context: lineContext)
                        }
                    }
                    lastLine = physical
                }
            } catch {
                client.stopSending()
                client.finish()
                log.flush()
                throw error
            }
        }
        let stopped = mustStop()
        if stopped { client.stopSending() }
        client.finish()
        log.flush()
        if Output.isTerminal(2) { Output.stderr("\n") }
        let counts = log.snapshot
        let statistics = client.statistics
        if let why = log.failedWrite {
            // R1/R9: nothing was sent after the first outcome that could not be written.
            if log.failedOnBrokenPipe && outcomesPath == nil {
                var quiet = CLIError(code: "ioError", "cannot write the outcomes: \(why)", exitCode: .ioError)
                quiet.isSilent = true
                throw quiet
            }
            Output.stderr(Summary.text(counts, statistics: statistics, mints: tokens.mintCount))
            throw CLIError(code: "ioError", "cannot write the outcomes: \(why); stopped after line \(lastLine)",
                           hint: "the notifications sent before have their outcome or intent in the file; give it more room, then rerun with --resume FILE --outcomes FILE",
                           exitCode: .ioError)
        }
        Output.stderr(Summary.text(counts, statistics: statistics, mints: tokens.mintCount))
        if let resumePath { Output.stderr(resumed.summary(path: resumePath)) }
        if let m = o.metricsPath { try Summary.writePrometheus(m, counts, statistics: statistics, mints: tokens.mintCount) }
        if StopSignals.isRequested {
            Output.stderr("push-send: stopped after line \(lastLine)\n")
            return SendExit.interrupted
        }
        if statistics.badDeviceTokenBurst && statistics.sendingStopped {
            Output.stderr("push-send: stopped after line \(lastLine): BadDeviceToken came in a burst, so every token would fail the same way (a development token sent to production, or the wrong topic); the notifications not sent end failed notSent\n"
                          + "hint: check --environment and the topic, then rerun with --resume FILE --outcomes FILE\n")
            return SendExit.badDeviceTokenBurst
        }
        if (counts.byOutcome["failed"] ?? 0) > 0 || resumed.skippedFailed > 0 { return SendExit.someFailed }
        if (counts.byOutcome["invalid"] ?? 0) > 0 { return .dataError }
        if (counts.byOutcome["rejected"] ?? 0) + (counts.byOutcome["unregistered"] ?? 0) + resumed.skippedRejected > 0 { return SendExit.someRejected }
        return .success
    }

    /// The CLI error for a provider key that cannot be used: 66 missing or unreadable, 77 held
    /// to the private-file rules and breaking them (mode, owner, link), 65 not a P-256 key.
    static func providerKeyError(_ e: APNsError, path: String) -> CLIError {
        switch ProviderKey.fileFault(of: e, path: path) {
        case .unreadable:
            return CLIError(code: e.code.name, e.reason, hint: "give the path of the AuthKey_KEYID.p8 file Apple issued (developer.apple.com: Certificates, Identifiers & Profiles, Keys)",
                            exitCode: .noInput)
        case .notPrivate:
            return CLIError(code: "insecureKeyFile", e.reason, hint: "the .p8 signs for every user of the app: keep it a regular file of yours, mode 0600 (chmod 600 \(quoted(path)))",
                            exitCode: .noPermission)
        case .notAKey:
            return CLIError(code: e.code.name, e.reason, hint: "give the AuthKey_KEYID.p8 file Apple issued, with its key id and your team id", exitCode: .dataError)
        }
    }

    /// Waits until `pacer` (--rate) allows the next send, and takes it; at once without one.
    static func pace(_ pacer: inout APNsRatePacer?) {
        guard var p = pacer else { return }
        var now = monotonicNanoseconds()
        while !p.take(at: now), !StopSignals.isRequested {
            pauseThread(seconds: Double(p.nextAllowed(at: now) - now) / 1e9)
            now = monotonicNanoseconds()
        }
        pacer = p
    }

    /// One payload file (a payload object, or push-seal's `{"payload", "headers"}`) as a request.
    /// - Throws: `CLIError` 66 (missing), 65 (not a payload, or APNs would refuse it).
    static func singleNotification(path: String, token: String, defaults: SendInput.Defaults) throws -> APNsNotification {
        let bytes = try InputReader.readAll(path, limitByteCount: 1 << 20)
        var payload = bytes
        var headers: JSONObject?
        guard case .object(let o)? = try? JSONReader.parse(bytes) else {
            throw CLIError.dataError("\(quoted(path)) is not a JSON object (an APNs payload)")
        }
        if case .object(let h)? = o["headers"], o["payload"] != nil {
            headers = h
            switch SendInput.parse(bytes, physicalLine: 1, defaults: defaults) {
            case .notification(_, let n): return n
            case .invalid(_, _, _, let message): throw CLIError.dataError(message)
            }
        }
        while let last = payload.last, last == 0x0A || last == 0x0D || last == 0x20 { payload.removeLast() }
        switch SendInput.notification(deviceToken: token, payload: payload, headers: headers, defaults: defaults) {
        case .success(let n): return n
        case .failure(let e): throw CLIError(code: e.code, e.message, exitCode: .dataError)
        }
    }

    /// Opens `path` for appending by the private-file rules (created 0600 with `O_EXCL`
    /// semantics of ``PrivateFile``; an existing one must be a regular file of the user's, mode
    /// 0600, not a link), read-write so that its last byte can be read: a partial last line (a
    /// killed run, a full disk) is ended first, or the open fails.
    /// - Throws: `CLIError` 73 (cannot open or end the line), 77 (breaks the rules).
    static func openAppend(_ path: String, what: String) throws -> FileDescriptor {
        let file: FileDescriptor
        do {
            file = try PrivateFile.open(path, [.readWrite, .create, .append], what: "\(what) file")
        } catch let e as SystemError {
            if e.errno == 0 {
                throw CLIError(code: "insecureFile", "the \(what) file \(e.reason)", hint: "it holds device tokens: a regular file of yours, mode 0600 (chmod 600 \(quoted(path))), not a link",
                               exitCode: .noPermission)
            }
            throw CLIError(code: "cannotCreate", "cannot open the \(what) file \(quoted(path)): \(Output.errorText(e.errno))", exitCode: .cannotCreate)
        }
        do {
            let size = try PrivateFile.status(of: file).byteCount
            if size > 0, try file.byte(atOffset: size - 1) != 0x0A { try file.writeAll([0x0A]) }
        } catch let e as SystemError {
            throw CLIError(code: "cannotCreate", "cannot end the partial last line of the \(what) file \(quoted(path)): \(Output.errorText(e.errno))", exitCode: .cannotCreate)
        }
        return file
    }
}
