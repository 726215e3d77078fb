import PushSealJSON
import Foundation
import PushSealCrypto
import PushSealWire
import PushSealKeychain
import Testing

/// Keeps the iOS reference (`Examples/iOS/*.swift`, which cannot be compiled on Linux), the
/// normative specs (`docs/FORMAT.md`, `docs/keychain.md`), the Python reference
/// (`Tests/Interop/pushseal_ref.py`) and the PushSealWire code in step.
///
/// Every name comes from a source of truth, never from a copy in this file: the v1 payload field
/// names and algorithm from `WireFormat`'s constants, the v1 AAD from `WireFormat.aad`, the
/// plaintext member names from what `PushNotification.jsonValue()` writes, the accessibility
/// constant from `PushSealKeychain.Accessibility`; the v2 names, `info` strings and error codes
/// from FORMAT.md's part 2 tables and the Python reference; the key item layout (services,
/// labels, accessibility, record offsets, kinds, status codes) from keychain.md's table and
/// record diagram; the sealed presentation members from Examples/iOS/README.md's table. The
/// iOS texts are then searched for exactly those names, and the member names each text uses
/// are collected and compared as sets.
///
/// Why a rename in one place only fails:
/// - renamed in PushSealWire (e.g. `keyIDField = "kid"`): the example's
///   `userInfo["key_id"]` and FORMAT.md's `` `key_id` `` row no longer match `"kid"`, and the
///   sets collected from both texts differ from the new set;
/// - renamed in the example (e.g. `object["expires"]`): `["exp"]` is missing from it, and the
///   set of `["…"]` subscripts it reads gains `expires`;
/// - renamed in FORMAT.md (e.g. the §5 row `` `expires` ``, an `enc_alg` of §V.2, the `info`
///   of §V.3.2) or keychain.md (a service, label, offset, kind or status number): the parsed
///   value no longer matches the iOS text (and for `enc_alg`, the Python reference);
/// - AAD or `info` prefix or separator changed anywhere: the exact text built from one source
///   is no longer found in the others.
/// Tried by hand on 2026-11-30: renaming `"exp"` in the example, and `` `key_id` `` in FORMAT.md's
/// §3 table, each made this suite fail with the name in the message. Tried on 2026-12-01, each
/// failing at least one test: in keychain.md the `retiredAt` offset 11 → 12 and status
/// `3 decryptOnly` → `5`; in FORMAT.md `HPKE-AUTH-…` → `HPKE-AUTHX-…` (§V.2) and the auth `info`
/// with `sender_key_id` before `app_id` (§V.3.2); in the example the label `PushSeal v2 Key`,
/// the service prefix `pushseal.keys:`, `algorithmV2Base` misspelled, the zero-shared-secret
/// call on `enc` removed, the device key looked up before the sender policy, the replay
/// guard's `evictedUntil` check removed, every delivered member copied into `userInfo`; in
/// Examples/iOS/README.md `interruption-level` → `interruptionLevel`.
@Suite("iOS example, FORMAT.md and keychain.md agree with PushSealWire and the Python reference")
struct IOSExampleDriftTests {
    static let repoRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// A text file, described by its path only (so a failed expectation does not print it whole).
    struct Document: CustomStringConvertible {
        let path: String
        let text: String
        var description: String { path }
        func contains(_ needle: String) -> Bool { text.contains(needle) }

        /// The text from the first `start` to the following `end` (exclusive).
        func section(from start: String, to end: String) throws -> Document {
            let lower = try #require(text.range(of: start), "\(path) has no \(start)")
            let upper = try #require(text.range(of: end, range: lower.upperBound..<text.endIndex), "\(path) has no \(end) after \(start)")
            return Document(path: "\(path) [\(start)…]", text: String(text[lower.lowerBound..<upper.lowerBound]))
        }

        /// Capture group `group` of every match of `pattern`, in order.
        func matches(_ pattern: String, group: Int = 1) throws -> [String] {
            try IOSExampleDriftTests.matches(pattern, in: text).map { $0[group] }
        }
    }

    static func document(_ relativePath: String) throws -> Document {
        Document(path: relativePath, text: try String(contentsOf: repoRoot.appendingPathComponent(relativePath), encoding: .utf8))
    }

    static func example() throws -> Document { try document("Examples/iOS/Sources/PushSealNotificationExtension/NotificationService.swift") }
    static func deviceKeys() throws -> Document { try document("Examples/iOS/Sources/PushSealDevice/PushSealDeviceKeys.swift") }
    static func wire() throws -> Document { try document("Examples/iOS/Sources/PushSealDevice/PushSealWire.swift") }
    static func registration() throws -> Document { try document("Examples/iOS/Sources/PushSealApp/PushSealRegistration.swift") }
    static func exampleReadme() throws -> Document { try document("Examples/iOS/README.md") }
    static func format() throws -> Document { try document("docs/FORMAT.md") }
    static func keychainDoc() throws -> Document { try document("docs/keychain.md") }
    static func pythonReference() throws -> Document { try document("Tests/Interop/pushseal_ref.py") }
    static func pythonHPKE() throws -> Document { try document("Tests/Interop/hpke_ref.py") }
    /// All Swift files of the iOS reference, one after the other.
    static func allSwift() throws -> Document {
        let files = [try example(), try deviceKeys(), try wire(), try registration()]
        return Document(path: "Examples/iOS/Sources/*/*.swift", text: files.map(\.text).joined(separator: "\n"))
    }

    /// Every match of `pattern` in `text`, each as its groups (0 = the whole match; "" for a
    /// group that did not take part).
    static func matches(_ pattern: String, in text: String) throws -> [[String]] {
        let regex = try NSRegularExpression(pattern: pattern)
        return regex.matches(in: text, range: NSRange(text.startIndex..., in: text)).map { m in
            (0..<m.numberOfRanges).map { i in Range(m.range(at: i), in: text).map { String(text[$0]) } ?? "" }
        }
    }

    /// The three v1 payload fields, from the real constants.
    static let fields = [WireFormat.encryptedDataField, WireFormat.keyIDField, WireFormat.algorithmField]

    /// Member names the real plaintext codec writes, found by encoding a plaintext with every
    /// member set: (top level, inside `media`, inside one `localizations` variant).
    static func plaintextMemberNames() throws -> (top: Set<String>, media: Set<String>, localized: Set<String>) {
        let full = PushNotification(
            title: "t", subtitle: "s", body: "b",
            media: MediaDescriptor(url: "https://example.com/a.png", type: "image/png",
                                   sha256: [UInt8](repeating: 1, count: 32), key: SecretBytes(copying: [UInt8](repeating: 2, count: 32))),
            localizations: [(locale: "fr", content: LocalizedContent(title: "t", subtitle: "s", body: "b"))],
            data: ["k": .string("v")], aps: PresentationFields(threadID: "t"), iat: 1, exp: 2, id: "i", kind: .retract, ids: ["x"])
        // Not a message a sender seals (a retract shows nothing), but the encoder writes every member.
        let object = try #require(try full.jsonValue().objectValue)
        #expect(Set(object.members.map(\.key)) == Set(NotificationMember.allCases.map(\.name)), "a member of NotificationMember is not written")
        let media = try #require(object["media"]?.objectValue)
        let variant = try #require(object["localizations"]?.objectValue?["fr"]?.objectValue)
        return (Set(object.members.map(\.key)), Set(media.members.map(\.key)), Set(variant.members.map(\.key)))
    }

    /// All `["name"]` string subscripts in a Swift source: the JSON members it reads.
    static func stringSubscripts(in source: String) throws -> Set<String> {
        Set(try matches(#"\["([A-Za-z0-9_\-]+)"\]"#, in: source).map { $0[1] })
    }

    /// First-column names of the Markdown table rows (`` | `name` | ``) between two headings.
    static func tableNames(in markdown: String, from start: String, to end: String) throws -> Set<String> {
        let section = try Document(path: "markdown", text: markdown).section(from: start, to: end)
        return Set(try section.matches(#"(?m)^\| `([^`]+)` \|"#))
    }

    /// FORMAT.md §V.3's extra field (`sender_key_id`): the §V.3 rows that §3 does not have.
    static func version2Fields() throws -> Set<String> {
        let spec = try format()
        let rows = try tableNames(in: spec.text, from: "## V.3 The sealed fields", to: "### V.3.1")
        return rows.subtracting(fields)
    }

    /// The sealed presentation members the example documents (README.md "Sealed presentation
    /// fields"): the contract the emulation's sender and extension follow too.
    static func sealedPresentationNames() throws -> Set<String> {
        try tableNames(in: try exampleReadme().text, from: "### Sealed presentation fields", to: "## Drop it into")
    }

    // MARK: v1 names (as before)

    @Test("the example reads exactly the payload fields and plaintext members of PushSealWire, FORMAT.md §V.3 and README.md")
    func exampleMemberNames() throws {
        let source = try Self.example()
        let names = try Self.plaintextMemberNames()
        let v2Fields = try Self.version2Fields()
        #expect(v2Fields == ["sender_key_id"], "FORMAT.md §V.3 adds \(v2Fields.sorted()) to §3's fields")
        let presentation = try Self.sealedPresentationNames()
        #expect(presentation.isSuperset(of: ["aps", "thread-id", "category", "interruption-level", "sound"]),
                "README.md's sealed presentation table lists \(presentation.sorted())")
        for field in Self.fields + v2Fields.sorted() {
            #expect(source.contains("userInfo[\"\(field)\"]"), "the example does not read the payload field \(field)")
        }
        for member in names.top.union(names.media).union(names.localized).union(presentation) {
            #expect(source.contains("[\"\(member)\"]"), "the example does not read the plaintext member \(member)")
        }
        let read = try Self.stringSubscripts(in: source.text)
        let expected = Set(Self.fields).union(v2Fields).union(names.top).union(names.media).union(names.localized).union(presentation)
        #expect(read == expected, "members only in the example: \(read.subtracting(expected).sorted()); only in PushSealWire/FORMAT.md/README.md: \(expected.subtracting(read).sorted())")
    }

    @Test("FORMAT.md's §3 and §5 tables list the same names as PushSealWire")
    func formatMemberNames() throws {
        let spec = try Self.format()
        let names = try Self.plaintextMemberNames()
        let fieldRows = try Self.tableNames(in: spec.text, from: "## 3. The sealed fields", to: "### 3.1")
        #expect(fieldRows == Set(Self.fields), "FORMAT.md §3 rows \(fieldRows.sorted()) vs WireFormat \(Self.fields)")
        let memberRows = try Self.tableNames(in: spec.text, from: "## 5. The plaintext", to: "## 6.")
        // The sealed aps (PresentationFields) is a §5 row too; its members are in its own row.
        let expected = names.top.union(names.media).union(["aps"])
        #expect(memberRows == expected, "FORMAT.md §5 rows only: \(memberRows.subtracting(expected).sorted()); code only: \(expected.subtracting(memberRows).sorted())")
        // A localizations variant holds the text members only.
        #expect(!names.localized.isEmpty && names.localized.isSubset(of: names.top))
        for field in Self.fields {
            #expect(spec.contains("\"\(field)\":"), "FORMAT.md's example payload lacks \(field)")
        }
    }

    @Test("v1 algorithm string agrees")
    func algorithm() throws {
        let wire = try Self.wire()
        let spec = try Self.format()
        #expect(wire.contains("static let algorithmV1 = \"\(WireFormat.algorithm)\""), "the example's algorithmV1 is not \(WireFormat.algorithm)")
        #expect(try Self.example().contains("case PushSealWire.algorithmV1:"), "the example does not dispatch v1 on algorithmV1")
        #expect(spec.contains("exactly `\(WireFormat.algorithm)`"), "FORMAT.md does not define enc_alg as \(WireFormat.algorithm)")
        #expect(spec.contains("\"\(WireFormat.algorithmField)\": \"\(WireFormat.algorithm)\""))
    }

    @Test("v1 AAD prefix, separator and order agree")
    func aad() throws {
        let source = try Self.example()
        let wire = try Self.wire()
        let spec = try Self.format()
        // The example builds the AAD by interpolation: render WireFormat.aad with the
        // interpolation texts as the parts and look for the result verbatim.
        let interpolated = String(decoding: WireFormat.aad(algorithm: #"\(algorithm)"#, keyID: #"\(keyID)"#, appID: #"\(appID)"#), as: UTF8.self)
        #expect(wire.contains("\"\(interpolated)\""), "the example's AAD is not \(interpolated)")
        #expect(source.contains("PushSealWire.aadV1(algorithm: algorithm, keyID: keyID, appID: appID)"))
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

    // MARK: v2 names, info, codes and order of checks

    /// FORMAT.md §V.2's two `enc_alg` rows: (base, auth), told apart by their `mode_…` text.
    static func version2Algorithms() throws -> (base: String, auth: String) {
        let section = try format().section(from: "## V.2 Suite and modes", to: "## V.3")
        let rows = try matches(#"(?m)^\| `enc_alg` `([^`]+)` \| `(mode_[a-z]+)`"#, in: section.text)
        let base = try #require(rows.first { $0[2] == "mode_base" }?[1], "FORMAT.md §V.2 has no mode_base enc_alg row")
        let auth = try #require(rows.first { $0[2] == "mode_auth" }?[1], "FORMAT.md §V.2 has no mode_auth enc_alg row")
        #expect(rows.count == 2, "FORMAT.md §V.2 has \(rows.count) enc_alg rows")
        return (base, auth)
    }

    @Test("v2 enc_alg names agree: FORMAT.md §V.2, the Python reference, the example")
    func version2AlgorithmNames() throws {
        let (base, auth) = try Self.version2Algorithms()
        let python = try Self.pythonReference()
        #expect(python.contains("ALG_BASE = \"\(base)\""), "pushseal_ref.py's ALG_BASE is not \(base)")
        #expect(python.contains("ALG_AUTH = \"\(auth)\""), "pushseal_ref.py's ALG_AUTH is not \(auth)")
        let wire = try Self.wire()
        #expect(wire.contains("static let algorithmV2Base = \"\(base)\""), "the example's algorithmV2Base is not \(base)")
        #expect(wire.contains("static let algorithmV2Auth = \"\(auth)\""), "the example's algorithmV2Auth is not \(auth)")
        let source = try Self.example()
        #expect(source.contains("case PushSealWire.algorithmV2Base, PushSealWire.algorithmV2Auth:"))
        #expect(source.contains("algorithm == PushSealWire.algorithmV2Auth"), "auth mode is not told by enc_alg")
        // The suite: FORMAT.md names CryptoKit's ciphersuite; the example uses exactly it.
        let suite = "HPKE.Ciphersuite(kem: .Curve25519_HKDF_SHA256, kdf: .HKDF_SHA256, aead: .AES_GCM_256)"
        #expect(try Self.format().contains("`\(suite)`"), "FORMAT.md §V.2 does not name \(suite)")
        #expect(wire.contains(suite), "the example's ciphersuite is not \(suite)")
        // The box: enc(32) ‖ ciphertext ‖ tag(16).
        #expect(try Self.format().contains("`enc(32) ‖ ciphertext ‖ tag(16)`"))
        #expect(wire.contains("static let encByteCount = 32") && wire.contains("static let tagByteCount = 16"))
    }

    /// FORMAT.md §V.3.2's `info` lines as the example's interpolation: literal parts as they are
    /// (with the mode's `enc_alg` replaced by `\(algorithm)`), `key_id` → `\(keyID)`, …
    static func version2InfoTemplates() throws -> (base: String, auth: String) {
        let section = try format().section(from: "### V.3.2", to: "## V.4")
        let (baseAlg, authAlg) = try version2Algorithms()
        func render(_ mode: String, _ algorithm: String) throws -> String {
            let expression = try #require(try section.matches(#"(?m)^\#(mode) mode:\s+info = UTF-8\((.+)\)$"#).first,
                                          "FORMAT.md §V.3.2 has no \(mode) mode info line")
            let names = ["key_id": #"\(keyID)"#, "app_id": #"\(appID)"#, "sender_key_id": #"\(senderKeyID)"#]
            return try expression.components(separatedBy: " + ").map { part -> String in
                if part.hasPrefix("\""), part.hasSuffix("\""), part.count >= 2 {
                    return String(part.dropFirst().dropLast()).replacingOccurrences(of: algorithm, with: #"\(algorithm)"#)
                }
                return try #require(names[part], "FORMAT.md §V.3.2 uses \(part)")
            }.joined()
        }
        return (try render("base", baseAlg), try render("auth", authAlg))
    }

    @Test("v2 info strings and the empty aad agree: FORMAT.md §V.3.2, the worked example, the Python reference, the example")
    func version2Info() throws {
        let (base, auth) = try Self.version2InfoTemplates()
        #expect(base == #"pushseal:v2|\(algorithm)|\(keyID)|\(appID)"#, "FORMAT.md base info renders as \(base)")
        #expect(auth == base + #"|\(senderKeyID)"#, "FORMAT.md auth info \(auth) is not the base info plus the sender key id")
        let wire = try Self.wire()
        #expect(wire.contains("\"\(base)\""), "the example's base-mode info is not \(base)")
        #expect(wire.contains("\"\(auth)\""), "the example's auth-mode info is not \(auth)")
        // The worked example of §V.9 is the auth template filled in.
        let spec = try Self.format()
        let (_, authAlg) = try Self.version2Algorithms()
        let filled = auth.replacingOccurrences(of: #"\(algorithm)"#, with: authAlg)
            .replacingOccurrences(of: #"\(keyID)"#, with: "7t2IPaCpRRWT3Ao4").replacingOccurrences(of: #"\(appID)"#, with: "com.example.app")
            .replacingOccurrences(of: #"\(senderKeyID)"#, with: "oCiYEAMutBcnTuvE")
        #expect(spec.contains("info (text):              \(filled)"), "FORMAT.md §V.9's info is not \(filled)")
        // The Python reference builds the same string.
        let python = try Self.pythonReference()
        #expect(python.contains(#"VERSION2 = "pushseal:v2""#))
        #expect(python.contains(#"text = f"{VERSION2}|{alg}|{key_id}|{app_id}""#) && python.contains(#"text + f"|{sender_key_id}""#))
        // The HPKE aad is empty, in the spec and in the example.
        #expect(spec.contains("the HPKE `aad` is **empty**"))
        #expect(try Self.example().contains("recipient.open(ciphertext, authenticating: Data())"))
    }

    @Test("every error code of FORMAT.md §8 and §V.8 is one the example can give")
    func errorCodes() throws {
        let spec = try Self.format()
        let v1 = try Self.matches(#"(?m)^\| ((?:`[A-Za-z]+`(?:, )?)+) \|"#, in: try spec.section(from: "## 8. Errors", to: "## 9.").text)
        let v2 = try Self.matches(#"(?m)^\| ((?:`[A-Za-z]+`(?:, )?)+) \|"#, in: try spec.section(from: "## V.8 Errors", to: "## V.9").text)
        let codes = try (v1 + v2).flatMap { try Self.matches("`([A-Za-z]+)`", in: $0[1]).map { $0[1] } }.filter { $0 != "code" }
        #expect(Set(codes).isSuperset(of: ["invalidEnc", "zeroSharedSecret", "downgradeRefused", "unknownSenderKey", "authenticationFailed"]),
                "FORMAT.md's error tables give \(codes)")
        let given = Set(try Self.example().matches(#"(?:Refusal\(|notFound: )"([A-Za-z:]+)""#))
        for code in codes {
            #expect(given.contains(code), "the example never gives FORMAT.md's code \(code)")
        }
        // The v2 codes are the Python reference's too.
        let python = try Self.pythonReference().text + (try Self.pythonHPKE().text)
        for code in try Self.matches("`([A-Za-z]+)`", in: v2.map { $0[1] }.joined()).map({ $0[1] }) {
            #expect(python.contains("\"\(code)\""), "the Python reference never raises \(code)")
        }
    }

    @Test("the example checks in the Python reference's order (parse_payload_v2, open_payload_v2, HPKE open)")
    func orderOfChecks() throws {
        func firstOccurrences(_ codes: [String]) -> [String] {
            var seen = Set<String>()
            return codes.filter { seen.insert($0).inserted }
        }
        let python = try Self.pythonReference()
        let pythonCodes = try python.section(from: "def string_field(", to: "def parse_payload(").matches(#"FormatError\("([A-Za-z]+)""#)
            + (try python.section(from: "def parse_payload_v2(", to: "def seal_bytes_v2(").matches(#"FormatError\("([A-Za-z]+)""#))
            + (try Self.pythonHPKE().section(from: "def dh(", to: "def selftest(").matches(#"HPKEError\("([A-Za-z]+)""#))
        // The zero-shared-secret refusal lives in a helper; count its calls where they are.
        let example = try Self.example()
        let source = Document(path: example.path, text: example.text.replacingOccurrences(
            of: "try Self.requireNonZeroSharedSecret(", with: "Refusal(\"zeroSharedSecret\") ("))
        let exampleCodes = try source.section(from: "private static func string(", to: "private static func usableKey(").matches(#"(?:Refusal\(|notFound: )"([A-Za-z:]+)""#)
            + (try source.section(from: "private static func openV2(", to: "private static func requireNonZeroSharedSecret(").matches(#"(?:Refusal\(|notFound: )"([A-Za-z:]+)""#))
        let shared = Set(pythonCodes).intersection(exampleCodes)
        let pythonOrder = firstOccurrences(pythonCodes).filter(shared.contains)
        let exampleOrder = firstOccurrences(exampleCodes).filter(shared.contains)
        #expect(shared.isSuperset(of: ["missingField", "wrongFieldType", "emptyField", "unknownAlgorithm", "invalidKeyID", "invalidEnc",
                                       "truncatedBox", "invalidAppID", "downgradeRefused", "unknownSenderKey", "unknownKeyID",
                                       "zeroSharedSecret", "authenticationFailed"]), "codes in both: \(shared.sorted())")
        #expect(exampleOrder == pythonOrder, "the example checks in the order \(exampleOrder), the Python reference in \(pythonOrder)")
    }

    @Test("the example refuses a wrong-length enc and an all-zero X25519 result before CryptoKit's HPKE")
    func zeroSharedSecretCheck() throws {
        let openV2 = try Self.example().section(from: "private static func openV2(", to: "// MARK: What the app sees")
        let text = openV2.text
        let invalidEnc = try #require(text.range(of: "Curve25519.KeyAgreement.PublicKey(rawRepresentation: enc) else { throw Refusal(\"invalidEnc\") }"),
                                      "openV2 does not refuse an enc that is not a 32-byte point")
        let ephemeralCheck = try #require(text.range(of: "try Self.requireNonZeroSharedSecret(privateKey, ephemeral)"), "openV2 does not check X25519(device key, enc)")
        let senderCheck = try #require(text.range(of: "try Self.requireNonZeroSharedSecret(privateKey, senderKey)"), "openV2 does not check X25519(device key, sender key)")
        let hpke = try #require(text.range(of: "HPKE.Recipient("), "openV2 does not use CryptoKit's HPKE.Recipient")
        #expect(invalidEnc.lowerBound < ephemeralCheck.lowerBound && ephemeralCheck.upperBound < hpke.lowerBound && senderCheck.upperBound < hpke.lowerBound,
                "the enc and zero-shared-secret checks must come before HPKE.Recipient")
        #expect(text.contains("encapsulatedKey: enc, authenticatedBy: senderKey)") && text.contains("encapsulatedKey: enc)"),
                "openV2 does not open both modes with HPKE.Recipient(privateKey:ciphersuite:info:encapsulatedKey:[authenticatedBy:])")
        let helper = try Self.example().section(from: "private static func requireNonZeroSharedSecret(", to: "// MARK: What the app sees")
        #expect(helper.contains("sharedSecretFromKeyAgreement(with: publicKey)") && helper.contains("PushSealWire.isAllZero(shared)")
                && helper.contains("Refusal(\"zeroSharedSecret\")"), "requireNonZeroSharedSecret does not compute and test the shared secret")
        #expect(try Self.wire().contains("raw.reduce(UInt8(0)) { $0 | $1 } == 0"), "isAllZero is not an OR over every byte")
        // Pinning a sender key refuses low-order points the same way.
        #expect(try Self.deviceKeys().section(from: "static func pinSender(", to: "// MARK: Version 1 keys").contains("throw Failure(\"lowOrderPoint\")"))
    }

    @Test("the example has the time-bounded replay guard of security review F2, failing closed")
    func replayGuard() throws {
        let source = try Self.example()
        let guardText = try source.section(from: "struct PushSealReplayGuard {", to: "// MARK: Plaintext")
        let didReceive = try source.section(from: "override func didReceive(", to: "override func serviceExtensionTimeWillExpire()")
        // didReceive receives through `receive` (shared with the app's retract handler), which
        // consults the guard before it returns the plaintext.
        let receive = try source.section(from: "static func receive(", to: "// MARK: Stage 1: read the fields")
        #expect(receive.contains(".checkAndRecord(id: plaintext.id, iat: plaintext.iat, exp: plaintext.exp, now: now)"),
                "receive does not consult the replay guard with id, iat and exp")
        let check = try #require(didReceive.text.range(of: "try Self.receive("))
        let release = try #require(didReceive.text.range(of: "content.userInfo ="))
        #expect(check.upperBound < release.lowerBound, "the replay guard must decide before any content is built")
        // Kept until exp, else iat + max age; refused when older than it can vouch for.
        #expect(guardText.contains("let keepUntil = exp ?? iat.map { $0 &+ Self.maxAgeSeconds } ?? now &+ Self.maxAgeSeconds"))
        #expect(guardText.contains("guard keepUntil > now else { return .tooOld }"))
        #expect(guardText.contains("guard keepUntil > store.evictedUntil else { return .tooOld }"))
        #expect(guardText.contains("store.evictedUntil = max(store.evictedUntil, until)"), "early eviction does not raise the floor")
        // Fails closed.
        #expect(guardText.contains("guard let directory else { return .unavailable }"))
        #expect(guardText.contains("guard var store = load(from: directory) else { return .unavailable }"))
        #expect(guardText.contains("return save(store, to: directory) ? .fresh : .unavailable"))
        #expect(guardText.contains("case .unavailable: return \"replayGuardUnavailable\""))
        // 0600 and file protection.
        #expect(guardText.contains(".completeFileProtectionUntilFirstUserAuthentication"))
        #expect(guardText.contains(".posixPermissions: 0o600") && guardText.contains("FileProtectionType.completeUntilFirstUserAuthentication"))
        #expect(guardText.contains("O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600") && guardText.contains("flock(fd, LOCK_EX)"))
    }

    @Test("F3: sealed data goes under its own userInfo key, unsealed top-level members are dropped")
    func sealedUserInfo() throws {
        let source = try Self.example()
        let readme = try Self.exampleReadme()
        #expect(source.contains("static let sealedDataUserInfoKey = \"pushseal\""))
        #expect(readme.contains("\"pushseal\": { …the sealed `data` object, or {} … }") && readme.contains("userInfo[\"pushseal\"]"))
        let builder = try source.section(from: "static func sealedUserInfo(", to: "/// Presentation from the sealed")
        #expect(builder.contains("var userInfo: [AnyHashable: Any] = [PushSealConfig.sealedDataUserInfoKey: plaintext.data]"))
        #expect(builder.contains("if let aps = delivered[\"aps\"] { userInfo[\"aps\"] = aps }"))
        #expect(try builder.matches(#"userInfo\[[^\]]+\] = [a-z]+"#, group: 0) == [#"userInfo["aps"] = aps"#, "userInfo[PushSealConfig.sealedIDUserInfoKey] = id"],
                "sealedUserInfo copies more than aps from the delivered payload")
        #expect(try builder.matches(#"delivered\["#, group: 0).count == 1, "sealedUserInfo reads more than aps from the delivered payload")
        // The sealed id under the key the emulation uses too (a retract finds it there).
        #expect(source.contains("static let sealedIDUserInfoKey = \"\(UNMutableNotificationContentKeys.sealedID)\""))
        #expect(builder.contains("userInfo[PushSealConfig.sealedIDUserInfoKey] = id"))
        #expect(readme.contains("\"pushseal-id\":"))
    }

    // MARK: The device key layout of docs/keychain.md

    /// keychain.md's item table: for each column (kind 1, 2, 3) the service, label and
    /// accessibility, and the record diagram's (offset, size, field) lines.
    struct KeychainLayout {
        var columns: [(kind: Int, service: String, account: String, label: String, accessibility: String)] = []
        var recordByteCount = 0
        var fields: [(offset: Int, size: Int, name: String, text: String)] = []
    }

    static func keychainLayout() throws -> KeychainLayout {
        let section = try keychainDoc().section(from: "## Device key items (v1 and v2)", to: "## At rest")
        func row(_ attribute: String) throws -> [String] {
            let line = try #require(try section.matches(#"(?m)^\| `\#(attribute)` \|(.+)\|$"#).first, "keychain.md has no \(attribute) row")
            return line.components(separatedBy: "|").map { $0.trimmingCharacters(in: .whitespaces).replacingOccurrences(of: "`", with: "") }
        }
        let services = try row("kSecAttrService"), accounts = try row("kSecAttrAccount"), labels = try row("kSecAttrLabel")
        let access = try row("kSecAttrAccessible"), data = try row("kSecValueData")
        var layout = KeychainLayout()
        for i in data.indices {
            let found = try matches(#"kind (\d+)$"#, in: data[i]).first.flatMap { Int($0[1]) }
            let kind = try #require(found, "kSecValueData column \(i): \(data[i])")
            layout.columns.append((kind, services[i], accounts[i], labels[i], access[i]))
        }
        #expect([services, accounts, labels, access].allSatisfy { $0.count == data.count }, "keychain.md's table rows have different column counts")
        let size = try #require(try section.matches(#"Key record \(`kSecValueData`\), (\d+) bytes"#).first, "keychain.md gives no record size")
        layout.recordByteCount = try #require(Int(size))
        let diagram = try section.section(from: "offset  size  field", to: "```")
        for m in try matches(#"(?m)^(\d+)\s+(\d+)\s+([A-Za-z ]+?):\s*(.*)$"#, in: diagram.text) {
            layout.fields.append((try #require(Int(m[1])), try #require(Int(m[2])), m[3], m[4]))
        }
        return layout
    }

    /// `layout version` → `layoutVersion`, `key bytes` → `keyBytes`, `createdAt` unchanged.
    static func camelCase(_ words: String) -> String {
        let parts = words.split(separator: " ").map(String.init)
        return (parts.first ?? "") + parts.dropFirst().map { $0.prefix(1).uppercased() + $0.dropFirst() }.joined()
    }

    /// The example's enum cases `case name = N` inside `enum <type>`.
    static func enumCases(_ type: String, in source: Document) throws -> [String: Int] {
        let body = try source.section(from: "enum \(type):", to: "\n}\n")
        var cases: [String: Int] = [:]
        for m in try body.matches(#"(?m)^\s+case (\w+) = (\d+)$"#, group: 0) {
            let parts = try matches(#"case (\w+) = (\d+)"#, in: m)[0]
            cases[parts[1]] = Int(parts[2])
        }
        return cases
    }

    /// `case .a, .b: return "x"` lines of the example's computed property `var <property>` of
    /// PushSealKeyKind: case name → returned string.
    static func kindProperty(_ property: String, in source: Document) throws -> [String: String] {
        let body = try source.section(from: "var \(property): String {", to: "\n    }\n")
        var values: [String: String] = [:]
        for m in try matches(#"case ([.\w, ]+): return "([^"]*)""#, in: body.text) {
            for name in m[1].split(separator: ",") { values[name.trimmingCharacters(in: .whitespaces).replacingOccurrences(of: ".", with: "")] = m[2] }
        }
        return values
    }

    @Test("services, accounts, labels and accessibility of the key items agree with keychain.md's table")
    func keychainItems() throws {
        let layout = try Self.keychainLayout()
        let keys = try Self.deviceKeys()
        let kinds = try Self.enumCases("PushSealKeyKind", in: keys)
        #expect(Set(layout.columns.map(\.kind)) == Set(kinds.values) && layout.columns.count == 3,
                "keychain.md's columns are kinds \(layout.columns.map(\.kind)), the example's PushSealKeyKind \(kinds)")
        let prefixes = try Self.kindProperty("servicePrefix", in: keys)
        let labels = try Self.kindProperty("label", in: keys)
        for column in layout.columns {
            let name = try #require(kinds.first { $0.value == column.kind }?.key, "the example has no PushSealKeyKind = \(column.kind)")
            let prefix = try #require(column.service.hasSuffix("<appID>") ? String(column.service.dropLast("<appID>".count)) : nil,
                                      "keychain.md's service \(column.service) does not end in <appID>")
            #expect(prefixes[name] == prefix, "kind \(column.kind): the example's service prefix \(prefixes[name] ?? "none") vs keychain.md \(prefix)")
            #expect(labels[name] == column.label, "kind \(column.kind): the example's label \(labels[name] ?? "none") vs keychain.md \(column.label)")
            #expect(column.account.hasSuffix("key id"), "keychain.md's account is \(column.account)")
            let accessibility = try #require(Accessibility(rawValue: column.accessibility), "keychain.md's accessibility \(column.accessibility)")
            #expect(accessibility == .afterFirstUnlockThisDeviceOnly && accessibility.isAvailableWhileLocked && accessibility.isThisDeviceOnly)
        }
        #expect(keys.contains("func service(appID: String) -> String { servicePrefix + appID }"))
        // The account is the key id, and items are generic passwords in the shared access group.
        #expect(keys.contains("if let account { query[kSecAttrAccount as String] = account }"))
        #expect(keys.contains("kSecClass as String: kSecClassGenericPassword"))
        #expect(keys.contains("kSecAttrAccessGroup as String: group"))
        #expect(keys.contains("kSecAttrLabel as String: kind.label"))
        // Exactly one accessibility constant anywhere in the example: keychain.md's.
        let wanted = try #require(layout.columns.first.flatMap { Accessibility(rawValue: $0.accessibility) })
        let all = try Self.allSwift()
        let used = Accessibility.allCases.filter { all.text.contains($0.constantName + "\n") || all.text.contains($0.constantName + " ") || all.text.contains($0.constantName + "`") }
        #expect(used == [wanted], "the example uses \(used.map(\.constantName))")
        #expect(keys.contains("kSecAttrAccessible as String] = \(wanted.constantName)\n"), "new items are not added with \(wanted.constantName)")
    }

    @Test("the 59-byte key record: offsets, sizes, kinds and status codes agree with keychain.md")
    func keyRecordLayout() throws {
        let layout = try Self.keychainLayout()
        let keys = try Self.deviceKeys()
        #expect(layout.fields.map(\.name) == ["layout version", "kind", "status", "createdAt", "retiredAt", "notAfter", "key bytes"],
                "keychain.md's record fields: \(layout.fields.map(\.name))")
        var next = 0
        for field in layout.fields {
            #expect(field.offset == next, "keychain.md: \(field.name) at \(field.offset), expected \(next)")
            next = field.offset + field.size
            #expect(keys.contains("static let \(Self.camelCase(field.name))Offset = \(field.offset)\n"),
                    "the example's \(Self.camelCase(field.name))Offset is not \(field.offset)")
        }
        #expect(next == layout.recordByteCount, "keychain.md's fields end at \(next), its record is \(layout.recordByteCount) bytes")
        #expect(keys.contains("static let recordByteCount = \(layout.recordByteCount)\n"))
        let keyBytes = try #require(layout.fields.last)
        #expect(keys.contains("static let keyByteCount = \(keyBytes.size)\n"))
        for field in layout.fields where field.text.hasPrefix("Int64") {
            #expect(field.size == 8, "\(field.name) is an Int64 of \(field.size) bytes")
            #expect(keys.contains("(PushSealKeyLayout.\(field.name)Offset, \(field.name))"), "the example does not encode \(field.name)")
            #expect(keys.contains("\(field.name): int64(at: PushSealKeyLayout.\(field.name)Offset)"), "the example does not decode \(field.name)")
        }
        #expect(keys.contains("UInt8(truncatingIfNeeded: bits >> (56 - 8 * UInt64(i)))") && keys.contains("$0 << 8 | UInt64($1)"), "integers are not big-endian")
        #expect(layout.fields.filter { $0.text.contains("-1 = ") }.map(\.name) == ["retiredAt", "notAfter"])
        #expect(keys.contains("static let noTime: Int64 = -1\n"))
        // Layout version.
        let version = try #require(layout.fields.first?.text)
        #expect(keys.contains("static let layoutVersion: UInt8 = \(version)\n"), "the example's layout version is not \(version)")
        // Kinds: "kind: 1 = v1 AES-256-GCM key, 2 = v2 X25519 private key, 3 = pinned X25519 sender public key".
        let kindText = try #require(layout.fields.first { $0.name == "kind" }?.text)
        let kindNumbers = Set(try Self.matches(#"(\d+) = "#, in: kindText).compactMap { Int($0[1]) })
        #expect(kindNumbers == Set(try Self.enumCases("PushSealKeyKind", in: keys).values), "kinds: keychain.md \(kindNumbers.sorted())")
        #expect(kindNumbers == Set(layout.columns.map(\.kind)))
        // Status codes: "status: 1 pending, 2 primary, 3 decryptOnly, 4 disabled (revoked)".
        let statusText = try #require(layout.fields.first { $0.name == "status" }?.text)
        var documented: [String: Int] = [:]
        for m in try Self.matches(#"(\d+) (\w+)"#, in: statusText) { documented[m[2]] = Int(m[1]) }
        #expect(documented == (try Self.enumCases("PushSealKeyStatus", in: keys)), "status codes: keychain.md \(documented)")
        #expect(Set(documented.keys) == ["pending", "primary", "decryptOnly", "disabled"])
    }

    @Test("the reader rules of keychain.md are the example's: codes and status rules")
    func readerRules() throws {
        let rules = try Self.keychainDoc().section(from: "Rules every reader applies", to: "## At rest")
        // The fallback tokens, exactly as the extension and the example report them.
        let codes = Set(try rules.matches("`((?:keys:)?(?:corruptKey|keyExpired|keyDisabled|keyRetired))`"))
        #expect(codes == ["corruptKey", "keyExpired", "keyDisabled", "keys:keyRetired"], "keychain.md's reader codes: \(codes.sorted())")
        let all = try Self.allSwift()
        for code in codes {
            #expect(all.contains("\"\(code)\""), "the example never gives \(code)")
        }
        let keys = try Self.deviceKeys()
        #expect(keys.contains("case .pending, .primary: return nil"))
        #expect(keys.contains("case .disabled: return \"keyDisabled\""))
        #expect(keys.contains("now < notAfter ? nil : \"keyExpired\""))
        #expect(keys.contains("guard status == .decryptOnly || status == .disabled, retiredAt >= 0, let iat, iat > retiredAt else { return nil }"))
        // v1 payloads look only at kind 1, v2 only at kind 2; the account is the payload's key id.
        let source = try Self.example()
        #expect(source.contains("Self.usableKey(.v1Key, keyID: keyID,") && source.contains("Self.usableKey(.v2DeviceKey, keyID: keyID,"))
        #expect(keys.contains("return record.kind == kind ? .found(record) : .otherKind"))
        #expect(source.contains("case .notFound, .otherKind: throw Refusal(notFound)"))
        // A v2 key id is the first 16 characters of the unpadded base64url of SHA-256(public key).
        #expect(try Self.format().contains("first\n16 characters of the unpadded base64url of SHA-256(public key)"))
        #expect(try Self.wire().contains("return String(urlSafe.prefix(16))"))
    }
}

/// The emulation's `userInfo` key of the sealed id, spelled where the drift test can read it
/// without importing PushSealExtension (PushSealWireTests does not depend on it): FORMAT.md
/// §5.1 names it.
enum UNMutableNotificationContentKeys {
    static let sealedID = "pushseal-id"
}

extension IOSExampleDriftTests {
    @Test("the app's retract handler opens with the extension's receive, expecting a retract, and removes by the sealed id")
    func retractHandler() throws {
        let app = try Self.document("Examples/iOS/AppDelegate.swift")
        let handler = try Self.document("Examples/iOS/Sources/PushSealNotificationExtension/PushSealRetract.swift")
        let example = try Self.example()
        let spec = try Self.format()
        #expect(app.contains("func application(_ application: UIApplication, didReceiveRemoteNotification userInfo: [AnyHashable: Any],"))
        #expect(app.contains("fetchCompletionHandler completionHandler: @escaping (UIBackgroundFetchResult) -> Void)"))
        #expect(app.contains("PushSealRetract.handle(userInfo)"))
        #expect(handler.contains("NotificationService.receive(userInfo, appID: appID, now: now, expecting: .retract)"))
        #expect(handler.contains("userInfo[PushSealConfig.sealedIDUserInfoKey]") && handler.contains("removeDeliveredNotifications(withIdentifiers:"))
        #expect(example.contains("plaintext = try Self.receive(request.content.userInfo, appID: appID, now: now, expecting: .display)"))
        // receive: open, then the kind, then exp, then the replay guard (the emulation's order).
        let receive = try example.section(from: "static func receive(", to: "// MARK: Stage 1: read the fields")
        let order = ["try open(", "plaintext.kind == kind", "now >= exp", "PushSealReplayGuard("]
        let positions = order.compactMap { receive.text.range(of: $0)?.lowerBound }
        #expect(positions.count == order.count && positions == positions.sorted(), "receive checks out of order: \(order)")
        // The kinds of FORMAT.md §5.1 are the example's and the emulation's.
        let kinds = Set(try spec.section(from: "### 5.1 Message kinds", to: "## 6.").matches(#"(?m)^\| \*\*([a-z]+)\*\*"#))
        #expect(kinds == Set(MessageKind.allCases.map(\.rawValue)), "FORMAT.md §5.1 kinds \(kinds.sorted())")
        #expect(example.contains("enum Kind: String, Sendable { case display, retract }"))
        #expect(spec.contains("`pushseal-id`") || spec.contains("pushseal-id"), "FORMAT.md does not name the userInfo key of the sealed id")
    }
}
