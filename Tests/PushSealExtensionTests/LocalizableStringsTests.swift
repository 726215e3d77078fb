import PushSealJSON
import Foundation
import Testing
@testable import PushSealExtension

/// `Localizable.strings` as iOS reads it, and a localized fallback alert shown as iOS shows it.
@Suite struct LocalizableStringsTests {
    static let sample = #"""
    /* The app's strings. */
    "GREETING" = "Hello, %@!";   // a trailing comment
    "TWO_ARGS" = "%2$@ sent %1$@";
    "ESCAPES" = "tab\there \"quoted\" back\\slash\nnew line \u00E9 \U00E9 \uD83D\uDE00 \101";
    unquoted_key = "u";
    "ALONE";
    "EMPTY" = "";
    "GREETING" = "Hi, %@!";
    "PERCENT" = "100%% of %@";
    "ÜNÏCODE" = "ключ";
    """#

    @Test func theClassicFormatParsesWithCommentsEscapesAndTheLastValueOfARepeatedKey() throws {
        let t = try LocalizableStrings(bytes: Array(Self.sample.utf8))
        #expect(t["GREETING"] == "Hi, %@!")
        #expect(t["TWO_ARGS"] == "%2$@ sent %1$@")
        #expect(t["ESCAPES"] == "tab\there \"quoted\" back\\slash\nnew line é é 😀 A")
        #expect(t["unquoted_key"] == "u")
        #expect(t["ALONE"] == "ALONE")
        #expect(t["EMPTY"] == "")
        #expect(t["ÜNÏCODE"] == "ключ")
        #expect(t.entries.count == 8)
    }

    @Test(arguments: ["utf16le", "utf16be", "utf8bom"])
    func utf16WithItsByteOrderMarkAndUTF8WithOneReadTheSame(_ encoding: String) throws {
        let bytes: [UInt8] = switch encoding {
        case "utf16le": [0xFF, 0xFE] + Array(Self.sample.data(using: .utf16LittleEndian) ?? Data())
        case "utf16be": [0xFE, 0xFF] + Array(Self.sample.data(using: .utf16BigEndian) ?? Data())
        default: [0xEF, 0xBB, 0xBF] + Array(Self.sample.utf8)
        }
        #expect(try LocalizableStrings(bytes: bytes) == LocalizableStrings(bytes: Array(Self.sample.utf8)))
    }

    @Test(arguments: [
        (#""A" = "x""#, "line 1: expected ; after the value"),
        ("\n\n\"A\" \"x\";", "line 3: expected = or ; after the key"),
        (#""A" = "unterminated;"#, "line 1: a string is not closed"),
        ("/* open\n\n", "line 1: a /* comment is not closed"),
        (#""A" = "\u12";"#, "line 1: a \\u escape needs 4 hexadecimal digits"),
        (#""A" = ;"#, "line 1: expected a value after = (a quoted string)"),
        (#""A" = "\uD800x";"#, "line 1: a \\u escape has a lone surrogate"),
    ])
    func aBadFileIsAClearErrorWithItsLine(_ text: String, _ reason: String) {
        #expect { try LocalizableStrings(bytes: Array(text.utf8)) } throws: { e in
            (e as? ExtensionError)?.code == .invalidStrings && (e as? ExtensionError)?.reason == reason
        }
    }

    @Test func notUTF8OrAnOddUTF16IsRefused() {
        for bytes: [UInt8] in [[0x22, 0xFF, 0x22], [0xFF, 0xFE, 0x22]] {
            #expect(throws: ExtensionError(.invalidStrings, "")) { try LocalizableStrings(bytes: bytes) }
        }
    }

    @Test(arguments: [
        ("Hello, %@!", ["Ana"], "Hello, Ana!"),
        ("%2$@ sent %1$@", ["a photo", "Ana"], "Ana sent a photo"),
        ("%@ and %@", ["one"], "one and %@"),
        ("%1$@ and %3$@", ["one", "two"], "one and %3$@"),
        ("just text", ["unused", "args"], "just text"),
        ("%@", ["a", "b", "c"], "a"),
        ("100%% of %@ %d", ["it"], "100% of it %d"),
        ("trailing %", [], "trailing %"),
    ])
    func locArgsFillThePlaceholdersAsIOSDoes(_ format: String, _ args: [String], _ shown: String) {
        #expect(LocalizableStrings.format(format, args) == shown)
    }

    static func payload(_ alert: JSONObject) -> JSONValue {
        .object(["aps": .object(["alert": .object(alert), "mutable-content": .integer(1)])])
    }

    @Test func aLocalizedAlertShowsTheTablesTextOrNamesItsKeysNeverBlank() throws {
        let table = try LocalizableStrings(bytes: Array(Self.sample.utf8))
        let alert: JSONObject = ["title-loc-key": .string("GREETING"), "title-loc-args": .array([.string("Ana")]),
                                 "loc-key": .string("TWO_ARGS"), "loc-args": .array([.string("a photo"), .string("Ana")]),
                                 "subtitle-loc-key": .string("MISSING"), "body": .string("plain body")]
        let shown = UNNotificationContent(apnsPayload: Self.payload(alert), strings: table)
        #expect(shown.title == "Hi, Ana!" && shown.body == "Ana sent a photo" && shown.subtitle == "MISSING")
        // Without a table, the keys (with their arguments where they have placeholders: none).
        let bare = UNNotificationContent(apnsPayload: Self.payload(alert))
        #expect(bare.title == "GREETING" && bare.body == "TWO_ARGS" && bare.subtitle == "MISSING")
        #expect(!bare.isBlank)
        // A table whose string is empty: the key, not a blank alert.
        let empty = UNNotificationContent(apnsPayload: Self.payload(["loc-key": .string("EMPTY")]), strings: table)
        #expect(empty.body == "EMPTY" && !empty.isBlank)
        let spaces = UNNotificationContent(apnsPayload: Self.payload(["title-loc-key": .string("SPACES"), "loc-key": .string("EMPTY")]),
                                           strings: try LocalizableStrings(bytes: Array(#""SPACES" = "  \n"; "EMPTY" = "";"#.utf8)))
        #expect(spaces.body == "EMPTY" && !spaces.isBlank, "\(spaces.title) / \(spaces.body)")
        // A plain alert is unchanged.
        let plain = UNNotificationContent(apnsPayload: Self.payload(["title": .string("T"), "body": .string("B")]), strings: table)
        #expect(plain.title == "T" && plain.body == "B")
    }

    @Test func theHostShowsTheLocalizedFallbackWhenTheExtensionFallsBack() {
        let table = LocalizableStrings(["NEW": "Nouveau message de %@"])
        let payload = Self.payload(["title": .string("x"), "loc-key": .string("NEW"), "loc-args": .array([.string("Ana")])])
        let request = UNNotificationRequest(identifier: "r", content: UNNotificationContent(apnsPayload: payload, strings: table), payload: payload)
        // The original content is what iOS shows when the extension cannot open the payload.
        #expect(request.content.body == "Nouveau message de Ana" && request.content.title == "x")
    }
}
