import PushSealCLI
import PushSealJSON
import PushSealKeyRecords
import PushSealRegistrationTokens
import PushSealSystem

/// `push-keys registration-token` and `push-keys registration-token new-secret`: the
/// short-lived HS256 tokens a backend mints for one recipient, so the app registers itself
/// (docs/registration.md). The library calls are ``RegistrationToken/mint(recipient:appID:lifetimeSeconds:issuedAt:tokenID:secret:)``
/// and ``RegistrationToken/verify(_:appID:secret:now:leewaySeconds:)`` in PushSealRegistrationTokens.
enum RegistrationTokenCommands {
    static let all: [any Command] = [RegistrationTokenMintCommand(), RegistrationTokenNewSecretCommand()]

    static let secretFile = Option.text("--secret-file", "FILE", "the registration token secret shared with the gateway (required; 0600, at least 32 printable ASCII characters)")

    static let secretNote = "SECRET FILE: printable ASCII, at least 32 characters, one trailing newline ignored; the HMAC-SHA256 key is the text itself, so any JWT library mints with the file's contents as the HS256 secret (PyJWT: jwt.encode(claims, open(F).read().strip(), \"HS256\")). Private: mode 0600, owned by you, not a symbolic link. See docs/registration.md."

    /// The exit code lines of the mint command's help.
    static func exitCodes(usage: String) -> [String] {
        ["0   success", "64  usage error (\(usage))", "65  a secret file shorter than 32 characters or with other than printable ASCII",
         "66  no secret file", "74  I/O error (writing standard output)", "77  the secret file is not private (mode 0600, yours, no symbolic link) or not readable"]
    }

    /// Maps the library's errors: a bad secret file is 66 (missing) or 77 (not private) or 65.
    static func mapErrors<R>(_ body: () throws -> R) throws -> R {
        do {
            return try body()
        } catch let e as RegistrationTokenError {
            let exit: ExitCode = switch e.code {
            case .invalidClaim, .lifetimeTooLong: .usage
            case .invalidSecret: e.reason.hasPrefix("no registration token secret") ? .noInput : e.reason.hasPrefix("cannot read") ? .noPermission : .dataError
            default: .dataError
            }
            throw CLIError(code: e.code.name, e.reason, hint: e.suggestion, exitCode: exit)
        }
    }
}

/// `push-keys registration-token --secret-file F --recipient R --app-id A [--lifetime D]`.
struct RegistrationTokenMintCommand: OptionsCommand {
    let path = ["registration-token"]
    static let lifetime = Option.durationWithDefault("--lifetime", "how long the token is accepted: 1s to 24h", default: RegistrationToken.defaultLifetimeSeconds)
    static let now = KeyOptions.now.withHelp("iat, seconds since 1970 UTC (default: the clock)")
    static let tokenID = Option.text("--token-id", "ID", "jti (default: 22 random base64url characters)")

    let options = [
        RegistrationTokenCommands.secretFile.spec, KeyOptions.recipient.spec, KeyOptions.appID.spec,
        RegistrationTokenMintCommand.lifetime.spec,
        RegistrationTokenMintCommand.now.spec,
        RegistrationTokenMintCommand.tokenID.spec,
    ]
    let help = HelpText(
        overview: "mint a registration token: an HS256 JWT {sub: R, aud: APP, iat, exp, jti} the app presents once to POST /v1/devices to register recipient R",
        usage: ["push-keys registration-token --secret-file FILE --recipient R --app-id APP [--lifetime 1h] [--now UNIX] [--token-id ID] [--json]"],
        examples: [
            "push-keys registration-token --secret-file /etc/pushseal/registration-secret --recipient alice-iphone --app-id com.example.app",
            "push-keys registration-token --secret-file secret --recipient inst-42 --app-id com.example.app --lifetime 10m --json",
        ],
        exitCodes: RegistrationTokenCommands.exitCodes(usage: "a missing --secret-file, --recipient or --app-id; a --lifetime over 24h; a recipient, app id or token id that is empty, over 128 bytes or holds control characters"),
        notes: [
            "Your backend mints the token after its own login, for the recipient it chose (never one the app names), and hands it to the app; the token registers that recipient only. Any JWT library can mint the same token: header {\"alg\":\"HS256\",\"typ\":\"JWT\"}, claims sub, aud, iat, exp (exp - iat at most 86400), jti.",
            "Output: the token (one line). --json: {\"token\", \"recipient\", \"appId\", \"issuedAt\", \"expiresAt\", \"tokenId\"}. Not audited (no store changes).",
            RegistrationTokenCommands.secretNote,
        ].joined(separator: "\n"))

    struct Options: CommandOptions {
        let secretFile: String, recipient: String, appID: String, lifetime: Int64, now: Int64, tokenID: String
        init(parsing a: Arguments) throws {
            try a.expectPositionals(max: 0)
            secretFile = try a.required(RegistrationTokenCommands.secretFile)
            recipient = try a.required(KeyOptions.recipient)
            appID = try a.required(KeyOptions.appID)
            lifetime = try a[RegistrationTokenMintCommand.lifetime]
            now = try a[RegistrationTokenMintCommand.now] ?? unixTimeSeconds()
            tokenID = a[RegistrationTokenMintCommand.tokenID] ?? RegistrationToken.newTokenID()
        }
        func validate() throws {
            guard lifetime > 0, lifetime <= RegistrationToken.maximumLifetimeSeconds else {
                throw CLIError.usage("--lifetime must be 1s to 24h, got \(lifetime) s", hint: "registration tokens are short-lived: mint one per registration")
            }
            // iat as every other --now: 1970 to 9999 (a negative iat was minted before).
            try keyUsageErrors { try KeyTime.checkTime(now, named: "--now") }
            try RegistrationTokenCommands.mapErrors {
                try RegistrationToken(recipient: recipient, appID: appID, issuedAt: now, expiresAt: now + lifetime, tokenID: tokenID).checkClaims()
            }
        }
    }

    func run(_ o: Options, _ c: CommandContext) throws -> ExitCode {
        let token = try RegistrationTokenCommands.mapErrors { () -> String in
            let secret = try RegistrationTokenSecret.load(path: o.secretFile)
            return try RegistrationToken.mint(recipient: o.recipient, appID: o.appID, lifetimeSeconds: o.lifetime, issuedAt: o.now, tokenID: o.tokenID, secret: secret)
        }
        if c.json {
            keyPrintJSON(.object(JSONObject([("token", .string(token)), ("recipient", .string(o.recipient)), ("appId", .string(o.appID)),
                                             ("issuedAt", .integer(o.now)), ("expiresAt", .integer(o.now + o.lifetime)), ("tokenId", .string(o.tokenID))])))
        } else {
            Output.stdout(token + "\n")
        }
        return .success
    }
}

/// `push-keys registration-token new-secret --out FILE`.
struct RegistrationTokenNewSecretCommand: OptionsCommand {
    let path = ["registration-token", "new-secret"]
    static let out = Option.required("--out", "FILE", "where to write the new secret (required; created 0600, never replaced)")
    let options = [Self.out.spec]
    let help = HelpText(
        overview: "create a registration token secret: 43 random base64url characters (256 bits) in a new 0600 file, for your backend and the gateway",
        usage: ["push-keys registration-token new-secret --out FILE"],
        examples: ["push-keys registration-token new-secret --out /etc/pushseal/registration-secret"],
        exitCodes: ["0   success", "64  usage error (unknown option, --out missing)", "73  FILE already exists", "74  I/O error creating FILE"],
        notes: [
            "Nothing is printed: the secret is only in the file. Copy it to the backend that mints tokens by a private channel; replacing it invalidates every token not yet used.",
            RegistrationTokenCommands.secretNote,
        ].joined(separator: "\n"))

    struct Options: CommandOptions {
        let out: String
        init(parsing a: Arguments) throws {
            try a.expectPositionals(max: 0)
            out = try a[RegistrationTokenNewSecretCommand.out]
        }
    }

    func run(_ o: Options, _ c: CommandContext) throws -> ExitCode {
        do {
            try RegistrationTokenSecret.create(at: o.out)
        } catch let e as SystemError where e.code == .alreadyExists {
            throw CLIError(code: "alreadyExists", "\(o.out) already exists", hint: "a new secret invalidates the old one's tokens: remove the file first if you mean it", exitCode: .cannotCreate)
        } catch let e as SystemError {
            throw CLIError(code: "io", e.reason, exitCode: .ioError)
        }
        if c.json { keyPrintJSON(.object(JSONObject([("created", .string(o.out))]))) } else { Output.stderr("push-keys: wrote a new registration token secret to \(o.out)\n") }
        return .success
    }
}
