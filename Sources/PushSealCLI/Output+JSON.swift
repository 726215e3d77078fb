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
        let bytes = Array(json.utf8)
        let safe = JSONWriter.terminalSafe(bytes)
        return safe.count == bytes.count ? json : String(decoding: safe, as: UTF8.self)
    }

    /// Prints `object` as one line of JSON on standard output (the `--json` result).
    public static func printJSON(_ object: JSONObject) { stdout(json(.object(object)) + "\n") }
}
