import PushSealJSON
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import PushSealCLI
import PushSealExtension
import PushSealSystem

extension OpenCommand {
    /// `--strings DIR`: the app's localized strings, for a localized fallback alert.
    static let stringsOption = Option.text("--strings", "DIR", "the app's strings for a localized fallback alert (title-loc-key, loc-key, loc-args): DIR/<locale>.lproj/Localizable.strings for --locale (then its shorter tags, e.g. pt-BR, pt_BR, pt), else DIR/Base.lproj/Localizable.strings, else DIR/Localizable.strings; without it a localized alert shows its keys")

    /// The largest `Localizable.strings` read: 8 MiB.
    static let maxStringsByteCount = 8 << 20

    /// The files `--strings DIR` tries, in order, for `locale` (`pt-BR`: `pt-BR.lproj`,
    /// `pt_BR.lproj`, `pt.lproj`), then `Base.lproj`, then `DIR/Localizable.strings`.
    static func stringsCandidates(_ dir: String, locale: String?) -> [String] {
        var names: [String] = []
        if var tag = locale?.replacing("_", with: "-"), !tag.isEmpty {
            while true {
                for spelling in [tag, tag.replacing("-", with: "_"), tag.lowercased()] where !names.contains(spelling + ".lproj") {
                    names.append(spelling + ".lproj")
                }
                guard let cut = tag.lastIndex(of: "-") else { break }
                tag = String(tag[..<cut])
            }
        }
        names.append("Base.lproj")
        let base = URL(fileURLWithPath: dir, isDirectory: true)
        return names.map { base.appendingPathComponent($0).appendingPathComponent("Localizable.strings").path }
            + [base.appendingPathComponent("Localizable.strings").path]
    }

    /// Reads the table `--strings DIR` names for `locale` (``stringsCandidates(_:locale:)``, the first that exists).
    /// - Throws: `CLIError` 66 `noStrings` when DIR has none of them (or is missing), 65
    ///   `invalidStrings` for a file that does not parse (naming the file and line), 74/77 when
    ///   it cannot be read.
    static func loadStrings(_ dir: String?, locale: String?) throws -> LocalizableStrings {
        guard let dir else { return LocalizableStrings() }
        let candidates = stringsCandidates(dir, locale: locale)
        guard let path = candidates.first(where: { FileManager.default.fileExists(atPath: $0) }) else {
            throw CLIError(code: "noStrings", "no Localizable.strings in \(dir) for \(locale.map { "locale \($0)" } ?? "no --locale")",
                           hint: "looked for \(candidates.map { String($0.dropFirst(dir.count)).trimmingPrefix("/") }.joined(separator: ", "))", exitCode: .noInput)
        }
        let bytes = try InputReader.readAll(path, limitByteCount: maxStringsByteCount)
        do {
            return try LocalizableStrings(bytes: bytes)
        } catch let e as ExtensionError {
            throw CLIError(code: e.code.name, "\(path): \(e.reason)", hint: "a Localizable.strings holds lines \"key\" = \"value\"; in UTF-8, or UTF-16 with its byte order mark", exitCode: .dataError)
        }
    }

    /// Refuses what `push-seal` wraps around a payload (`--with-headers`' `{headers, payload}`,
    /// a `push-seal batch` output line) and a batch error line, saying how to pass the payload.
    /// - Throws: `CLIError` 65 `wrappedPayload` or `batchErrorLine`.
    static func refuseWrapper(_ input: JSONValue) throws {
        guard case .object(let o) = input, o["aps"] == nil else { return }
        if case .object? = o["payload"] {
            throw CLIError(code: "wrappedPayload", "the input is push-seal's {\"headers\", \"payload\"} wrapper (--with-headers, or a push-seal batch output line), not an APNs payload",
                           hint: "pass its payload member: jq -c .payload FILE | push-open … -", exitCode: .dataError)
        }
        if case .object? = o["error"], o["line"] != nil {
            throw CLIError(code: "batchErrorLine", "the input is a push-seal batch error line: that line was not sealed, there is no payload",
                           hint: "see its error member for why", exitCode: .dataError)
        }
    }

    /// The presentation fields of `c` as push-open's result members: badge, sound
    /// (`{"name", "critical", "volume"}`), threadIdentifier, categoryIdentifier,
    /// interruptionLevel, relevanceScore, targetContentIdentifier, filterCriteria (`null` when absent).
    static func presentationJSON(_ c: UNNotificationContent?, into o: inout JSONObject) {
        o["badge"] = c?.badge.map { .integer(Int64($0)) } ?? .null
        if let s = c?.sound {
            var so: JSONObject = ["name": .string(s.name), "critical": .bool(s.isCritical)]
            so["volume"] = s.volume.map { .number($0) } ?? .null
            o["sound"] = .object(so)
        } else {
            o["sound"] = .null
        }
        o["threadIdentifier"] = c.map { .string($0.threadIdentifier) } ?? .null
        o["categoryIdentifier"] = c.map { .string($0.categoryIdentifier) } ?? .null
        o["interruptionLevel"] = c.map { .string($0.interruptionLevel.rawValue) } ?? .null
        o["relevanceScore"] = c?.relevanceScore.map { .number($0) } ?? .null
        o["targetContentIdentifier"] = c?.targetContentIdentifier.map { .string($0) } ?? .null
        o["filterCriteria"] = c?.filterCriteria.map { .string($0) } ?? .null
    }
}
