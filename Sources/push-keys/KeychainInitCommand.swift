import PushSealJSON
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import PushSealCLI
import PushSealWire
import PushSealKeychain

/// `push-keys keychain init`: creates an emulated device keychain.
struct KeychainInitCommand: OptionsCommand {
    let path = ["keychain", "init"]
    let options: [OptionSpec] = [
        KeychainCommands.keychainOption,
        .value("--passcode-file", "F", "give the device a passcode, read from the first line of F (- for standard input)"),
    ]
    let help = HelpText(
        overview: "create an emulated iOS device keychain: a 0700 directory with a fresh device secret and class keys, device state unlocked",
        usage: ["push-keys keychain init --keychain DIR [--passcode-file F] [--json]"],
        examples: [
            "push-keys keychain init --keychain device-kc",
            "echo 123456 | push-keys keychain init --keychain device-kc --passcode-file -   # WhenUnlocked key wrapped with Argon2id(passcode)",
        ],
        exitCodes: KeychainCommands.exitCodes(keychainError: nil, dataError: "the passcode file's first line is empty or not UTF-8",
                                              noInput: "the --passcode-file file missing", cannotCreate: "DIR is already a keychain, or exists and is not empty",
                                              opensKeychain: false),
        notes: "DIR must not exist or be empty. Prints nothing on success (with --json: {\"keychain\", \"deviceState\", \"passcodeSet\"})."
    )

    struct Options: CommandOptions {
        let keychain: URL, passcodeFile: String?
        init(parsing a: Arguments) throws {
            _ = try Positionals(a, max: 0)
            keychain = try KeychainCommands.keychainURL(a)
            passcodeFile = a.value("--passcode-file")
        }
    }

    func run(_ o: Options, _ context: CommandContext) throws -> ExitCode {
        let url = o.keychain
        let passcode = try KeychainCommands.passcode(file: o.passcodeFile)
        try KeychainCommands.mapping { try Keychain.create(at: url, passcode: passcode) }
        if context.json {
            Output.printJSON(["keychain": .string(url.path), "deviceState": .string(DeviceState.unlocked.rawValue), "passcodeSet": .bool(passcode != nil)])
        }
        return .success
    }
}
