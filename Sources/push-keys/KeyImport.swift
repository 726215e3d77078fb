import PushSealJSON
import PushSealSystem
import PushSealCLI
import PushSealCrypto
import PushSealKeyRecords
import PushSealDeviceKeys
import PushSealKeychain
import PushSealServerKeys

/// `push-keys import`: add a key record to a keychain.
struct KeyImportCommand: OptionsCommand {
    let path = ["import"]
    static let appID = KeysetOptions.appIDOption.withHelp("refuse a record for another app id")
    static let deviceItems = Option.flag("--device-items", "the default into a device keychain (IDENTITY given), kept for scripts: one kind 1 item per key in the one device layout (docs/keychain.md \"Device key items\", as the iOS reference writes them), under the app's key manifest")
    static let legacyKeyset = Option.flag("--legacy-keyset", "into a device keychain: write the legacy keyset item (pushseal.keyset:APP) instead of key items, as before 0.2.0 (the iOS reference cannot read it; for tests of the legacy reader and of the conversion)")
    static let acceptSealCount = Option.flag("--accept-seal-count", "into a server keychain: accept a primary key that has already sealed in another store (its seal count is not 0); see keys.md, one key, one sealing store")

    let options = [KeyOptions.keychainCreated.spec] + KeyOptions.identity + [KeyOptions.auditLog.spec, KeyOptions.accessibility.spec,
        KeyImportCommand.appID.spec,
        KeyImportCommand.deviceItems.spec,
        KeyImportCommand.legacyKeyset.spec,
        KeyImportCommand.acceptSealCount.spec,
        KeyOptions.grace("grace window of a local primary superseded by the record's newer one").spec, KeyOptions.now.spec]
    let help = HelpText(
        overview: "import a JSON key record, or a revocation record, (from a file or stdin) into a server or device keychain; idempotent and all-or-nothing: any error changes nothing",
        usage: ["push-keys import --keychain DIR [IDENTITY] [--app-id APP] [--legacy-keyset] [--accept-seal-count] [--accessibility A] [--grace DURATION] [--audit-log FILE] [--now UNIX] [FILE | -] [--json]"],
        examples: [
            "push-keys import --keychain device-kc --entitlements app.json alice.key.json   # server generated, device imports: one kind 1 item per key, as on iOS",
            "push-keys import --keychain server-kc --app-id com.example.app device.key.json   # device generated, server imports",
        ],
        exitCodes: KeyOptions.exitCodes(
            usage: ["an unknown --accessibility", "a malformed --app-id", "a bad --grace or --now", "more than one FILE"],
            dataError: "into a device keychain, an --access-group other than the one holding the app's key items and key manifest (accessGroupMismatch; nothing changed: import into that group, or move it first with push-keys keychain migrate); a malformed or truncated key record or one over 1 MiB, a record for another app id (--app-id, or the identity's application-identifier), a key id already in the keyset with other key bytes, a primary that has already sealed elsewhere into a server keychain (without --accept-seal-count)",
            noInput: "FILE missing",
            createsKeychain: true,
            cannotCreate: "DIR could not be created as a new keychain",
            ioError: "reading FILE, the keychain, its lock file or the audit log",
            noPermission: "FILE not readable"),
        notes: KeyOptions.notes([
            "A revocation record, {\"format\":\"pushseal-revocation\",\"version\":1,\"appId\",\"keyIds\":[…],\"revokedAt\"}, disables every listed key id in every keyset of the app and every device key item of it (v1 and v2 keys, pinned sender keys; --json: disabledItems [{kind, keyId}]) (retiredAt = revokedAt, key bytes dropped): a device then shows the fallback for messages under those keys (keyDisabled). It holds no key bytes; deliver it over a channel that does not rely on the revoked key.",
            "A key record holds key bytes: when FILE (or a regular file on standard input) is readable by group or others, a warning on stderr says so (the import goes on); chmod 600 it, or delete it once imported.",
            "Into a server keychain (no IDENTITY), a primary key new to it whose seal count is not 0 is refused: it is sealing in another store, and each store counts only its own seals toward the 2^32 limit. --accept-seal-count imports it anyway (when the other store has stopped sealing with it).",
            "FILE, - or none reads the record from standard input. Into a server keychain (or with --legacy-keyset): a new keyset is created when the keychain has none for the record's app id and recipient; otherwise keys are added and statuses only move forward. When the record's primary is newer than the local one, the local primary becomes decryptOnly for --grace.",
            "Into a device keychain (IDENTITY given): each key becomes a kind 1 key item (service pushseal.key:APP, account = key id, label \"PushSeal v1 key\", accessibility afterFirstUnlockThisDeviceOnly; docs/keychain.md \"Device key items\"), written under the app's key manifest (the rollback guard); statuses only move forward, a destroyed key's item is deleted, a disabled key keeps no bytes. A legacy keyset item of the same app id and recipient (written before 0.2.0) is converted first: its keys become key items, its generation counter is closed and the item is deleted (--json: convertedKeysetKeyIds). --json: {\"appId\", \"recipient\", \"changedKeyIds\", \"convertedKeysetKeyIds\", \"layout\": \"deviceItems\"}.",
        ], audited: true))

    struct Options: CommandOptions {
        let file: String?, store: KeyStoreOptions, accessibility: Accessibility, expectedAppID: String?, now: Int64, grace: Int64
        /// Kind 1 device key items instead of a keyset: a device identity without `--legacy-keyset`.
        let deviceItems: Bool
        /// `--legacy-keyset`: a keyset item into a device keychain, as before 0.2.0.
        let legacyKeyset: Bool
        /// `--accept-seal-count`: a server keychain takes a primary that has sealed elsewhere (F11).
        let acceptSealCount: Bool
        init(parsing a: Arguments) throws {
            file = try Positionals(a, max: 1).first
            store = try KeyStoreOptions(parsing: a)
            acceptSealCount = a.has(KeyImportCommand.acceptSealCount)
            legacyKeyset = a.has(KeyImportCommand.legacyKeyset)
            deviceItems = a.has(KeyImportCommand.deviceItems) || (!store.identity.isEmpty && store.keystore.registry == nil && !legacyKeyset)
            accessibility = try keyAccessibility(a)
            expectedAppID = try keyAppID(a)
            now = try keyNow(a)
            grace = try keyGrace(a, now: now)
        }
        func validate() throws {
            try store.validate()
            if legacyKeyset, store.identity.isEmpty {
                throw CLIError.usage("--legacy-keyset writes a device keychain", hint: "add --entitlements FILE (the app's entitlements)")
            }
            guard deviceItems else { return }
            if legacyKeyset { throw CLIError.usage("--device-items and --legacy-keyset exclude each other") }
            if store.identity.isEmpty { throw CLIError.usage("--device-items needs the device identity", hint: "add --entitlements FILE (the app's entitlements)") }
            if store.keystore.registry != nil { throw CLIError.usage("--device-items writes a device keychain, not a --registry") }
            if accessibility != DeviceKeyItem.accessibility {
                throw CLIError.usage("device key items are all \(DeviceKeyItem.accessibility.rawValue) (docs/keychain.md \"Device key items\"); drop --accessibility (or add --legacy-keyset for a keyset item)")
            }
        }
    }

    func run(_ o: Options, _ c: CommandContext) throws -> ExitCode {
        let (acc, now, grace) = (o.accessibility, o.now, o.grace)
        keyWarnIfLockedOut(acc, c)
        var bytes = try InputReader.readAll(o.file, limitByteCount: 1 << 20)
        if RevocationRecord.isRevocationRecord(bytes) {
            defer { SecretBytes.wipe(&bytes) }
            return try importRevocation(bytes, o, c, now: now, accessibility: acc)
        }
        warnIfExposed(o.file, c)
        let record: KeyRecord
        do {
            defer { SecretBytes.wipe(&bytes) }
            record = try keyMapErrors {
                do { return try KeyRecord(wiping: &bytes) } catch let e as KeysError where e.code == .invalidName {
                    throw KeysError(.malformedRecord, "key record: \(e.reason)")
                }
            }
        }
        if o.deviceItems { return try importItems(record, o, c) }
        let store = try o.store.open(create: true, accessibility: acc)
        if !o.store.identity.isEmpty, let device = store as? KeyStore {
            // A legacy keyset written into a device keychain is a run of the app too: the
            // first-run check (install marker) comes first, so a later import or `device
            // generate` converts this keyset instead of removing it as a leftover.
            try DeviceReinstall.prepareRun(device.keychain, accessGroup: device.accessGroup, appID: record.appID, c)
        }
        let result = try keyMapErrors {
            if o.store.identity.isEmpty, !o.acceptSealCount {
                var existing: KeysetInfo?
                do { existing = try store.keyset(appID: record.appID, recipient: record.recipient) } catch let e as KeysError where e.code == .unknownKeyset {}
                try record.checkOneSealingStore(existing: existing)
            }
            return try store.importRecord(record, expectedAppID: o.expectedAppID, graceSeconds: grace, now: now)
        }
        if c.json {
            keyPrintJSON(.object(JSONObject([("created", .bool(result.created)), ("changedKeyIds", .array(result.changedKeyIDs.map { .string($0) })),
                                  ("keyset", KeyJSON.keyset(result.keyset))])))
        } else {
            Output.stdout("\(record.appID) \(record.recipient): \(result.changedKeyIDs.isEmpty ? "already up to date" : "imported " + result.changedKeyIDs.joined(separator: " "))\n")
        }
        return .success
    }

    /// Into a device keychain: the record's keys as kind 1 device key items
    /// (``DeviceKeyItem/importV1``), after converting a legacy keyset of the same recipient.
    private func importItems(_ record: KeyRecord, _ o: Options, _ c: CommandContext) throws -> ExitCode {
        let store = try o.store.openKeychain(create: true, accessibility: DeviceKeyItem.accessibility)
        // The app's items and manifest stay in one group: an import aimed at another is refused first.
        // Then, a run of the app like `device generate`: on a first run after a reinstall (no
        // install marker) PushSeal's leftover items of the app go first, and the marker is
        // written, so a later `device generate` keeps what this import writes.
        try DeviceReinstall.prepareWrite(store.keychain, accessGroup: store.accessGroup, appID: record.appID, c)
        let (converted, changed) = try keyMapErrors {
            if let expected = o.expectedAppID, expected != record.appID {
                throw KeysError(.wrongAppID, "the key record is for \(record.appID), not \(expected)")
            }
            try record.checkApplicationIdentifier(store.keychain.entitlements.applicationIdentifier)
            let converted = try DeviceKeyItem.convertKeysets(appID: record.appID, recipient: record.recipient, in: store)
            return (converted, try DeviceKeyItem.importV1(record, in: store.keychain, accessGroup: store.accessGroup))
        }
        if c.json {
            keyPrintJSON(.object(JSONObject([("appId", .string(record.appID)), ("recipient", .string(record.recipient)),
                                             ("changedKeyIds", .array(changed.map { .string($0) })),
                                             ("convertedKeysetKeyIds", .array(converted.map { .string($0) })), ("layout", .string("deviceItems"))])))
        } else {
            Output.stdout("\(record.appID) \(record.recipient): \(changed.isEmpty ? "already up to date" : "imported " + changed.joined(separator: " "))\n")
        }
        return .success
    }

    /// A revocation record (security review F4): every listed key id of the app becomes
    /// disabled in this keychain, so the device stops opening (and trusting) messages under it.
    private func importRevocation(_ bytes: [UInt8], _ o: Options, _ c: CommandContext, now: Int64, accessibility acc: Accessibility) throws -> ExitCode {
        let record = try keyMapErrors { try RevocationRecord(json: bytes) }
        let store = try o.store.openKeychain(create: false, accessibility: acc)
        let result = try keyMapErrors { try store.importRevocation(record, expectedAppID: o.expectedAppID, now: now) }
        // The device key items of docs/keychain.md "Device key items" (v1, v2 and pinned sender keys) too.
        let items = try keyMapErrors { try DeviceKeyItem.revoke(record, in: store.keychain, accessGroup: store.accessGroup) }
        let itemIDs = try keyMapErrors {
            try DeviceKeyItem.list(appID: record.appID, in: store.keychain, accessGroup: store.accessGroup).map(\.keyID)
        }
        let unknown = result.unknownKeyIDs.filter { !itemIDs.contains($0) }
        if c.json {
            let disabled = result.disabled.map { d -> JSONValue in .object(JSONObject([("recipient", .string(d.recipient)), ("keyId", .string(d.keyID))])) }
            let disabledItems = items.map { d -> JSONValue in .object(JSONObject([("kind", .string(d.kind.name)), ("keyId", .string(d.keyID))])) }
            keyPrintJSON(.object(JSONObject([("disabled", .array(disabled)), ("disabledItems", .array(disabledItems)),
                                             ("unknownKeyIds", .array(unknown.map { .string($0) }))])))
        } else {
            let changed = result.disabled.map { "\($0.recipient)/\($0.keyID)" } + items.map { "\($0.kind.name):\($0.keyID)" }
            Output.stdout("\(record.appID): \(changed.isEmpty ? "no key changed" : "disabled " + changed.joined(separator: " "))\n")
            if !unknown.isEmpty { c.warn("not in this keychain: \(unknown.joined(separator: " "))") }
        }
        return .success
    }
}

/// Warns when the record's file is readable by group or others (export never writes one so).
/// - Parameters:
///   - path: FILE, or nil / `-` for standard input (checked only when it is a regular file).
private func warnIfExposed(_ path: String?, _ c: CommandContext) {
    let status: PrivateFile.Status?
    let name: String
    if let path, path != "-" {
        status = try? PrivateFile.status(followingLinks: path)  // readAll reports the error
        name = path
    } else {
        status = try? PrivateFile.status(of: FileDescriptor.standardInput)
        name = "standard input"
    }
    guard let status, status.kind == .regular, status.mode & 0o044 != 0 else { return }
    let mode = String(status.mode, radix: 8)
    c.warn("\(name) is readable by group or others (mode \(mode)) and holds key bytes; chmod 600 it, or delete it once imported")
}
