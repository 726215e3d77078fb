extension JSONSinkWriter where Sink == [UInt8] {
    /// Serialized JSON (`json`, UTF-8, as this writer makes it) with the characters a terminal,
    /// or a tool that splits lines, acts on although JSON allows them raw written as `\uXXXX`
    /// escapes: DEL and C1 (U+007F–U+009F, U+0085 among them), U+2028, U+2029 and the
    /// bidirectional controls (U+202A–U+202E, U+2066–U+2069). The same JSON value, shown
    /// safely: for `--json` on a terminal (PushSealCLI's `Output.terminalSafeJSON`) and
    /// push-gateway's log lines, whose strings can hold a recipient name.
    ///
    /// Those characters can only occur inside JSON strings (the structure is ASCII), and a UTF-8
    /// sequence never matches inside another character's, so each is replaced where it stands.
    /// - Returns: `json` itself when it holds none of them (no copy).
    public static func terminalSafe(_ json: [UInt8]) -> [UInt8] {
        /// The character starting at `i` when it is one to escape, and its length in bytes.
        func risky(_ i: Int) -> (scalar: UInt32, length: Int)? {
            switch json[i] {
            case 0x7F:
                return (0x7F, 1)
            case 0xC2 where i + 1 < json.count && (0x80...0x9F).contains(json[i + 1]):
                return (UInt32(json[i + 1]), 2)
            case 0xE2 where i + 2 < json.count && (json[i + 1] == 0x80 || json[i + 1] == 0x81):
                let scalar = 0x2000 | UInt32(json[i + 1] & 0x3F) << 6 | UInt32(json[i + 2] & 0x3F)
                return (0x2028...0x202E).contains(scalar) || (0x2066...0x2069).contains(scalar) ? (scalar, 3) : nil
            default:
                return nil
            }
        }
        guard let first = json.indices.first(where: { risky($0) != nil }) else { return json }
        let hex: StaticString = "0123456789abcdef"
        var out = Array(json[..<first])
        out.reserveCapacity(json.count + 16)
        var i = first
        while i < json.count {
            guard let (scalar, length) = risky(i) else {
                out.append(json[i])
                i += 1
                continue
            }
            out += [0x5C, UInt8(ascii: "u")]
            for shift in [12, 8, 4, 0] { out.append(hex.utf8Start[Int(scalar >> UInt32(shift) & 0xF)]) }
            i += length
        }
        return out
    }
}
