import PushSealJSON
import Foundation
import PushSealCLI
import PushSealCrypto
import PushSealKeychain
import PushSealSystem

/// `push-keys keychain backup` / `restore`: an encrypted backup of the whole emulated keychain
/// and its restore onto the same or a new device, as an encrypted iOS backup (docs/keychain.md
/// "Backup and restore"; ``KeychainBackup``).
enum KeychainBackupCommands {
    static let passphraseOption = Option.required("--passphrase-file", "F",
        "the backup passphrase: the first line of F, a private file (0600, yours, not a link; required; never on the command line or in the environment)",
        hint: "give --passphrase-file F, a 0600 file whose first line is the passphrase")

    /// The passphrase: the first line of `--passphrase-file F`, checked like a key file.
    /// - Throws: `CLIError` 66 (missing), 77 (readable by others), 65 (empty first line or not a regular file).
    static func passphrase(_ path: String) throws -> [UInt8] {
        var bytes = try InputReader.readPrivateFile(path, limitByteCount: 4096, what: "passphrase file")
        defer { SecretBytes.wipe(&bytes) }
        let line = Array(bytes.prefix(while: { $0 != 0x0A && $0 != 0x0D }))
        guard !line.isEmpty else {
            throw CLIError(code: "emptyPassphrase", "the first line of \(path) is empty", hint: "write the passphrase on the file's first line", exitCode: .dataError)
        }
        return line
    }

    /// The keychain at `url` opened device-wide: as an identity holding every stored access
    /// group and `extraGroups` (a backup reads, a restore deletes and adds, in every group).
    static func openDeviceWide(_ url: URL, extraGroups: [String] = []) throws -> Keychain {
        let probe = try KeychainCommands.open(url, as: Entitlements())
        let stored = try KeychainCommands.mapping { try probe.storedAccessGroups() }
        return try KeychainCommands.open(url, as: Entitlements(keychainAccessGroups: Array(Set(stored + extraGroups)).sorted()))
    }

    /// Maps the backup's own errors (65, the suggestion as the hint), else as every keychain error.
    static func mapping<R>(_ body: () throws -> R) throws -> R {
        do {
            return try body()
        } catch let e as KeychainError where e.code == .backupUnreadable || e.code == .backupFromAnotherDevice {
            throw CLIError(code: e.code.description, e.reason, hint: e.suggestion, exitCode: .dataError)
        } catch let e as KeychainError {
            throw KeychainCommands.cliError(e)
        }
    }

    static let note = """
        BACKUP: every item of every access group, with its attributes and data, in one file sealed with AES-256-GCM under Argon2id(passphrase) (libsodium; 2 passes, 64 MiB); items of a …ThisDeviceOnly class are sealed once more under a key only this device derives (from its device secret), as iOS binds them to the device. The App Group containers (DIR/app-groups/: the install marker, the replay guard, media) are not keychain items and are not in the file. docs/keychain.md "Backup and restore".
        """
}

/// `push-keys keychain backup --keychain DIR --passphrase-file F --out FILE`.
struct KeychainBackupCommand: OptionsCommand {
    let path = ["keychain", "backup"]
    static let outOption = Option.text("--out", "FILE", "the backup file, created exclusively with mode 0600 (required; never overwritten)")

    let options: [OptionSpec] = [
        KeychainCommands.keychainOption, KeychainBackupCommands.passphraseOption.spec,
        KeychainBackupCommand.outOption.spec,
    ]
    let help = HelpText(
        overview: "write an encrypted backup of the whole emulated keychain (every item of every access group), as an encrypted iOS backup holds the keychain: restore it with push-keys keychain restore --to-new-device or --same-device",
        usage: ["push-keys keychain backup --keychain DIR --passphrase-file F --out FILE [--json]"],
        examples: ["push-keys keychain backup --keychain device-kc --passphrase-file backup.pass --out device.backup"],
        exitCodes: KeychainCommands.exitCodes(
            keychainError: nil, usage: ["no --out or --passphrase-file"],
            dataError: "an empty first line in the passphrase file",
            noInput: "the passphrase file missing",
            cannotCreate: "FILE already exists or cannot be created",
            readsSecrets: true)
            .map { $0.hasPrefix("77") ? $0 + "; or a passphrase file readable by group or others, or not yours (chmod 600 it)" : $0 },
        notes: KeychainBackupCommands.note + "\n\n" + """
            The device state must allow reading every item (unlock it first: a whenUnlocked item while locked is errSecInteractionNotAllowed, exit 77). OUTPUT: the file name; --json: {"file", "items", "thisDeviceOnly"} (item counts).
            """
    )

    struct Options: CommandOptions {
        let keychain: URL, passphraseFile: String, out: String
        init(parsing a: Arguments) throws {
            _ = try Positionals(a, max: 0)
            keychain = try KeychainCommands.keychainURL(a)
            passphraseFile = try a[KeychainBackupCommands.passphraseOption]
            out = try a.required(KeychainBackupCommand.outOption)
        }
    }

    func run(_ o: Options, _ context: CommandContext) throws -> ExitCode {
        var passphrase = try KeychainBackupCommands.passphrase(o.passphraseFile)
        defer { SecretBytes.wipe(&passphrase) }
        let kc = try KeychainBackupCommands.openDeviceWide(o.keychain)
        let (file, items) = try KeychainBackupCommands.mapping { try KeychainBackup.make(of: kc, passphrase: passphrase) }
        do {
            try PrivateFile.createExclusive(o.out, file)
        } catch let e as SystemError {
            if e.code == .alreadyExists {
                throw CLIError(code: "fileExists", "\(o.out) already exists; not overwriting a backup", hint: "choose a new --out FILE or remove the old one", exitCode: .cannotCreate)
            }
            throw CLIError(code: "cannotCreate", "cannot write \(o.out): \(e.reason)", exitCode: e.code == .permissionDenied ? .noPermission : .cannotCreate)
        }
        let bound = items.filter(\.accessibility.isThisDeviceOnly).count
        if context.json {
            Output.printJSON(["file": .string(o.out), "items": .integer(Int64(items.count)), "thisDeviceOnly": .integer(Int64(bound))])
        } else {
            Output.stdout(Output.terminalSafe(o.out) + "\n")
        }
        return .success
    }
}

/// `push-keys keychain restore --keychain DIR --from FILE --passphrase-file F (--to-new-device | --same-device)`.
struct KeychainRestoreCommand: OptionsCommand {
    let path = ["keychain", "restore"]
    static let from = Option.text("--from", "FILE", "the backup file (required)")
    static let toNewDevice = Option.flag("--to-new-device", "DIR is another device: its …ThisDeviceOnly items are not restored (as on iOS)")
    static let sameDevice = Option.flag("--same-device", "DIR is the device that made the backup: every item is restored; another device is refused")

    let options: [OptionSpec] = [
        KeychainCommands.keychainOption, KeychainBackupCommands.passphraseOption.spec,
        KeychainRestoreCommand.from.spec,
        KeychainRestoreCommand.toNewDevice.spec,
        KeychainRestoreCommand.sameDevice.spec,
    ]
    let help = HelpText(
        overview: "restore an encrypted keychain backup into DIR as iOS restores onto an erased device: DIR's items are replaced by the backup's; onto a new device the …ThisDeviceOnly items (every PushSeal key item and key manifest) stay behind",
        usage: ["push-keys keychain restore --keychain DIR --from FILE --passphrase-file F (--to-new-device | --same-device) [--json]"],
        examples: [
            "push-keys keychain restore --keychain new-phone-kc --from device.backup --passphrase-file backup.pass --to-new-device",
            "push-keys keychain restore --keychain device-kc --from device.backup --passphrase-file backup.pass --same-device",
        ],
        exitCodes: KeychainCommands.exitCodes(
            keychainError: nil, usage: ["neither or both of --to-new-device and --same-device", "no --from or --passphrase-file"],
            dataError: "the backup does not open (backupUnreadable: a wrong passphrase, a damaged, truncated or foreign file: AES-GCM cannot tell them apart), --same-device with a backup of another device (backupFromAnotherDevice), an empty first line in the passphrase file; nothing changed",
            noInput: "FILE or the passphrase file missing",
            readsSecrets: true)
            .map { $0.hasPrefix("77") ? $0 + "; or a passphrase file readable by group or others, or not yours (chmod 600 it)" : $0 },
        notes: KeychainBackupCommands.note + "\n\n" + """
            RESTORE: the whole backup is opened and checked first (with --same-device also the device check and every …ThisDeviceOnly item); any failure changes nothing. Then every item DIR holds is deleted and the backup's items are added (dates are the restore's). Every PushSeal device key item and key manifest is afterFirstUnlockThisDeviceOnly: after --to-new-device the app has no key, push-open falls back with unknownKey (never an authentication failure) and writes nothing, and the app's next run (push-keys device generate) makes and registers a new key under a new key id. The App Group containers in DIR are left as they are. A crash during the writes leaves a partial restore: run the same command again.

            OUTPUT: "restored N items (M …ThisDeviceOnly items not restored)"; --json: {"restored", "skipped", "removed", "target"}.
            """
    )

    struct Options: CommandOptions {
        let keychain: URL, passphraseFile: String, from: String, target: KeychainBackup.Target
        init(parsing a: Arguments) throws {
            _ = try Positionals(a, max: 0)
            keychain = try KeychainCommands.keychainURL(a)
            passphraseFile = try a[KeychainBackupCommands.passphraseOption]
            from = try a.required(KeychainRestoreCommand.from)
            switch (a.has(KeychainRestoreCommand.toNewDevice), a.has(KeychainRestoreCommand.sameDevice)) {
            case (true, false): target = .newDevice
            case (false, true): target = .sameDevice
            default:
                throw CLIError.usage("give exactly one of --to-new-device and --same-device",
                                     hint: "--to-new-device leaves the …ThisDeviceOnly items behind (another phone); --same-device restores them (the phone that made the backup)")
            }
        }
    }

    func run(_ o: Options, _ context: CommandContext) throws -> ExitCode {
        var passphrase = try KeychainBackupCommands.passphrase(o.passphraseFile)
        defer { SecretBytes.wipe(&passphrase) }
        var file = try InputReader.readAll(o.from, limitByteCount: KeychainBackup.maxFileByteCount)
        defer { SecretBytes.wipe(&file) }
        let contents = try KeychainBackupCommands.mapping { try KeychainBackup.read(file, passphrase: passphrase) }
        let kc = try KeychainBackupCommands.openDeviceWide(o.keychain, extraGroups: contents.accessGroups)
        let result = try KeychainBackupCommands.mapping { try KeychainBackup.restore(contents, into: kc, target: o.target) }
        if context.json {
            Output.printJSON(["restored": .integer(Int64(result.restored.count)), "skipped": .integer(Int64(result.skipped.count)),
                              "removed": .integer(Int64(result.removed)), "target": .string(o.target == .newDevice ? "newDevice" : "sameDevice")])
        } else {
            Output.stdout("restored \(result.restored.count) items (\(result.skipped.count) …ThisDeviceOnly items not restored)\n")
        }
        return .success
    }
}
