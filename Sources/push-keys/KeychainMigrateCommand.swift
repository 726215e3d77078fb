import PushSealJSON
import Foundation
import PushSealCLI
import PushSealCrypto
import PushSealKeychain

/// `push-keys keychain migrate --from G1 --to G2 [--app-id A]`: moves every PushSeal item
/// (service `pushseal.…`; of one app with `--app-id`) from one keychain access group to another,
/// as an app does on its first launch after adding a shared group for its extension
/// (docs/keychain.md "Moving keys between access groups").
struct KeychainMigrateCommand: OptionsCommand {
    let path = ["keychain", "migrate"]
    static let from = Option.text("--from", "G1", "the access group the items are in now (required)")
    static let to = Option.text("--to", "G2", "the access group they move to (required; the app must be entitled to both)")
    static let appID = KeysetOptions.appIDOption.withHelp("only this app's items (service pushseal.…:APP); default: every PushSeal item of the group")

    let options: [OptionSpec] = [
        KeychainCommands.keychainOption,
        KeychainMigrateCommand.from.spec,
        KeychainMigrateCommand.to.spec,
        KeychainMigrateCommand.appID.spec,
    ]
    let help = HelpText(
        overview: "move PushSeal's keychain items (key items, key manifests, keysets and their counters; services pushseal.…) from one access group to another: copy each, verify the copies, then delete the source copies naming their group; crash-safe (a rerun finishes) and idempotent",
        usage: ["push-keys keychain migrate --keychain DIR --from G1 --to G2 [--app-id APP] [--json]"],
        examples: ["push-keys keychain migrate --keychain device-kc --from TEAMID.com.example.app --to TEAMID.com.example.shared --app-id com.example.app"],
        exitCodes: KeychainCommands.exitCodes(
            keychainError: "errSecInteractionNotAllowed -25308 while the device state forbids reading an item",
            usage: ["--from equal to --to", "an --app-id that is not a bundle identifier"],
            dataError: "the target group holds an item of the same service and account with other data (nothing changed)",
            readsSecrets: true),
        notes: """
            STEPS: (1) read every PushSeal item of G1 (and of APP) and check G2: an item of the same class, service and account with other data refuses the whole migration before anything changes (exit 65, the item named); the same data counts as already copied. (2) add the missing copies to G2 with the same label and accessibility (the key manifest last), (3) read every copy back and compare, (4) delete each source item naming G1 (a delete that names no group would match every group the caller reaches), the key manifest last. A crash leaves two copies or the source only, never neither: run the same command again to finish. With nothing left in G1: "nothing to migrate", and no file changes. A reader that searches every group (the extension without a named group) opens throughout; one that names G2 opens once the migration finished.

            OUTPUT: "migrated N items from G1 to G2" (N copied or found copied, and deleted from G1), or "nothing to migrate"; --json: {"from", "to", "appId", "copied", "alreadyCopied", "deleted"}.
            """
    )

    struct Options: CommandOptions {
        let keychain: URL, from: String, to: String, appID: String?
        init(parsing a: Arguments) throws {
            _ = try Positionals(a, max: 0)
            keychain = try KeychainCommands.keychainURL(a)
            from = try a.required(KeychainMigrateCommand.from)
            to = try a.required(KeychainMigrateCommand.to)
            appID = try keyAppID(a)
        }
        func validate() throws {
            guard from != to else { throw CLIError.usage("--from and --to name the same group \(quoted(from))") }
        }
    }

    /// Services of PushSeal's items, optionally of one app.
    static func isPushSealService(_ service: String, appID: String?) -> Bool {
        guard service.hasPrefix("pushseal.") else { return false }
        guard let appID else { return true }
        return service.hasSuffix(":" + appID)
    }

    /// The key manifest goes last (added last, deleted last): until then the items it vouches
    /// for are in place in both groups.
    static func isManifest(_ item: KeychainItem) -> Bool { item.attributes.service.hasPrefix("pushseal.manifest:") }

    func run(_ o: Options, _ context: CommandContext) throws -> ExitCode {
        let kc = try KeychainCommands.open(o.keychain, as: Entitlements(keychainAccessGroups: [o.from, o.to]))
        return try KeychainCommands.mapping {
            var sources: [KeychainItem]
            do {
                sources = try kc.copyMatching(ItemQuery(itemClass: .genericPassword, accessGroup: o.from), limit: .all, returning: [.attributes, .data])
            } catch let e as KeychainError where e.code == .itemNotFound {
                sources = []
            }
            sources = sources.filter { Self.isPushSealService($0.attributes.service, appID: o.appID) }
            sources.sort { (Self.isManifest($0) ? 1 : 0, $0.attributes.service, $0.attributes.account) < (Self.isManifest($1) ? 1 : 0, $1.attributes.service, $1.attributes.account) }
            guard !sources.isEmpty else {
                report(o, context, copied: 0, alreadyCopied: 0, deleted: 0)
                return .success
            }
            // 1. Check every target first: a different item of the same name changes nothing.
            var missing: [KeychainItem] = []
            for item in sources {
                let a = item.attributes
                guard let target = try targetData(kc, a, group: o.to) else { missing.append(item); continue }
                guard let data = item.data, target.copyBytes() == data.copyBytes() else {
                    throw CLIError(code: "targetConflict",
                                   "\(o.to) already holds an item \(a.service) / \(a.account) with other data; nothing was migrated",
                                   hint: "inspect it with push-keys keychain get --keychain DIR --access-group \(o.to) --service \(quoted(a.service)) --account \(quoted(a.account)); delete it (naming --access-group) if it is stale, then run the migration again",
                                   exitCode: .dataError)
                }
            }
            // 2. Copies (the manifest last), 3. verified.
            for item in missing {
                guard let data = item.data else { continue }
                let a = item.attributes
                _ = try kc.add(a.itemClass, service: a.service, account: a.account, label: a.label, accessGroup: o.to,
                               accessibility: a.accessibility, data: data)
            }
            for item in sources {
                let a = item.attributes
                guard let copy = try targetData(kc, a, group: o.to), let data = item.data, copy.copyBytes() == data.copyBytes() else {
                    throw CLIError(code: "verifyFailed", "the copy of \(a.service) / \(a.account) in \(o.to) does not read back as written; the source copies are kept",
                                   hint: "run the migration again", exitCode: .ioError)
                }
            }
            // 4. The source copies, each naming its group (the manifest last).
            var deleted = 0
            for item in sources {
                let a = item.attributes
                do {
                    deleted += try kc.delete(ItemQuery(itemClass: a.itemClass, service: a.service, account: a.account, accessGroup: o.from))
                } catch let e as KeychainError where e.code == .itemNotFound {
                    continue
                }
            }
            report(o, context, copied: missing.count, alreadyCopied: sources.count - missing.count, deleted: deleted)
            return .success
        }
    }

    /// The data of the item named like `a` in `group`, or nil when there is none.
    private func targetData(_ kc: Keychain, _ a: ItemAttributes, group: String) throws -> SecretBytes? {
        do {
            return try kc.copyMatching(ItemQuery(itemClass: a.itemClass, service: a.service, account: a.account, accessGroup: group),
                                       returning: .data).first?.data
        } catch let e as KeychainError where e.code == .itemNotFound {
            return nil
        }
    }

    private func report(_ o: Options, _ context: CommandContext, copied: Int, alreadyCopied: Int, deleted: Int) {
        if context.json {
            Output.printJSON(["from": .string(o.from), "to": .string(o.to), "appId": o.appID.map(JSONValue.string) ?? .null,
                              "copied": .integer(Int64(copied)), "alreadyCopied": .integer(Int64(alreadyCopied)), "deleted": .integer(Int64(deleted))])
        } else if copied + alreadyCopied + deleted == 0 {
            Output.stdout("nothing to migrate\n")
        } else {
            Output.stdout("migrated \(copied + alreadyCopied) items from \(o.from) to \(o.to)\n")
        }
    }
}
