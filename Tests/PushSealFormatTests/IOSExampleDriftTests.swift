import Foundation
import PushSealCrypto
import PushSealFormat
import PushSealKeychain
import Testing

/// Keeps the iOS reference extension (`Examples/iOS/NotificationService.swift`, which cannot be
/// compiled on Linux) and the normative spec (`docs/FORMAT.md`) in step with the PushSealFormat
/// code that every other part of PushSeal uses.
///
/// Every name comes from the real implementation, never from a copy in this file:
/// the payload field names and algorithm from `WireFormat`'s constants, the AAD text from
/// `WireFormat.aad(algorithm:keyID:appID:)`, the plaintext member names from what
/// `Notification.jsonValue()` actually writes, the accessibility constant from
/// `PushSealKeychain.Accessibility`. The two texts are then searched for exactly those names,
/// and the member names each text uses are collected and compared as sets.
///
/// Why a rename in one place only fails:
/// - renamed in PushSealFormat (e.g. `keyIDField = "kid"`): the example's
///   `userInfo["key_id"]` and FORMAT.md's `` `key_id` `` row no longer match `"kid"`, and the
///   sets collected from both texts differ from the new set;
/// - renamed in the example (e.g. `object["expires"]`): `["exp"]` is missing from it, and the
///   set of `["…"]` subscripts it reads gains `expires`;
/// - renamed in FORMAT.md (e.g. the §5 row `` `expires` ``): the §5 member set differs;
/// - AAD prefix or separator changed anywhere: the exact text built by `WireFormat.aad` is no
///   longer found in the other two.
/// Tried by hand on 2026-11-30: renaming `"exp"` in the example, and `` `key_id` `` in FORMAT.md's
/// §3 table, each made this suite fail with the name in the message.
@Suite("iOS example and FORMAT.md agree with PushSealFormat")
struct IOSExampleDriftTests {
    static let repoRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// A text file, described by its path only (so a failed expectation does not print it whole).
    struct Document: CustomStringConvertible {
        let path: String
        let text: String
        var description: String { path }
        func contains(_ needle: String) -> Bool { text.contains(needle) }
    }

    static func document(_ relativePath: String) throws -> Document {
        Document(path: relativePath, text: try String(contentsOf: repoRoot.appendingPathComponent(relativePath), encoding: .utf8))
    }

    static func example() throws -> Document { try document("Examples/iOS/NotificationService.swift") }
    static func format() throws -> Document { try document("docs/FORMAT.md") }

    /// The three payload fields, from the real constants.
    static let fields = [WireFormat.encryptedDataField, WireFormat.keyIDField, WireFormat.algorithmField]

    /// Member names the real plaintext codec writes, found by encoding a plaintext with every
    /// member set: (top level, inside `media`, inside one `localizations` variant).
    static func plaintextMemberNames() throws -> (top: Set<String>, media: Set<String>, localized: Set<String>) {
        let full = Notification(
            title: "t", subtitle: "s", body: "b",
            media: MediaDescriptor(url: "https://example.com/a.png", type: "image/png",
                                   sha256: [UInt8](repeating: 1, count: 32), key: SecretBytes(copying: [UInt8](repeating: 2, count: 32))),
            localizations: [(locale: "fr", content: LocalizedContent(title: "t", subtitle: "s", body: "b"))],
            data: ["k": .string("v")], iat: 1, exp: 2, id: "i")
        let object = try #require(try full.jsonValue().objectValue)
        let media = try #require(object["media"]?.objectValue)
        let variant = try #require(object["localizations"]?.objectValue?["fr"]?.objectValue)
        return (Set(object.members.map(\.key)), Set(media.members.map(\.key)), Set(variant.members.map(\.key)))
    }

    /// All `["name"]` string subscripts in a Swift source: the JSON members it reads.
    static func stringSubscripts(in source: String) throws -> Set<String> {
        let regex = try NSRegularExpression(pattern: #"\["([A-Za-z0-9_\-]+)"\]"#)
        let range = NSRange(source.startIndex..., in: source)
        return Set(regex.matches(in: source, range: range).compactMap { m in
            Range(m.range(at: 1), in: source).map { String(source[$0]) }
        })
    }

    /// First-column names of the Markdown table rows (`` | `name` | ``) between two headings.
    static func tableNames(in markdown: String, from start: String, to end: String) throws -> Set<String> {
        let lower = try #require(markdown.range(of: start), "FORMAT.md has no heading \(start)")
        let upper = try #require(markdown.range(of: end, range: lower.upperBound..<markdown.endIndex), "FORMAT.md has no heading \(end)")
        let section = String(markdown[lower.upperBound..<upper.lowerBound])
        let regex = try NSRegularExpression(pattern: #"(?m)^\| `([^`]+)` \|"#)
        return Set(regex.matches(in: section, range: NSRange(section.startIndex..., in: section)).compactMap { m in
            Range(m.range(at: 1), in: section).map { String(section[$0]) }
        })
    }

    @Test("the example reads exactly the payload fields and plaintext members of PushSealFormat")
    func exampleMemberNames() throws {
        let source = try Self.example()
        let names = try Self.plaintextMemberNames()
        for field in Self.fields {
            #expect(source.contains("userInfo[\"\(field)\"]"), "the example does not read the payload field \(field)")
        }
        for member in names.top.union(names.media).union(names.localized) {
            #expect(source.contains("[\"\(member)\"]"), "the example does not read the plaintext member \(member)")
        }
        let read = try Self.stringSubscripts(in: source.text)
        let expected = Set(Self.fields).union(names.top).union(names.media).union(names.localized)
        #expect(read == expected, "members only in the example: \(read.subtracting(expected).sorted()); only in PushSealFormat: \(expected.subtracting(read).sorted())")
    }

    @Test("FORMAT.md's §3 and §5 tables list the same names as PushSealFormat")
    func formatMemberNames() throws {
        let spec = try Self.format()
        let names = try Self.plaintextMemberNames()
        let fieldRows = try Self.tableNames(in: spec.text, from: "## 3. The sealed fields", to: "### 3.1")
        #expect(fieldRows == Set(Self.fields), "FORMAT.md §3 rows \(fieldRows.sorted()) vs WireFormat \(Self.fields)")
        let memberRows = try Self.tableNames(in: spec.text, from: "## 5. The plaintext", to: "## 6.")
        let expected = names.top.union(names.media)
        #expect(memberRows == expected, "FORMAT.md §5 rows only: \(memberRows.subtracting(expected).sorted()); code only: \(expected.subtracting(memberRows).sorted())")
        // A localizations variant holds the text members only.
        #expect(!names.localized.isEmpty && names.localized.isSubset(of: names.top))
        for field in Self.fields {
            #expect(spec.contains("\"\(field)\":"), "FORMAT.md's example payload lacks \(field)")
        }
    }

    @Test("algorithm string agrees")
    func algorithm() throws {
        let source = try Self.example()
        let spec = try Self.format()
        #expect(source.contains("algorithm == \"\(WireFormat.algorithm)\""), "the example does not require enc_alg == \(WireFormat.algorithm)")
        #expect(spec.contains("exactly `\(WireFormat.algorithm)`"), "FORMAT.md does not define enc_alg as \(WireFormat.algorithm)")
        #expect(spec.contains("\"\(WireFormat.algorithmField)\": \"\(WireFormat.algorithm)\""))
    }

    @Test("AAD prefix, separator and order agree")
    func aad() throws {
        let source = try Self.example()
        let spec = try Self.format()
        // The example builds the AAD by interpolation: render WireFormat.aad with the
        // interpolation texts as the parts and look for the result verbatim.
        let interpolated = String(decoding: WireFormat.aad(algorithm: #"\(algorithm)"#, keyID: #"\(keyID)"#, appID: #"\(appID)"#), as: UTF8.self)
        #expect(source.contains("\"\(interpolated)\""), "the example's AAD is not \(interpolated)")
        // The spec's template, and its worked example in text and hex.
        let template = String(decoding: WireFormat.aad(algorithm: "<enc_alg>", keyID: "<key_id>", appID: "<app_id>"), as: UTF8.self)
        #expect(spec.contains(template), "FORMAT.md §3.2 does not give the AAD as \(template)")
        let worked = WireFormat.aad(algorithm: WireFormat.algorithm, keyID: "k1", appID: "com.example.app")
        #expect(spec.contains("text: " + String(decoding: worked, as: UTF8.self)))
        #expect(spec.contains(worked.map { String(format: "%02x", $0) }.joined()), "FORMAT.md's AAD hex differs from WireFormat.aad")
        // The example opens CryptoKit's combined layout, as FORMAT.md §3.1 says.
        #expect(source.contains("AES.GCM.SealedBox(combined: box)"))
        #expect(source.contains("authenticating: aad)"))
        #expect(spec.contains("`AES.GCM.SealedBox(combined:)`") && spec.contains("`AES.GCM.open(_:using:authenticating:)`"))
    }

    @Test("the key is stored AfterFirstUnlockThisDeviceOnly, readable while locked")
    func keychainAccessibility() throws {
        let source = try Self.example()
        let wanted = Accessibility.afterFirstUnlockThisDeviceOnly
        #expect(wanted.isAvailableWhileLocked && wanted.isThisDeviceOnly)
        let assigned = Accessibility.allCases.filter { source.contains("kSecAttrAccessible as String] = \($0.constantName)\n") }
        #expect(assigned == [wanted], "the example stores its key item with \(assigned.map(\.constantName))")
        #expect(source.contains("kSecClass as String: kSecClassGenericPassword"))
    }
}
