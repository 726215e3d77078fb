import Foundation
import PushSealJSON
import PushSealCLI
import PushSealWire
import PushSealKeychain

/// `push-keys keychain device-state`: print or set the emulated device's lock state.
struct KeychainDeviceStateCommand: OptionsCommand {
    let path = ["keychain", "device-state"]
    static let passcodeFile = Option.text("--passcode-file", "F", "the device passcode (first line of F, - for standard input); needed to unlock a device that has one")

    let options: [OptionSpec] = [
        KeychainCommands.keychainOption,
        KeychainDeviceStateCommand.passcodeFile.spec,
    ]
    let help = HelpText(
        overview: "print the emulated device's lock state, or set it to unlocked, locked or beforeFirstUnlock (a reboot)",
        usage: ["push-keys keychain device-state --keychain DIR [unlocked|locked|beforeFirstUnlock] [--passcode-file F] [--json]"],
        examples: [
            "push-keys keychain device-state --keychain device-kc            # prints e.g. unlocked",
            "push-keys keychain device-state --keychain device-kc locked     # WhenUnlocked items now fail with -25308",
            "echo 123456 | push-keys keychain device-state --keychain device-kc unlocked --passcode-file -",
        ],
        exitCodes: KeychainCommands.exitCodes(
            keychainError: "errSecAuthFailed -25293: a wrong or missing passcode",
            dataError: "the passcode file's first line is empty or not UTF-8", noInput: "the --passcode-file file missing"),
        notes: """
            WhenUnlocked items are readable only while unlocked; AfterFirstUnlock items while unlocked or locked, not before first unlock. With a passcode, unlocking (and leaving beforeFirstUnlock) needs it; a wrong one fails with errSecAuthFailed (-25293).

            Prints the state (with --json {"deviceState", "passcodeSet"}).
            """
    )

    struct Options: CommandOptions {
        /// The state to set, `nil` to print the current one.
        let target: DeviceState?, keychain: URL, passcodeFile: String?
        init(parsing a: Arguments) throws {
            let word = try Positionals(a, max: 1).first
            target = try word.map { w in
                guard let s = DeviceState(rawValue: w) else {
                    throw CLIError.usage("unknown device state \(quoted(w))", hint: "use unlocked, locked or beforeFirstUnlock")
                }
                return s
            }
            keychain = try KeychainCommands.keychainURL(a)
            passcodeFile = a[KeychainDeviceStateCommand.passcodeFile]
        }
    }

    func run(_ o: Options, _ context: CommandContext) throws -> ExitCode {
        let target = o.target
        let passcode = try KeychainCommands.passcode(file: o.passcodeFile)
        let kc = try KeychainCommands.open(o.keychain, as: Entitlements())
        let state = try KeychainCommands.mapping { () throws -> DeviceState in
            if let target { try kc.setDeviceState(target, passcode: passcode) }
            return try kc.deviceState
        }
        if context.json {
            Output.printJSON(["deviceState": .string(state.rawValue), "passcodeSet": .bool(kc.isPasscodeSet)])
        } else {
            Output.stdout(state.rawValue + "\n")
        }
        return .success
    }
}
