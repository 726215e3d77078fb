import PushSealJSON

extension InputReader {
    /// How many JSON values an input that is not one JSON value holds, when it is JSON Lines:
    /// the count of its non-blank lines (split at `\n`; spaces, tabs and `\r` are blank) when
    /// there are at least two and every one parses as JSON on its own, else `nil`. For the hint
    /// of a command that takes one JSON value and was given several (`push-seal batch` output,
    /// `push-keys sender export --all`).
    public static func jsonLineCount(_ bytes: [UInt8]) -> Int? {
        let blank: Set<UInt8> = [UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\r")]
        let lines = bytes.split(separator: UInt8(ascii: "\n")).filter { $0.contains { !blank.contains($0) } }
        guard lines.count > 1, lines.allSatisfy({ (try? JSONReader.parse(Array($0))) != nil }) else { return nil }
        return lines.count
    }
}
