// `push-keys registry …`: the PostgreSQL registry's own commands (issue 15): migrate the schema,
// move everything between a file keychain and the registry, rewrap under a new KEK, make a KEK.
import Foundation
import PushSealCLI
import PushSealJSON
import PushSealCrypto
import PushSealKeychain
import PushSealServerKeys
import PushSealRegistry
import PushSealRegistryCLI
import PushSealSystem

enum RegistryCommands {
    static let all: [any Command] = [RegistryMigrateCommand(), RegistryImportCommand(), RegistryExportCommand(), RegistryRewrapCommand(), RegistryNewKEKCommand()]

    static let registry = RegistryLocation.registryOption.withHelp("the registry: any libpq connection URI or string (default: $PUSHSEAL_REGISTRY). ARGV IS VISIBLE to every local user (ps): never put a password in it; use PGPASSFILE or ~/.pgpass (or $PUSHSEAL_REGISTRY)")
    static let keychain = KeyOptions.serverKeychain

    static func exitCodes(_ extra: [String] = []) -> [String] {
        RegistryOptions.exitCodeLines(merging: ["0   success", RegistryOptions.statementFailedLine,
         "64  usage error (unknown option, missing argument, no --registry and no $PUSHSEAL_REGISTRY, a malformed connection string)"]
            + extra)
    }

    /// The registry of `--registry` (else `$PUSHSEAL_REGISTRY`) and `--kek-file` (else
    /// `$PUSHSEAL_KEK_FILE`), required by every registry command. `--keychain` here is the
    /// file keychain on the other side (import, export), so it does not exclude `--registry`.
    /// - Throws: `CLIError` 64 `missing --registry URI`.
    static func location(_ a: Arguments) throws -> RegistryLocation {
        let kekFile = try RegistryLocation.kekFile(parsing: a)
        if let r = a[registry] {
            guard !r.isEmpty else { throw CLIError.usage("--registry cannot be empty") }
            return RegistryLocation(connectionString: r, kekFile: kekFile)
        }
        if let r = Environment.value(RegistryLocation.environmentVariable), !r.isEmpty {
            return RegistryLocation(connectionString: r, kekFile: kekFile)
        }
        throw CLIError.usage("missing --registry URI", hint: "or set $\(RegistryLocation.environmentVariable)")
    }

    /// The file keychain of `--keychain DIR` as the server (created with `create`).
    static func keychainStore(_ path: String, create: Bool) throws -> KeyStore {
        let url = URL(fileURLWithPath: path)
        return try keyMapErrors {
            if create, !FileManager.default.fileExists(atPath: url.path) { try Keychain.create(at: url) }
            return try KeyStore(keychain: try Keychain(opening: url, as: KeyStore.serverIdentity))
        }
    }

    /// The output of import and export: `APP<TAB>(sender keys)` per app whose sender keys
    /// changed, then `APP<TAB>RECIPIENT` per recipient that changed; or with `--json`
    /// `{"recipients": N, "keysets": K, "senderKeys": [APP…], "changed": [{"appId", "recipient"}…]}`.
    static func printTransfer(_ c: CommandContext, recipients: Int, keysets: Int, senderKeys: [String], changed: [(appID: String, recipient: String)]) {
        if c.json {
            keyPrintJSON(obj([("recipients", .integer(Int64(recipients))), ("keysets", .integer(Int64(keysets))), ("senderKeys", .array(senderKeys.map { .string($0) })),
                              ("changed", .array(changed.map { obj([("appId", .string($0.appID)), ("recipient", .string($0.recipient))]) }))]))
        } else {
            Output.stdout(senderKeys.map { "\($0)\t(sender keys)\n" }.joined() + changed.map { "\($0.appID)\t\($0.recipient)\n" }.joined())
        }
    }

    /// The transfer notes shared by import and export.
    static let transferNote = "WHAT MOVES, per recipient: the v1 keyset (keys, statuses, times, seal counters, an unfinished rotation), the v2 registrations (every key with its status and times) and the device tokens (environment, registeredAt); per app: the v2 sender keys (private halves unwrapped in memory only and wrapped again under the target's protection: the KEK in the registry, the keychain's encryption in a keychain; never written in clear). A seal counter is never lowered (the larger of the two stays), a device token replaces the target's only when registered later, a key id present on both sides with other key bytes is refused (65). Idempotent: running it again changes nothing. Text output: APP<TAB>(sender keys) per app whose sender keys changed, then APP<TAB>RECIPIENT per recipient that changed. --json: {\"recipients\": N, \"keysets\": K, \"senderKeys\": [APP], \"changed\": [{\"appId\", \"recipient\"}]}."

    /// The options of import and export: both stores and `--now`.
    struct TransferOptions: CommandOptions {
        let registry: RegistryLocation, keychainPath: String, now: Int64
        init(parsing a: Arguments) throws {
            _ = try Positionals(a, max: 0)
            keychainPath = try KeystoreOptions.keychainDirectory(parsing: a)
            registry = try RegistryCommands.location(a)
            now = try keyNow(a)
        }
    }
}

struct RegistryMigrateCommand: OptionsCommand {
    let path = ["registry", "migrate"]
    let options = [RegistryCommands.registry.spec, RegistryOptions.kekFile]
    let help = HelpText(
        overview: "create or upgrade the registry's schema (tables, indexes, the schema_version row); idempotent, and safe to run from two processes at once (a transaction advisory lock); with the KEK, authenticate once the rows written before schema 5",
        usage: ["push-keys registry migrate [--registry URI] [--kek-file F] [--json]"],
        examples: ["push-keys registry migrate --registry postgresql:///pushseal?host=/run/postgresql --kek-file /etc/pushseal/kek",
                   "PUSHSEAL_REGISTRY='host=db.internal dbname=pushseal sslmode=verify-full' push-keys registry migrate"],
        exitCodes: RegistryCommands.exitCodes(["65  a sender key row whose public key is not its private key's (or that has none): nothing authenticated; delete or fix the row",
                                               "77  the KEK file is not private (0600, yours), or the KEK is not the registry's"]),
        notes: "Text output: one line per version applied (\"applied 1 ...\"), or \"schema is current (version N)\"; then \"authenticated N rows (R registrations, S sender keys, L lists, T device tokens, K API keys)\" when rows from before schema 5 (API keys: schema 12) were authenticated now, or \"N rows from before their table was authenticated wait for: push-keys registry migrate --kek-file F\" without the KEK (the registry opens for nothing else until then). --json: {\"applied\":[1,2],\"version\":5,\"authenticated\":{\"registrations\",\"senderKeys\",\"lists\",\"deviceTokens\",\"apiKeys\",\"total\"} or null,\"pendingRows\":N}. Authenticating tags every registration, sender key, list and device token row with an HMAC under a key derived from the KEK (docs/registry.md \"Row authentication\"); it runs once: rows without a tag that appear later are refused as corrupt, never authenticated. A database migrated by a newer PushSeal is refused (78) and left unchanged.")

    struct Options: CommandOptions {
        let registry: RegistryLocation
        init(parsing a: Arguments) throws {
            _ = try Positionals(a, max: 0)
            registry = try RegistryCommands.location(a)
        }
    }

    func run(_ o: Options, _ c: CommandContext) throws -> ExitCode {
        var r = try RegistryOptions.mapping { try PostgresKeyStore.migrate(connectionString: o.registry.connectionString, kek: nil) }
        // The KEK is read only when rows from before schema 5 wait for it.
        if r.pendingRows > 0, let kek = try RegistryOptions.kek(file: o.registry.kekFile) {
            let applied = r.applied
            r = try RegistryOptions.mapping { try PostgresKeyStore.migrate(connectionString: o.registry.connectionString, kek: kek) }
            r.applied = applied + r.applied
        }
        if c.json {
            let done: JSONValue = r.authenticated.map { a in
                obj([("registrations", .integer(Int64(a.registrations))), ("senderKeys", .integer(Int64(a.senderKeys))), ("lists", .integer(Int64(a.lists))),
                     ("deviceTokens", .integer(Int64(a.deviceTokens))), ("apiKeys", .integer(Int64(a.apiKeys))), ("total", .integer(Int64(a.total)))])
            } ?? .null
            keyPrintJSON(obj([("applied", .array(r.applied.map { .integer(Int64($0)) })), ("version", .integer(Int64(RegistrySchema.currentVersion))),
                              ("authenticated", done), ("pendingRows", .integer(Int64(r.pendingRows)))]))
            return .success
        }
        if r.applied.isEmpty {
            Output.stdout("schema is current (version \(RegistrySchema.currentVersion))\n")
        } else {
            Output.stdout(r.applied.map { "applied \($0)\n" }.joined())
        }
        if let a = r.authenticated {
            Output.stdout(RegistryOptions.authenticatedLine(a))
        } else if r.pendingRows > 0 {
            Output.stdout(RegistryOptions.pendingLine(r.pendingRows, command: "push-keys registry migrate"))
        }
        return .success
    }
}

struct RegistryImportCommand: OptionsCommand {
    let path = ["registry", "import"]
    static let batchSize = Option.integerWithDefault("--batch-size", "N", "recipients a transaction", range: 1...10_000, default: Int64(PostgresKeyStore.defaultBulkBatchSize))
    let options = [RegistryCommands.registry.spec, RegistryOptions.kekFile, RegistryCommands.keychain.spec, KeyOptions.now.spec, Self.batchSize.spec]
    let help = HelpText(
        overview: "copy everything a server file keychain holds into the registry as it is: v1 keysets (keys, statuses, times, seal counters, unfinished rotations), v2 registrations and sender keys, device tokens; in batches of recipients (one transaction each: keysets the registry lacks are bulk-inserted), resumable and idempotent",
        usage: ["push-keys registry import --keychain DIR [--registry URI] [--kek-file F] [--now UNIX] [--batch-size N] [--json]"],
        examples: ["push-keys registry import --keychain /srv/keys --registry postgresql:///pushseal --kek-file /etc/pushseal/kek"],
        exitCodes: RegistryCommands.exitCodes(["66  no keychain at DIR", "65  a key id already in the registry with other key bytes (nothing of that keyset changed)",
                                               "77  the keychain or the KEK file is not private (0700/0600, yours), or the KEK is not the registry's"]),
        notes: RegistryCommands.transferNote + "\n\nAudited in the registry (import, importRegistration, importSenderKey, addDeviceToken lines). The sender keys go first, one transaction per app; then each batch of N recipients commits on its own, so a recipient is all in or all out: an import that stops half way (a lost connection, exit 69 or 75, a kill) keeps the batches committed, and running it again finds them there and carries on.")

    struct Options: CommandOptions {
        let transfer: RegistryCommands.TransferOptions, batchSize: Int
        init(parsing a: Arguments) throws {
            transfer = try RegistryCommands.TransferOptions(parsing: a)
            batchSize = Int(try a[RegistryImportCommand.batchSize])
        }
    }

    func run(_ o: Options, _ c: CommandContext) throws -> ExitCode {
        let now = o.transfer.now
        let source = try RegistryCommands.keychainStore(o.transfer.keychainPath, create: false)
        let registry = try o.transfer.registry.open()
        // Read lazily: one batch of key bytes in memory at a time.
        let records = try keyMapErrors { try source.recipientRecords() }
        let senders = try keyMapErrors { try source.allSenderKeyLists() }
        var senderChanged: [String] = []
        for list in senders where try keyMapErrors({ try registry.copyInSenderKeys(list, now: now) }) { senderChanged.append(list.appID) }
        let result = try keyMapErrors { try registry.bulkCopyIn(records: records, now: now, batchSize: o.batchSize) }
        if let readError = records.error { _ = try keyMapErrors { throw readError } }
        RegistryCommands.printTransfer(c, recipients: result.recipients, keysets: result.keysets, senderKeys: senderChanged, changed: result.changed)
        return .success
    }
}

struct RegistryExportCommand: OptionsCommand {
    let path = ["registry", "export"]
    let options = [RegistryCommands.registry.spec, RegistryOptions.kekFile, RegistryCommands.keychain.spec, KeyOptions.now.spec]
    let help = HelpText(
        overview: "copy everything the registry holds into a server file keychain as it is: v1 keysets (keys, statuses, times, seal counters), v2 registrations and sender keys, device tokens; creates DIR when it does not exist; idempotent",
        usage: ["push-keys registry export --keychain DIR [--registry URI] [--kek-file F] [--now UNIX] [--json]"],
        examples: ["push-keys registry export --keychain /srv/keys-from-db --registry postgresql:///pushseal --kek-file /etc/pushseal/kek"],
        exitCodes: RegistryCommands.exitCodes(["65  a key id already in the keychain with other key bytes", "73  DIR could not be created as a keychain",
                                               "77  the keychain or the KEK file is not private (0700/0600, yours), or the KEK is not the registry's"]),
        notes: RegistryCommands.transferNote + "\n\nAudited in DIR/keys-audit.log (import, importRegistration, importSenderKey, addDeviceToken lines). Written in batches of \(PostgresKeyStore.defaultBulkBatchSize) recipients: the keysets the keychain lacks with one flush of the file system per batch. Each keyset, registration list, sender key list and token is one atomic change of the keychain (a keychain has no transactions across items); an export that stops half way completes when run again.")

    func run(_ o: RegistryCommands.TransferOptions, _ c: CommandContext) throws -> ExitCode {
        let now = o.now
        let registry = try o.registry.open()
        let records = try keyMapErrors { try registry.recipientRecords() }
        let senders = try keyMapErrors { try registry.allSenderKeyLists() }
        let target = try RegistryCommands.keychainStore(o.keychainPath, create: true)
        var senderChanged: [String] = []
        for list in senders where try keyMapErrors({ try target.copyInSenderKeys(list, now: now) }) { senderChanged.append(list.appID) }
        var changed: [(appID: String, recipient: String)] = []
        var keysets = 0
        var batch: [RecipientRecord] = []
        func flush() throws {
            for (r, did) in zip(batch, try keyMapErrors({ try target.bulkCopyIn(batch, now: now) })) where did { changed.append((r.appID, r.recipient)) }
            batch.removeAll(keepingCapacity: true)
        }
        // In batches: the keysets the keychain lacks are written with one flush per batch.
        for r in records {
            if r.keyset != nil { keysets += 1 }
            batch.append(r)
            if batch.count >= PostgresKeyStore.defaultBulkBatchSize { try flush() }
        }
        try flush()
        if let readError = records.error { _ = try keyMapErrors { throw readError } }
        RegistryCommands.printTransfer(c, recipients: records.names.count, keysets: keysets, senderKeys: senderChanged, changed: changed)
        return .success
    }
}

struct RegistryRewrapCommand: OptionsCommand {
    let path = ["registry", "rewrap"]
    static let oldKEKFile = RegistryLocation.kekFileOption.withHelp("the current key-encryption key file (required)", valueName: "OLD")
    static let newKEKFile = Option.text("--new-kek-file", "NEW", "the new key-encryption key file (required; push-keys registry new-kek makes one)")
    let options = [RegistryCommands.registry.spec, Self.oldKEKFile.spec, Self.newKEKFile.spec]
    let help = HelpText(
        overview: "rewrap every stored key under a new key-encryption key, in one transaction, and make it the registry's KEK; the key bytes do not change, so running senders keep sealing (restart them with the new --kek-file)",
        usage: ["push-keys registry rewrap --kek-file OLD --new-kek-file NEW [--registry URI] [--json]"],
        examples: ["push-keys registry new-kek --out /etc/pushseal/kek.new && push-keys registry rewrap --kek-file /etc/pushseal/kek --new-kek-file /etc/pushseal/kek.new"],
        exitCodes: RegistryCommands.exitCodes(["77  a KEK file is not private (0600, yours, not a link) or not 32 bytes, or OLD is not the registry's KEK (nothing changed)"]),
        notes: "Text output: the number of keys rewrapped. Audited as a rewrap line.")

    struct Options: CommandOptions {
        let registry: RegistryLocation, newKEKFile: String
        init(parsing a: Arguments) throws {
            _ = try Positionals(a, max: 0)
            _ = try a.required(RegistryRewrapCommand.oldKEKFile)
            newKEKFile = try a.required(RegistryRewrapCommand.newKEKFile)
            registry = try RegistryCommands.location(a)
        }
    }

    func run(_ o: Options, _ c: CommandContext) throws -> ExitCode {
        guard let new = try RegistryOptions.kek(file: o.newKEKFile) else { throw CLIError.usage("missing --new-kek-file NEW") }
        let registry = try o.registry.open()
        let n = try RegistryOptions.mapping { try registry.rewrap(to: new) }
        if c.json { keyPrintJSON(obj([("rewrapped", .integer(Int64(n)))])) } else { Output.stdout("\(n)\n") }
        return .success
    }
}

struct RegistryNewKEKCommand: OptionsCommand {
    let path = ["registry", "new-kek"]
    static let out = Option.required("--out", "FILE", "the new key-encryption key file (required; created 0600, never overwritten)")
    let options = [Self.out.spec]
    let help = HelpText(
        overview: "write a new random key-encryption key (32 bytes as 64 hex digits) to a new 0600 file",
        usage: ["push-keys registry new-kek --out FILE [--json]"],
        examples: ["push-keys registry new-kek --out /etc/pushseal/kek"],
        exitCodes: ["0   success", "64  usage error (unknown option, missing argument)", "73  FILE exists (never overwritten)", "74  I/O error writing FILE"],
        notes: "The key never goes to stdout. Keep the file out of database backups: a dump of the registry opens nothing without it.")

    struct Options: CommandOptions {
        let out: String
        init(parsing a: Arguments) throws {
            _ = try Positionals(a, max: 0)
            out = try a[RegistryNewKEKCommand.out]
        }
    }

    func run(_ o: Options, _ c: CommandContext) throws -> ExitCode {
        let path = o.out
        var line = KeyEncryptionKey.generate().hexLine()
        defer { SecretBytes.wipe(&line) }
        do {
            try PrivateFile.createExclusive(path, line)
        } catch let e as SystemError {
            let exists = e.code == .alreadyExists
            throw CLIError(code: exists ? "exists" : "io", exists ? "\(path) exists (a key-encryption key file is never overwritten)" : "cannot write \(path): \(e.reason)",
                           exitCode: exists ? .cannotCreate : .ioError)
        }
        if c.json { keyPrintJSON(obj([("path", .string(path))])) }
        return .success
    }
}

/// A JSON object from members in order (the registry commands' `--json` output).
private func obj(_ members: [(String, JSONValue)]) -> JSONValue { .object(JSONObject(members.map { (key: $0.0, value: $0.1) })) }
