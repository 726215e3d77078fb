import PushSealJSON
import PushSealCLI
import PushSealWire
import PushSealKeychain

/// `push-keys keychain device-state`: print or set the emulated device's lock state.
struct KeychainDeviceStateCommand: Command {
    let path = ["keychain", "device-state"]
    let options: [OptionSpec] = [
        KeychainCommands.keychainOption,
        .value("--passcode-file", "F", "the device passcode (first line of F, - for standard input); needed to unlock a device that has one"),
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

    func run(_ context: CommandContext) throws -> ExitCode {
        let a = context.arguments
        try a.expectPositionals(max: 1)
        var target: DeviceState?
        if let word = a.positionals.first {
            guard let s = DeviceState(rawValue: word) else {
                throw CLIError.usage("unknown device state \(quoted(word))", hint: "use unlocked, locked or beforeFirstUnlock")
            }
            target = s
        }
        let passcode = try KeychainCommands.passcode(a)
        let kc = try KeychainCommands.open(try KeychainCommands.keychainURL(a), as: Entitlements())
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
