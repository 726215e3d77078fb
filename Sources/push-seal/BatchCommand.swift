import PushSealSystem
import Dispatch
import Foundation
import PushSealCLI
import PushSealServerKeys
import PushSealSender
import PushSealServer

/// `push-seal batch`: JSON Lines in, JSON Lines out, streaming, every core, order preserved.
struct BatchCommand: OptionsCommand {
    /// Longest accepted input line, in bytes (1 MiB); longer lines fail alone.
    static let maxLineByteCount = 1 << 20
    /// Lines per chunk handed to the workers.
    static let chunkLineCount = BatchSealer.revalidationLineCount
    /// How often a running batch looks for a new sealing sender key: 1 s, in nanoseconds (issue 24: a promotion is followed within 5 s).
    static let senderKeyCheckNanoseconds: UInt64 = 1_000_000_000
    /// Input bytes per chunk at most (bounds memory with long lines).
    static let chunkByteCount = 8 << 20
    /// 130: stopped by SIGINT or SIGTERM after writing the lines read (`stopped after line N`),
    /// as push-send.
    static let interrupted = ExitCode(130)

    let path = ["batch"]
    static let jobs = Option.integer("--jobs", "N", "worker threads (default: every core)")
    static let deviceTokens = Option.flag("--device-tokens", "a line without its own \"deviceToken\" gets its recipient's token from the store (push-keys token add), looked up in bulk per chunk; a recipient without one fails that line (noDeviceToken)")
    static let environment = Option.text("--environment", "E", "with --device-tokens: the tokens of production (default) or development, as push-send --environment")
    static let firstLine = Option.text("--first-line", "N", "the line number of the first input line (default 1), an integer of at least 1: after 'stopped after line N', rerun on the rest of the input with --first-line N+1")

    let options: [OptionSpec] = SealOptionSpecs.keys + SealOptionSpecs.payload + OptionSpec.list(
        Self.jobs, Self.deviceTokens, Self.environment, Self.firstLine)
    let help = HelpText(
        overview: "seal a stream of notifications: one {\"recipient\", \"notification\"} per input line (optionally with \"deviceToken\", \"aps\", \"collapseId\"), one {\"recipient\", \"line\", \"id\", \"deviceToken\", \"payload\", \"headers\"} or {\"recipient\", \"line\", \"id\", \"deviceToken\", \"error\"} per output line, in input order (\"line\": the 1-based input line number; \"id\": the notification id as sealed, given or generated, for push-send's outcome lines (known on an error line only when the input gave it); \"deviceToken\" only when the line gave one)",
        usage: ["push-seal batch --app-id APP --keychain DIR [options] [LINES.jsonl | -]"],
        examples: [
            "push-seal batch --app-id com.example.app --keychain server-kc sends.jsonl > payloads.jsonl",
            "producer | push-seal batch --app-id com.example.app --keychain server-kc --fit - | apns-uploader",
            "push-seal batch --app-id com.example.app --registry postgresql:///pushseal --kek-file kek --device-tokens sends.jsonl | push-send --p8 AuthKey.p8 --key-id K --team-id T > outcomes.jsonl",
            "tail -n +5001 sends.jsonl | push-seal batch --app-id com.example.app --keychain server-kc --first-line 5001 - >> payloads.jsonl",
        ],
        exitCodes: SealExit.batchHelpLines,
        notes: """
        A bad line never stops the batch: its output line carries the error ({"code", "message"}) and the exit code is 2. "notification" has the shape of push-seal's NOTIFICATION.json (see 'push-seal --help'); it is what is sealed, its "aps" too (the sealed thread-id, category, interruption-level, sound the device trusts, docs/FORMAT.md §5).

        A LINE'S OWN FIELDS, each optional (null or absent: the command line's option is the default): "deviceToken" (hex digits of even length, copied to the output line and its error line for push-send); "collapseId" (apns-collapse-id, as --collapse-id); "aps", in clear, with APNs' names: "alert" (the line's whole fallback alert instead of --fallback-title/--fallback-body: "title", "subtitle", "body", or localized "title-loc-key", "title-loc-args", "subtitle-loc-key", "subtitle-loc-args", "loc-key", "loc-args" (arrays of strings); it needs a title or title-loc-key and a body or loc-key), "badge", "sound" (a name, or {"critical": 1, "name", "volume": 0 to 1}), "thread-id", "category", "interruption-level", "relevance-score", "target-content-id", "filter-criteria". They follow the rules of the options (--badge, --sound, …) and of the sealed aps; a bad one fails that line alone (invalidNotification, or emptyFallbackAlert). The clear aps is not authenticated: after a successful open the device takes thread-id, category, interruption level and sound from the notification's sealed "aps" (without one it drops the category, keeps the level at most active and plays a critical sound as the default sound).

        DEVICE TOKENS (--device-tokens [--environment production|development]): a line without its own "deviceToken" gets its recipient's token of that environment from the store (push-keys token add: a recipient, one app installation, has at most one per environment), looked up in bulk once per chunk (the registry: one query per chunk), so push-send can be handed push-seal's output as is. It is still one output line per input line, with the input's "line" number (never a line fanned out, so outcomes match input lines one to one): a recipient without a token gets an error line, code noDeviceToken, and is not sealed; a store that cannot be asked fails the chunk's lines with deviceTokenLookupFailed. A line's own "deviceToken" wins. Dead tokens: push-send's unregistered outcomes go to push-keys token invalidate.

        NOTIFICATION ID ("id" of each output line): the notification's id, the one sealed in the payload (the line's own, or the random one push-seal gives a notification without one), repeated beside the payload so push-send's outcome lines carry it with the recipient. It travels only in this local pipe or file and push-send's outcome lines: push-send sends "payload" and "headers" to APNs, never "id" or "recipient". Give notifications ids that say nothing about their content (the generated ones are random).

        Lines end in \\n or \\r\\n. An empty or whitespace-only line is skipped: it gets no output line, but it counts in the line numbers. A line longer than \(maxLineByteCount) bytes (not counting its line ending) fails alone, with the error code lineTooLong.

        Lines are sealed in chunks of at most \(chunkLineCount) lines; a chunk ends early when no more input is ready and the chunk before it is sealed (a quiet producer on a pipe), so a line is sealed and its output line written as soon as it arrives instead of waiting for \(chunkLineCount) lines or the end of the input. Output is unbuffered: each chunk is in the pipe or file when the next one is written. Memory stays flat for any input length (lines of at most \(maxLineByteCount) bytes; one chunk is read, one sealed and one written at a time). A progress line goes to stderr only when stderr is a terminal.

        Stopping: SIGINT or SIGTERM stops the reading; the complete lines already read are sealed and written, stderr says 'push-seal: stopped after line N', and the exit code is 130 (even when some lines failed). Every line up to N has exactly one output line and none after N has any (a partial last line is dropped), so a rerun on the rest of the input with --first-line N+1 keeps the line numbers of the outputs matching the input.

        Key checks: each recipient's keyset in the keychain is checked for changes at its first seal in each chunk (at most \(chunkLineCount) lines, fewer when input pauses; not at every seal), so a rotation, revoke or lock made meanwhile by push-keys is seen from the next chunk on at the latest. Seals are counted in durable blocks that grow while a key seals fast (at most 65,536): the stored count is an upper bound, never too low (see docs/keys.md).
        """,
        jsonHelp: "report an error that stops the batch as one {\"error\": {…}} line on stdout (a failed line is always reported in the output)"
    )

    struct Options: CommandOptions {
        /// LINES.jsonl, `nil` or `-` for standard input.
        let input: String?
        let seal: SealOptionGroup
        /// `--jobs N`, `nil` for every core.
        let jobs: Int64?
        /// `--first-line N`: the number of the first input line, `nil` for 1.
        let firstLine: Int64?
        /// `--device-tokens [--environment E]`: the environment whose tokens lines get, `nil` without the flag.
        let deviceTokens: DeviceTokenEnvironment?
        init(parsing a: Arguments) throws {
            input = try Positionals(a, max: 1).first
            typealias C = BatchCommand
            try requireInUsageOrder(a, [SealOptionSpecs.appID, SealOptionSpecs.keychain], helpCommand: "push-seal batch --help")
            seal = try SealOptionGroup(parsing: a)
            jobs = try a[C.jobs]
            let environment = try a[C.environment].map { v in
                guard let e = DeviceTokenEnvironment(rawValue: v) else { throw CLIError.usage("--environment must be production or development, got \(quoted(v))") }
                return e
            }
            if environment != nil, !a[C.deviceTokens] { throw CLIError.usage("--environment goes with --device-tokens") }
            deviceTokens = a[C.deviceTokens] ? environment ?? .production : nil
            if let v = a[C.firstLine] {
                guard let f = Int64(v) else {
                    throw CLIError.usage("--first-line needs an integer of at least 1, got \(quoted(v))", hint: BatchCommand.firstLineHint)
                }
                firstLine = f
            } else {
                firstLine = nil
            }
        }
        func validate() throws {
            try seal.validate()
            if let j = jobs, !(1...256).contains(j) { throw CLIError.usage("--jobs needs 1 to 256, got \(j)") }
            // Line numbers count up from here, so the largest leaves room for 2^62 lines.
            if let f = firstLine, !(1...(Int64(1) << 62)).contains(f) {
                throw CLIError.usage("--first-line needs an integer of at least 1, got \(f)", hint: BatchCommand.firstLineHint)
            }
        }
    }

    func run(_ o: Options, _ context: CommandContext) throws -> ExitCode {
        let (sealer, store, firstSenderKeyID) = try o.seal.sealerAndStore()
        var tokens: StoreDeviceTokens?
        if let environment = o.deviceTokens {
            guard let tokenStore = store as? any DeviceTokenStore else {
                throw CLIError.usage("--device-tokens needs a store with device tokens (a server keychain or a registry)")
            }
            tokens = StoreDeviceTokens(store: tokenStore, environment: environment)
        }
        var batch = BatchSealer(sealer: sealer, concurrency: o.jobs.map { Int($0) }, deviceTokens: tokens)
        // A promotion or rotation of the app's sender key (push-keys sender promote / rotate by
        // another process) is looked for at most once a second, before a chunk is dispatched:
        // when the primary changed, the sealer is rebuilt and the next chunk seals with the new
        // key (chunks are written in order, so no line after the switch uses the former key).
        var senderKeyID = firstSenderKeyID
        var senderCheckedAt = monotonicNanoseconds()
        var input = FileDescriptor.standardInput
        if let p = o.input, p != "-" {
            do {
                input = try FileDescriptor.open(p, .readOnly)
            } catch let e as SystemError {
                throw InputReader.openError(p, errno: e.errno)
            }
        }
        try Self.refuseDirectory(input, name: o.input.flatMap { $0 == "-" ? nil : $0 } ?? "standard input")
        var reader = JSONLinesReader(input: input, maxLineByteCount: BatchCommand.maxLineByteCount, firstLineNumber: Int(o.firstLine ?? 1))
        try Self.installStopSignals()
        let progress = Output.isTerminal(2)
        var total = 0
        var failed = 0
        var failuresByCode: [String: Int] = [:]
        var done = false
        var stopped = false
        // Pipeline: chunk N is sealed on the workers while chunk N+1 is read and chunk N-1
        // written here; at most three chunks are alive at once, so memory stays flat. A chunk
        // ends early when no more input is ready and the workers are done with the one before
        // (`sealed` wakes the reader then): with a quiet producer a line is sealed and written
        // at once; with fast input chunks grow up to the limit. The reader blocks for input
        // only with no chunk in flight and none begun, so every line read is written first.
        let sealed: WakeUpPipe
        do {
            sealed = try WakeUpPipe()
        } catch let e as SystemError {
            throw CLIError(code: "ioError", "cannot make a pipe: \(errnoText(e.errno))", exitCode: .ioError)
        }
        var inFlight: (group: DispatchGroup, result: ChunkResult, count: Int)?
        defer { inFlight?.group.wait() }
        while true {
            var lines: [BatchSealer.Line] = []
            if !done {
                lines.reserveCapacity(BatchCommand.chunkLineCount)
                var bytes = 0
                reading: while lines.count < BatchCommand.chunkLineCount && bytes < BatchCommand.chunkByteCount {
                    // Block only with nothing to seal or write; while a chunk is sealed, wait for
                    // input until it is done; with idle workers, take only what is ready now.
                    let waiting: JSONLinesReader.Waiting = inFlight != nil ? .untilWoken(sealed) : lines.isEmpty ? .block : .never
                    switch try reader.next(waiting) {
                    case .line(let read):
                        let line = BatchSealer.Line(number: read.number, bytes: read.bytes, overlongByteCount: read.overlongByteCount)
                        if line.isBlank { continue } // no output line, but it keeps its line number
                        bytes += line.bytes.count
                        lines.append(line)
                    case .notReady:
                        break reading
                    case .end:
                        done = true
                        break reading
                    case .stopped:
                        (done, stopped) = (true, true)
                        break reading
                    }
                }
            }
            var finished: (chunk: BatchSealer.Chunk, count: Int)?
            if let f = inFlight {
                f.group.wait()
                sealed.drain() // its one wake-up byte, written before the task ended
                finished = (f.result.chunk, f.count)
                inFlight = nil
            }
            if !lines.isEmpty {
                let now = monotonicNanoseconds()
                if now &- senderCheckedAt >= BatchCommand.senderKeyCheckNanoseconds {
                    senderCheckedAt = now
                    if let current = o.seal.currentSenderKeyID(in: store), current != senderKeyID {
                        // A store that cannot be read now (a writer holding it) keeps the current
                        // sealer; the next check, a second later, tries again.
                        if let fresh = try? o.seal.sealerAndStore() {
                            batch = BatchSealer(sealer: fresh.sealer, concurrency: o.jobs.map { Int($0) }, deviceTokens: tokens)
                            senderKeyID = fresh.senderKeyID
                        }
                    }
                }
                let group = DispatchGroup()
                let result = ChunkResult()
                let chunkLines = lines
                let chunkBatch = batch
                DispatchQueue.global().async(group: group) {
                    result.chunk = chunkBatch.seal(chunkLines)
                    sealed.wake()
                }
                inFlight = (group, result, lines.count)
            }
            if let (chunk, count) = finished {
                // Unbuffered: the chunk is in the pipe or file when this returns.
                try Output.writeStandardOutput(chunk.output)
                total += count
                failed += chunk.failureCount
                failuresByCode.merge(chunk.failuresByCode, uniquingKeysWith: +)
                if progress { Output.stderr("\rpush-seal: \(total) lines, \(failed) failed") }
            }
            if inFlight == nil && done { break }
        }
        if progress { Output.stderr("\n") }
        if stopped {
            // Every line up to N has its output line and none after it: a rerun with the rest
            // of the input and --first-line N+1 continues the numbering.
            if failed > 0 { Output.stderr("push-seal: \(failed) of \(total) lines failed (see their error lines)\n") }
            Output.stderr("push-seal: stopped after line \(reader.lineNumber)\n")
            return Self.interrupted
        }
        if failed > 0 {
            // The codes, most frequent first, and the hint of the most frequent code that has one
            // (a locked or unreadable keychain fails every line alike: say what to do once).
            let codes = failuresByCode.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }
            let summary = codes.map { "\($0.key): \($0.value)" }.joined(separator: ", ")
            var error = CLIError(code: "linesFailed", "\(failed) of \(total) lines failed (\(summary); see their error lines)",
                                 hint: codes.lazy.compactMap({ SealExit.hint(forFailureCode: $0.key) }).first, exitCode: SealExit.someLinesFailed)
            error.reportsInJSON = false  // every failed line already carries its error in the output
            throw error
        }
        return .success
    }

    /// The hint of a bad `--first-line`.
    static let firstLineHint = "line numbers start at 1; after 'push-seal: stopped after line N', rerun on the rest of the input with --first-line N+1"

    /// Turns SIGINT and SIGTERM into a clean stop (``StopSignals``).
    /// - Throws: `CLIError` 74 when the self-pipe cannot be made.
    static func installStopSignals() throws {
        do {
            try StopSignals.install()
        } catch let e as SystemError {
            throw CLIError(code: "ioError", "cannot set up the stop signals: \(errnoText(e.errno))", exitCode: .ioError)
        }
    }

    /// Refuses a directory as input before streaming, as `InputReader.readAll` does for the
    /// single seal: exit 66 `NAME is a directory` (reading one would fail later with EISDIR, 74).
    /// - Throws: `CLIError` 66 when `input` is a directory, 74 when `fstat` fails.
    static func refuseDirectory(_ input: FileDescriptor, name: String) throws {
        let status: PrivateFile.Status
        do {
            status = try PrivateFile.status(of: input)
        } catch let e as SystemError {
            throw CLIError(code: "ioError", "cannot read \(name): \(errnoText(e.errno))", exitCode: .ioError)
        }
        if status.kind == .directory {
            throw CLIError(code: "ioError", "\(name) is a directory", exitCode: .noInput)
        }
    }

    /// The output of one chunk, handed from the sealing task to the writer.
    /// `@unchecked Sendable` is safe: `chunk` is written once by the task and read only after
    /// the task's `DispatchGroup` was waited on.
    final class ChunkResult: @unchecked Sendable {
        var chunk = BatchSealer.Chunk(output: [], failureCount: 0)
    }
}
