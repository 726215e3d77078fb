import PushSealCLI
import PushSealJSON
import PushSealKeyRecords
import PushSealServer
import PushSealServerKeys
import PushSealSystem

/// `push-keys token add / list / invalidate / remove`: the APNs device tokens of a server store (a server
/// keychain or the registry, both ``DeviceTokenStore``s), looked up by `push-seal batch
/// --device-tokens` and cleaned up from `push-send`'s outcome lines.
enum TokenCommands {
    static let all: [any Command] = [TokenAddCommand(), TokenListCommand(), TokenInvalidateCommand(), TokenRemoveCommand()]

    /// The store of the options, as a device token store.
    /// - Throws: `CLIError` 64 for a store without device tokens.
    static func open(_ options: KeyStoreOptions) throws -> any DeviceTokenStore {
        guard let store = try options.open() as? any DeviceTokenStore else {
            throw CLIError.usage("this store holds no device tokens: give a server keychain (--keychain DIR) or a registry (--registry URI)")
        }
        return store
    }

    /// ``keyMapErrors(_:)`` with `invalidDeviceToken` as `exit` (64 for an argument, 65 for input data).
    static func mapErrors<R>(badToken exit: ExitCode, _ body: () throws -> R) throws -> R {
        do {
            return try keyMapErrors(body)
        } catch let e as CLIError where e.code == KeysError.Code.invalidDeviceToken.name {
            throw CLIError(code: e.code, e.message, hint: e.hint, exitCode: exit)
        }
    }

    static func json(_ t: DeviceToken) -> JSONValue {
        .object(JSONObject([("appId", .string(t.appID)), ("recipient", .string(t.recipient)), ("environment", .string(t.environment.rawValue)),
                            ("token", .string(t.token)), ("registeredAt", .integer(t.registeredAtMs))]))
    }

    static let environmentOption = Option.text("--environment", "E", "production or development: the APNs environment the token is from (the app's aps-environment entitlement) (required)")

    /// `--environment E`.
    /// - Throws: `CLIError` 64 for another value.
    /// `--registered-at MS` when its unit is plausible (issue 26, token hygiene): a registration
    /// time is compared with APNs' 410 timestamps in milliseconds, and a value in another unit
    /// silently decides which tokens a 410 removes. Refused: 10^9 ≤ MS < 10^11 (a Unix time in
    /// seconds since 2001 read as ms lands in 1970-1973) and MS ≥ 10^14 (microseconds or
    /// nanoseconds read as ms land past the year 5138). Smaller values stay accepted (tests and
    /// replays use small clocks); so does every real time in ms from 1973 to 5138.
    /// - Throws: `CLIError.usage` naming the unit it looks like, with the corrected value as the hint.
    static func checkedRegisteredAt(_ ms: Int64) throws -> Int64 {
        if ms >= 1_000_000_000 && ms < 100_000_000_000 {
            throw CLIError.usage("--registered-at \(ms) looks like seconds since 1970, not milliseconds (as ms it is in \(1970 + ms / 31_557_600_000))",
                                 hint: "--registered-at \(ms)000")
        }
        if ms >= 100_000_000_000_000 {
            throw CLIError.usage("--registered-at \(ms) looks like microseconds or nanoseconds since 1970, not milliseconds",
                                 hint: "--registered-at \(ms / 1000)  (from microseconds)")
        }
        return ms
    }

    static func environment(_ a: Arguments, required: Bool) throws -> DeviceTokenEnvironment? {
        guard let v = required ? try a.required(environmentOption) : a[environmentOption] else { return nil }
        guard let e = DeviceTokenEnvironment(rawValue: v) else { throw CLIError.usage("--environment must be production or development, got \(quoted(v))") }
        return e
    }

    static let storeNote = "STORE: a server keychain (--keychain DIR; no IDENTITY: the server identity, access group pushseal.server): one item per recipient, service pushseal.device-tokens:APP, account = recipient. Or a registry (--registry URI, schema version 4): table pushseal_device_tokens. A recipient (one app installation) has at most one token per environment, and a token one recipient per app. Audited like key changes (addDeviceToken, removeDeviceToken lines with the token, environment, registeredAt and the reason). No key-encryption key is needed (a --kek-file given is still checked). See docs/keys.md \"Device tokens\"."

    static func exitCodes(usage: [String], dataError: String? = nil, noInput: String? = nil, ioError: String = "the keychain or its lock file") -> [String] {
        KeyOptions.exitCodes(usage: usage, dataError: dataError, noInput: noInput, ioError: ioError)
    }
}

/// `push-keys token add --app-id APP --recipient R --environment E TOKEN`.
struct TokenAddCommand: OptionsCommand {
    let path = ["token", "add"]
    static let registeredAt = Option.integer("--registered-at", "MS", "when the app registered the token, in milliseconds since 1970 UTC (default: the clock); a 410 older than this keeps it. A value that reads as seconds (10^9 to 10^11: 1970-01-12 to 1973-03-03 in ms) or as microseconds (10^14 and up: past the year 5138 in ms) is refused")

    let options = KeyOptions.changing + [
        KeyOptions.appID.spec, KeyOptions.recipient.spec, TokenCommands.environmentOption.spec,
        TokenAddCommand.registeredAt.spec,
    ]
    let help = HelpText(
        overview: "store the APNs device token the app registered for a recipient (replacing the recipient's former token of that environment), for push-seal batch --device-tokens",
        usage: ["push-keys token add --keychain DIR --app-id APP --recipient R --environment production|development [--registered-at MS] TOKEN [--json]"],
        examples: [
            "push-keys token add --keychain server-kc --app-id com.example.app --recipient alice-iphone --environment production 740f4707bebcf74f9b7c25d48e3358945f6aa01da5ddb387462c7eaf61bb78ad",
            "push-keys token add --registry postgresql:///pushseal --app-id com.example.app --recipient alice-iphone --environment development \"$TOKEN\" --json",
        ],
        exitCodes: TokenCommands.exitCodes(usage: ["a bad --app-id, --recipient, --environment or --registered-at", "a TOKEN that is not 2 to 256 hex digits of even length (invalidDeviceToken)", "TOKEN missing or more than one"]),
        notes: KeyOptions.notes([
            "TOKEN: the device token as hex (what the app's didRegisterForRemoteNotificationsWithDeviceToken gives, hex-encoded), any even length; stored in lower case. The server decides the recipient: never take it from the app's request alone.",
            "REPLACES: the recipient's former token of the same environment, and the same token held by another recipient of the app (the installation changed hands). Adding the same token again only updates registeredAt (a re-registration: a later 410 older than it keeps the token).",
            "Text output: 'APP R E: added TOKEN' plus 'replaced TOKEN (R)' per token removed. --json: {\"added\": {appId, recipient, environment, token, registeredAt}, \"replaced\": [...]}.",
            TokenCommands.storeNote,
        ], audited: true))

    struct Options: CommandOptions {
        let store: KeyStoreOptions, appID: String, recipient: String, environment: DeviceTokenEnvironment, token: String, registeredAtMs: Int64
        init(parsing a: Arguments) throws {
            let positionals = try Positionals(a, max: 1)
            guard let t = positionals.first else { throw CLIError.usage("give the device TOKEN (hex digits)") }
            token = t
            store = try KeyStoreOptions(parsing: a)
            appID = try a.required(KeyOptions.appID)
            recipient = try a.required(KeyOptions.recipient)
            environment = try TokenCommands.environment(a, required: true) ?? .production
            registeredAtMs = try a[TokenAddCommand.registeredAt].map(TokenCommands.checkedRegisteredAt) ?? unixTimeMilliseconds()
        }
        func validate() throws {
            try store.validate()
            _ = try TokenCommands.mapErrors(badToken: .usage) {
                try keyUsageErrors { try DeviceToken.checkAdd(token, appID: appID, recipient: recipient, registeredAtMs: registeredAtMs) }
            }
        }
    }

    func run(_ o: Options, _ c: CommandContext) throws -> ExitCode {
        let store = try TokenCommands.open(o.store)
        let replaced = try TokenCommands.mapErrors(badToken: .usage) {
            try store.addDeviceToken(o.token, appID: o.appID, recipient: o.recipient, environment: o.environment, registeredAtMs: o.registeredAtMs)
        }
        let added = DeviceToken(appID: o.appID, recipient: o.recipient, token: o.token.lowercased(), environment: o.environment, registeredAtMs: o.registeredAtMs)
        if c.json {
            keyPrintJSON(.object(JSONObject([("added", TokenCommands.json(added)), ("replaced", .array(replaced.map(TokenCommands.json)))])))
        } else {
            var out = "\(o.appID) \(o.recipient) \(o.environment.rawValue): added \(added.token)\n"
            for r in replaced { out += "  replaced \(r.token) (\(r.recipient) \(r.environment.rawValue))\n" }
            Output.stdout(out)
        }
        return .success
    }
}

/// `push-keys token remove --app-id APP --recipient R [--token T]`: forget a recipient's tokens.
struct TokenRemoveCommand: OptionsCommand {
    let path = ["token", "remove"]
    static let token = Option.text("--token", "T", "only this token (hex, any case); default: every token of the recipient")

    let options = KeyOptions.changing + [
        KeyOptions.appID.spec, KeyOptions.recipient.spec,
        TokenRemoveCommand.token.spec,
    ]
    let help = HelpText(
        overview: "remove a recipient's APNs device tokens (all, or one with --token) whatever their registration time: logout, account deletion, a stolen phone; nothing is sent to that installation until the app registers a token again",
        usage: ["push-keys token remove --keychain DIR --app-id APP --recipient R [--token T] [--audit-log FILE] [--json]"],
        examples: [
            "push-keys token remove --keychain server-kc --app-id com.example.app --recipient alice-iphone",
            "push-keys token remove --registry postgresql:///pushseal --kek-file kek --app-id com.example.app --recipient alice-iphone --token 740f4707bebcf74f --json",
            "push-keys audit --registry postgresql:///pushseal --recipient alice-iphone   # removeDeviceToken, reason removed",
        ],
        exitCodes: TokenCommands.exitCodes(usage: ["a bad --app-id or --recipient", "a --token that is not 2 to 256 hex digits of even length (invalidDeviceToken)"],
                                           noInput: "the recipient has no device token (unknownRecipient), or not --token T (unknownToken): nothing changed"),
        notes: KeyOptions.notes([
            "To forget an installation completely, also revoke its v2 registration (push-keys registration revoke) or v1 keyset (push-keys revoke). push-keys token invalidate is the other way tokens go: APNs 410s, which keep a token registered again after the 410.",
            "Text output: 'APP R E: removed TOKEN' per token removed. --json: {\"removed\": [{appId, recipient, environment, token, registeredAt}]}. Audited as removeDeviceToken with reason removed (push-keys audit --recipient R shows it).",
            TokenCommands.storeNote,
        ], audited: true))

    struct Options: CommandOptions {
        let store: KeyStoreOptions, appID: String, recipient: String, token: String?
        init(parsing a: Arguments) throws {
            _ = try Positionals(a, max: 0)
            store = try KeyStoreOptions(parsing: a)
            appID = try a.required(KeyOptions.appID)
            recipient = try a.required(KeyOptions.recipient)
            token = a[TokenRemoveCommand.token]
        }
        func validate() throws {
            try store.validate()
            _ = try TokenCommands.mapErrors(badToken: .usage) {
                try keyUsageErrors { try DeviceToken.checkRemove(appID: appID, recipient: recipient, token: token, time: 0) }
            }
        }
    }

    func run(_ o: Options, _ c: CommandContext) throws -> ExitCode {
        let store = try TokenCommands.open(o.store)
        let removed = try TokenCommands.mapErrors(badToken: .usage) {
            try store.removeDeviceTokens(appID: o.appID, recipient: o.recipient, token: o.token, time: KeyTime.now())
        }
        guard !removed.isEmpty else {
            if let token = o.token {
                throw CLIError(code: "unknownToken", "\(o.appID) \(o.recipient) has no device token \(token.lowercased()): nothing changed",
                               hint: "push-keys token list --app-id \(o.appID) --recipient \(o.recipient) shows the recipient's tokens", exitCode: .noInput)
            }
            throw CLIError(code: "unknownRecipient", "\(o.appID) \(o.recipient) has no device token: nothing changed",
                           hint: "push-keys token list --app-id \(o.appID) shows who has tokens; push-keys audit --recipient \(o.recipient) shows what happened to them",
                           exitCode: .noInput)
        }
        if c.json {
            keyPrintJSON(.object(JSONObject([("removed", .array(removed.map(TokenCommands.json)))])))
        } else {
            Output.stdout(removed.map { "\($0.appID) \($0.recipient) \($0.environment.rawValue): removed \($0.token)\n" }.joined())
        }
        return .success
    }
}

/// `push-keys token list`: the stored device tokens (public data).
struct TokenListCommand: OptionsCommand {
    let path = ["token", "list"]
    static let appID = KeysetOptions.appIDOption.withHelp("only this app's tokens")
    static let recipient = KeysetOptions.recipientOption.withHelp("only this recipient's (with --app-id)")

    let options = KeyOptions.reading + [
        TokenListCommand.appID.spec,
        TokenListCommand.recipient.spec,
    ]
    let help = HelpText(
        overview: "list the APNs device tokens of a server keychain or registry, with their environments and registration times",
        usage: ["push-keys token list --keychain DIR [--app-id APP [--recipient R]] [--json]"],
        examples: [
            "push-keys token list --keychain server-kc",
            "push-keys token list --registry postgresql:///pushseal --app-id com.example.app --recipient alice-iphone --json",
        ],
        exitCodes: TokenCommands.exitCodes(usage: ["a bad --app-id or --recipient", "--recipient without --app-id"]),
        notes: KeyOptions.notes([
            "Text output: one line per token, 'APP R ENVIRONMENT TOKEN registeredAt' (registeredAt in ms since 1970 UTC), sorted by app id, recipient, environment (production first). --json: {\"tokens\": [{appId, recipient, environment, token, registeredAt}]}.",
            TokenCommands.storeNote,
        ], audited: false))

    /// The options of `push-keys list` (`--app-id`, `--recipient`).
    typealias Options = KeyListCommand.Options

    func run(_ o: Options, _ c: CommandContext) throws -> ExitCode {
        try o.checkRecipientLookup()
        let store = try TokenCommands.open(o.store)
        let tokens = try keyMapErrors { () -> [DeviceToken] in
            if let app = o.appID, let r = o.recipient { return try store.deviceTokens(appID: app, recipient: r) }
            return try store.allDeviceTokens(appID: o.appID)
        }
        if c.json {
            keyPrintJSON(.object(JSONObject([("tokens", .array(tokens.map(TokenCommands.json)))])))
        } else {
            Output.stdout(tokens.map { "\($0.appID) \($0.recipient) \($0.environment.rawValue) \($0.token) \($0.registeredAtMs)\n" }.joined())
        }
        return .success
    }
}

/// `push-keys token invalidate --app-id APP --outcomes FILE|-`: apply push-send's 410s (its
/// outcome lines or its `--invalidations` lines, read by PushSealServer's `PushSendInvalidations`).
struct TokenInvalidateCommand: OptionsCommand {
    let path = ["token", "invalidate"]
    static let outcomes = Option.text("--outcomes", "FILE", "push-send's outcome lines (its stdout or --outcomes file) or its --invalidations lines; - for standard input (required, or --invalidations)")
    static let invalidations = Option.text("--invalidations", "FILE", "push-send's --invalidations file (the same as --outcomes FILE: either kind of line is read)")

    let options = KeyOptions.changing + [
        KeyOptions.appID.spec,
        TokenInvalidateCommand.outcomes.spec,
        TokenInvalidateCommand.invalidations.spec,
    ]
    let help = HelpText(
        overview: "remove the device tokens APNs answered 410 for (push-send's \"unregistered\" outcome lines or its --invalidations lines), each only if it was registered before the 410's timestamp",
        usage: ["push-keys token invalidate --keychain DIR --app-id APP --outcomes FILE|- [--json]",
                "push-keys token invalidate --keychain DIR --app-id APP --invalidations FILE|- [--json]"],
        examples: [
            "push-seal batch --keychain server-kc --app-id com.example.app --device-tokens < in.jsonl | push-send --p8 AuthKey.p8 --key-id K --team-id T > outcomes.jsonl",
            "push-keys token invalidate --keychain server-kc --app-id com.example.app --outcomes outcomes.jsonl",
            "push-keys token invalidate --keychain server-kc --app-id com.example.app --invalidations dead-tokens.jsonl",
            "push-send ... | push-keys token invalidate --registry postgresql:///pushseal --app-id com.example.app --outcomes - --json",
        ],
        exitCodes: TokenCommands.exitCodes(usage: ["a bad --app-id", "--outcomes (or --invalidations) missing, or both given"],
                                           dataError: "a line that is not a JSON object (but a partial last line, which is skipped), a JSON object that is neither an outcome line nor an invalidation line of push-send (unknownInput), or an unregistered line whose deviceToken is not hex (invalidDeviceToken) or whose timestamp is not milliseconds from 1970 to 9999: nothing is changed",
                                           noInput: "the --outcomes FILE missing",
                                           ioError: "reading --outcomes, the keychain or its lock file"),
        notes: KeyOptions.notes([
            "INPUT: push-send's outcome lines {\"line\", \"deviceToken\", \"outcome\", ..., \"timestamp\"} or its --invalidations lines {\"line\", \"deviceToken\", \"reason\", \"timestamp\"?} (at most 1 GiB; the two kinds may be mixed). Of outcome lines only \"outcome\": \"unregistered\" ones are applied; a line without a \"timestamp\" is counted as noTimestamp and changes nothing (APNs' 410 always has one); other outcomes and blank lines are ignored. An invalidation line with reason BadDeviceToken has no timestamp (push-send's guard released it): it counts as dead now. Any other JSON object is refused (65): a wrong file never reads as nothing to do. Every line is read and checked before the store changes.",
            "RULE: a token is removed only if its registeredAt is before the 410's timestamp (ms since 1970 UTC); registered at or after it, it is kept (keptReregistered: the app registered it again after APNs saw it dead). A token not in the store for APP is unknown (never added, or removed already: running the same outcomes twice removes nothing more).",
            "Text output: 'invalidated N, kept (re-registered) K, unknown U, no timestamp T'. --json: {\"invalidated\", \"keptReregistered\", \"unknown\", \"noTimestamp\", \"tokens\": [{\"line\", \"deviceToken\", \"timestamp\", \"result\": \"invalidated\" | \"keptReregistered\" | \"unknown\"}]}.",
            TokenCommands.storeNote,
        ], audited: true))

    /// The most outcome bytes read: 1 GiB (about 5 million outcome lines).
    static let outcomesLimitByteCount = 1 << 30

    struct Options: CommandOptions {
        let store: KeyStoreOptions, appID: String, outcomes: String
        init(parsing a: Arguments) throws {
            _ = try Positionals(a, max: 0)
            store = try KeyStoreOptions(parsing: a)
            appID = try a.required(KeyOptions.appID)
            switch (a[TokenInvalidateCommand.outcomes], a[TokenInvalidateCommand.invalidations]) {
            case (let o?, nil): outcomes = o
            case (nil, let i?): outcomes = i
            case (nil, nil): throw CLIError.usage("missing --outcomes FILE", hint: "give push-send's outcome file (--outcomes FILE) or its invalidation file (--invalidations FILE)")
            case (_?, _?): throw CLIError.usage("give either --outcomes or --invalidations, not both", hint: "run the command once per file")
            }
        }
        func validate() throws {
            try store.validate()
            try keyUsageErrors { try KeyID.validateAppID(appID) }
        }
    }

    func run(_ o: Options, _ c: CommandContext) throws -> ExitCode {
        let parsed: PushSendInvalidations
        do {
            parsed = try PushSendInvalidations(parsing: try InputReader.readAll(o.outcomes, limitByteCount: Self.outcomesLimitByteCount),
                                               nowMilliseconds: unixTimeMilliseconds())
        } catch let e as ServerError {
            throw CLIError(code: e.code.name, e.reason, hint: "give push-send's outcome lines (its standard output or --outcomes file) or its --invalidations file", exitCode: .dataError)
        }
        let items = parsed.items
        let pairs = items.map { (token: $0.deviceToken, unregisteredAtMs: $0.unregisteredAtMs) }
        _ = try TokenCommands.mapErrors(badToken: .dataError) {
            try keyMapErrors { try DeviceToken.checkUnregistrations(pairs) }
        }
        let store = ServerStore(store: try TokenCommands.open(o.store))
        let results = try TokenCommands.mapErrors(badToken: .dataError) { try store.invalidateDeviceTokens(pairs, appID: o.appID) }
        let count = { (r: DeviceTokenInvalidation) in Int64(results.filter { $0 == r }.count) }
        if c.json {
            let tokens: [JSONValue] = zip(items, results).map { u, r in
                .object(JSONObject([("line", u.line.map { .integer($0) } ?? .null), ("deviceToken", .string(u.deviceToken)),
                                    ("timestamp", .integer(u.unregisteredAtMs)), ("result", .string(r.rawValue))]))
            }
            keyPrintJSON(.object(JSONObject([("invalidated", .integer(count(.invalidated))), ("keptReregistered", .integer(count(.keptReregistered))),
                                             ("unknown", .integer(count(.unknown))), ("noTimestamp", .integer(Int64(parsed.noTimestamp))), ("tokens", .array(tokens))])))
        } else {
            Output.stdout("invalidated \(count(.invalidated)), kept (re-registered) \(count(.keptReregistered)), unknown \(count(.unknown)), no timestamp \(parsed.noTimestamp)\n")
        }
        return .success
    }
}
