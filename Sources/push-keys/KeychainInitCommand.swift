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
    static let passcodeFile = Option.text("--passcode-file", "F", "give the device a passcode, read from the first line of F (- for standard input)")
    static let deviceSecret = DeviceSecretOptions.fileOption
    static let deviceSecretInside = DeviceSecretOptions.insideOption

    let options: [OptionSpec] = [
        KeychainCommands.keychainOption,
        KeychainInitCommand.passcodeFile.spec,
        KeychainInitCommand.deviceSecret.spec,
        KeychainInitCommand.deviceSecretInside.spec,
    ]
    let help = HelpText(
        overview: "create a keychain (an emulated iOS device keychain, or a server's): a 0700 directory with fresh class keys, its device secret beside it (DIR.secret), device state unlocked",
        usage: ["push-keys keychain init --keychain DIR [--passcode-file F] [--device-secret FILE | --device-secret-inside] [--json]"],
        examples: [
            "push-keys keychain init --keychain server-kc   # device secret in server-kc.secret: back up and copy them apart",
            "push-keys keychain init --keychain /srv/pushseal/kc --device-secret /etc/pushseal/kc.secret",
            "push-keys keychain init --keychain device-kc --device-secret-inside   # an emulated phone",
            "echo 123456 | push-keys keychain init --keychain device-kc --passcode-file -   # class keys wrapped with Argon2id(passcode)",
        ],
        exitCodes: KeychainCommands.exitCodes(keychainError: nil, dataError: "the passcode file's first line is empty or not UTF-8",
                                              noInput: "the --passcode-file file missing",
                                              cannotCreate: "DIR is already a keychain, or exists and is not empty; or the device secret file exists",
                                              opensKeychain: false),
        notes: "DIR must not exist or be empty. The device secret wraps every key in the keychain: by default it goes to DIR.secret, beside the directory and not inside it, so a copy or backup of DIR alone reads nothing; keep the two apart (other disk, other backup), or put it elsewhere with --device-secret FILE. Every tool finds it where keychain.meta records it; PUSHSEAL_DEVICE_SECRET_FILE=FILE overrides that (e.g. a file on a tmpfs or a systemd credential). Prints nothing on success (with --json: {\"keychain\", \"deviceState\", \"passcodeSet\", \"deviceSecret\"})."
    )

    struct Options: CommandOptions {
        let keychain: URL, passcodeFile: String?, deviceSecret: DeviceSecretOptions
        init(parsing a: Arguments) throws {
            _ = try Positionals(a, max: 0)
            keychain = try KeychainCommands.keychainURL(a)
            passcodeFile = a[KeychainInitCommand.passcodeFile]
            deviceSecret = DeviceSecretOptions(parsing: a)
        }
        func validate() throws { try deviceSecret.validate() }
    }

    func run(_ o: Options, _ context: CommandContext) throws -> ExitCode {
        let url = o.keychain
        let location = o.deviceSecret.location
        let passcode = try KeychainCommands.passcode(file: o.passcodeFile)
        try KeychainCommands.mapping { try Keychain.create(at: url, passcode: passcode, deviceSecret: location) }
        if context.json {
            Output.printJSON(["keychain": .string(url.path), "deviceState": .string(DeviceState.unlocked.rawValue), "passcodeSet": .bool(passcode != nil),
                              "deviceSecret": .string(KeychainCommands.deviceSecretPath(location, keychain: url))])
        }
        return .success
    }
}
