import PushSealCLI
import PushSealRegistry
import PushSealRegistryCLI
import PushSealSystem

/// The registry options every push-gateway command takes (`--registry`, `--kek-file`, as the
/// other CLIs take them) and its exit codes.
enum GatewayRegistry {
    /// Both options.
    static let options = RegistryOptions.all

    /// `--registry URI` (else `PUSHSEAL_REGISTRY`) and `--kek-file F` (else `PUSHSEAL_KEK_FILE`).
    /// - Throws: `CLIError` (64) `missing --registry URI`.
    static func location(_ a: Arguments) throws -> RegistryLocation {
        guard let location = try RegistryLocation(parsing: a) else {
            throw CLIError.usage("missing --registry URI", hint: "or set $\(RegistryLocation.environmentVariable)")
        }
        return location
    }

    /// Exit-code help lines of a command with `lines` of its own.
    static func exitCodes(_ lines: [String]) -> [String] {
        RegistryOptions.exitCodeLines(merging: ["0   success", RegistryOptions.statementFailedLine, "64  usage error"] + lines)
    }
}
