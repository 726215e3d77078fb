public import PushSealCLI
public import PushSealRegistry
import PushSealSystem

/// The one place a server-side command turns a ``PushSealCLI/RegistryLocation`` (`--registry URI`
/// / `--kek-file F`, or `PUSHSEAL_REGISTRY` / `PUSHSEAL_KEK_FILE`, parsed by `KeystoreOptions`)
/// into a server key store (PostgreSQL, issue 15), and registry errors into exit codes.
/// `--keychain DIR` and `--registry` exclude each other; the environment variable is used only
/// when neither option is given.
public enum RegistryOptions {
    /// `--registry URI` (``PushSealCLI/RegistryLocation/registryOption``).
    public static let registry = RegistryLocation.registryOption.spec
    /// `--kek-file F` (``PushSealCLI/RegistryLocation/kekFileOption``).
    public static let kekFile = RegistryLocation.kekFileOption.spec
    /// Both options.
    public static let all = [registry, kekFile]

    /// 69 (EX_UNAVAILABLE): the registry cannot be reached.
    public static let unavailable = ExitCode(69)
    /// 75 (EX_TEMPFAIL): the connection was lost while committing; run the command again.
    public static let tempFail = ExitCode(75)
    /// 78 (EX_CONFIG): the registry's schema is older (run `push-keys registry migrate`) or newer than this build.
    public static let config = ExitCode(78)

    /// The help line of exit code 1 for a statement PostgreSQL refused (every registry command
    /// can meet one: a missing privilege, a constraint, a full disk).
    public static let statementFailedLine = "1   a statement failed (SQLSTATE on stderr, sqlState in --json), or an internal error"

    /// Help lines for the registry's exit codes (after a command's own).
    public static let exitCodeLines = [
        "69  with --registry: the database cannot be reached when the command starts (refused, no socket, authentication failed), or is lost for more than 30 s later",
        "75  with --registry: the connection was lost while a change was committing (it may or may not be stored): run the command again",
        "77  with --registry: the database role lacks a privilege for a statement (SQLSTATE 42501)",
        "78  with --registry: the registry's schema is older than this build (run push-keys registry migrate, or push-gateway migrate: the same) or newer (refused)",
    ]

    /// A command's exit-code help lines with ``exitCodeLines`` merged in, in numeric order
    /// (lines of one code keep their order).
    /// - Parameter lines: the command's own lines, each starting with its code (`"74  …"`).
    public static func exitCodeLines(merging lines: [String]) -> [String] {
        func code(_ line: String) -> Int { Int(line.prefix { $0 != " " }) ?? 0 }
        return (lines + exitCodeLines).enumerated()
            .sorted { (code($0.element), $0.offset) < (code($1.element), $1.offset) }
            .map(\.element)
    }

    /// The KEK of a file (`--kek-file`, `PUSHSEAL_KEK_FILE`), `nil` for no file.
    /// - Throws: `CLIError` (77) for a file that is missing, a link, not 0600 or not 32 bytes.
    public static func kek(file path: String?) throws -> KeyEncryptionKey? {
        guard let path else { return nil }
        return try mapping { try KeyEncryptionKey(file: path) }
    }

    /// Runs `body`, turning a `RegistryError` into ``cliError(_:)``.
    public static func mapping<R>(_ body: () throws -> R) throws -> R {
        do {
            return try body()
        } catch let e as RegistryError {
            throw cliError(e)
        }
    }

    /// The CLI error of a registry error: `unavailable` 69; `schemaTooOld`/`schemaTooNew` 78;
    /// `outcomeUnknown` 75; `kekFile`/`wrongKEK` 77; `kekRequired`/`invalidConnectionString` 64;
    /// `corrupt` 65; `query` 77 for SQLSTATE 42501 (a missing privilege), else 1.
    public static func cliError(_ e: RegistryError) -> CLIError {
        var hint: String?
        let exit: ExitCode
        switch e.code {
        case .unavailable:
            exit = unavailable
            hint = "check that PostgreSQL runs and the connection string (--registry or $PUSHSEAL_REGISTRY; PG* variables, ~/.pgpass) is right"
        case .schemaTooOld: exit = config; hint = "push-keys registry migrate --registry URI --kek-file F (or push-gateway migrate, the same)"
        case .schemaTooNew: exit = config
        case .outcomeUnknown: exit = tempFail
        case .kekFile, .wrongKEK: exit = .noPermission
        case .kekRequired, .invalidConnectionString: exit = .usage
        case .corrupt: exit = .dataError
        case .query where e.sqlState == "42501":
            // insufficient_privilege: the connection's role may not do this (migrate as a role
            // that may not create tables, a role that may read but not write).
            exit = .noPermission
            hint = "the database role in --registry lacks a privilege for this statement: use the role that ran migrate (the tables' owner), or one granted their use (docs/registry.md, Schema)"
        default: exit = .failure
        }
        var details: [(key: String, value: String)] = []
        if let s = e.sqlState { details.append(("sqlState", s)) }
        return CLIError(code: e.code.name, e.reason, hint: hint, exitCode: exit, details: details)
    }

    /// `migrate`'s line for the rows it authenticated now: "authenticated N rows (R
    /// registrations, S sender keys, L lists, T device tokens, K API keys)\n".
    public static func authenticatedLine(_ a: RegistryRowAuthenticationCount) -> String {
        "authenticated \(a.total) rows (\(a.registrations) registrations, \(a.senderKeys) sender keys, \(a.lists) lists, \(a.deviceTokens) device tokens, \(a.apiKeys) API keys)\n"
    }

    /// `migrate`'s line for rows still waiting for the KEK (`command`: the migrate to run again).
    public static func pendingLine(_ n: Int, command: String) -> String {
        "\(n) rows from before their table was authenticated (schema 5; API keys: schema 12) wait for: \(command) --kek-file F\n"
    }
}

extension RegistryLocation {
    /// Opens the registry: checks the schema version and, when a KEK file is given, reads it
    /// (0600, yours, not a link, 32 bytes or 64 hex digits) and checks that it is the registry's.
    /// - Parameter reconnectWaitSeconds: how long an operation waits for a restarting server
    ///   before it fails `unavailable` (30 s for the tools; the gateway answers 503 sooner).
    /// - Throws: `CLIError` with the codes of ``RegistryOptions/cliError(_:)``.
    public func open(reconnectWaitSeconds: Double = 30) throws -> PostgresKeyStore {
        let kek = try RegistryOptions.kek(file: kekFile)
        return try RegistryOptions.mapping { try PostgresKeyStore(connectionString: connectionString, kek: kek, reconnectWaitSeconds: reconnectWaitSeconds) }
    }
}
