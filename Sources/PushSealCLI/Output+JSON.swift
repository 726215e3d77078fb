import PushSealFormat

extension Output {
    /// Renders `value` as compact JSON (RFC 8259): members in order, integers without a
    /// fraction, strings escaped by ``jsonString(_:)``. A small renderer for CLI output until
    /// PushSealFormat's `JSONWriter` is used here. Non-finite numbers render as `null`.
    public static func json(_ value: JSONValue) -> String {
        switch value {
        case .null: return "null"
        case .bool(let b): return b ? "true" : "false"
        case .integer(let i): return String(i)
        case .number(let d): return d.isFinite ? "\(d)" : "null"
        case .string(let s): return jsonString(s)
        case .array(let a): return "[" + a.map(json).joined(separator: ",") + "]"
        case .object(let o): return "{" + o.members.map { jsonString($0.key) + ":" + json($0.value) }.joined(separator: ",") + "}"
        }
    }

    /// Prints `object` as one line of JSON on standard output (the `--json` result).
    public static func printJSON(_ object: JSONObject) { stdout(json(.object(object)) + "\n") }
}
