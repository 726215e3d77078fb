public import PushSealJSON

extension Output {
    /// Renders `value` as compact JSON with PushSealJSON's `JSONWriter` (members in order,
    /// integers distinct from booleans). A non-finite number, which CLI output never holds,
    /// renders as `null`.
    public static func json(_ value: JSONValue) -> String {
        (try? JSONWriter.serializeToString(value)) ?? "null"
    }

    /// Prints `object` as one line of JSON on standard output (the `--json` result).
    public static func printJSON(_ object: JSONObject) { stdout(json(.object(object)) + "\n") }
}
