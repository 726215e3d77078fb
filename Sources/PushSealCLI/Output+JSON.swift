public import PushSealJSON

extension Output {
    /// Renders `value` as compact JSON with PushSealJSON's `JSONWriter` (members in order,
    /// integers distinct from booleans). A non-finite number, which CLI output never holds,
    /// renders as `null`.
    ///
    /// When standard output is a terminal, characters a terminal acts on although JSON allows
    /// them raw (DEL and C1, U+007F–U+009F; U+2028, U+2029; the bidirectional controls
    /// U+202A–U+202E, U+2066–U+2069) are written as `\uXXXX` escapes (``terminalSafeJSON(_:)``):
    /// the same JSON value, shown safely. C0 controls are escaped by the writer always.
    public static func json(_ value: JSONValue) -> String {
        let text = (try? JSONWriter.serializeToString(value)) ?? "null"
        return isTerminal(1) ? terminalSafeJSON(text) : text
    }

    /// `json` (serialized JSON) with DEL and C1 (U+007F–U+009F), U+2028, U+2029 and the
    /// bidirectional controls (U+202A–U+202E, U+2066–U+2069) as `\uXXXX` escapes. They can only
    /// occur inside JSON strings, where the escape means the same character.
    public static func terminalSafeJSON(_ json: String) -> String {
        func risky(_ v: UInt32) -> Bool {
            switch v {
            case 0x7F...0x9F, 0x2028, 0x2029, 0x202A...0x202E, 0x2066...0x2069: true
            default: false
            }
        }
        guard json.unicodeScalars.contains(where: { risky($0.value) }) else { return json }
        var out = String.UnicodeScalarView()
        for scalar in json.unicodeScalars {
            if risky(scalar.value) {
                let hex = String(scalar.value, radix: 16, uppercase: false)
                out.append(contentsOf: ("\\u" + String(repeating: "0", count: 4 - hex.count) + hex).unicodeScalars)
            } else {
                out.append(scalar)
            }
        }
        return String(out)
    }

    /// Prints `object` as one line of JSON on standard output (the `--json` result).
    public static func printJSON(_ object: JSONObject) { stdout(json(.object(object)) + "\n") }
}
