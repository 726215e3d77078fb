/// An app's `Localizable.strings` table, as iOS reads it to show a localized alert
/// (`title-loc-key`, `subtitle-loc-key`, `loc-key` and their `-args`).
///
/// The file format is the classic one (old-style property list strings): entries
/// `"key" = "value";`, a key alone (`"key";`, its value is the key), `/* … */` and `// …`
/// comments, keys and values quoted (escapes `\"` `\\` `\'` `\n` `\t` `\r` `\0`, `\a` `\b` `\f`
/// `\v`, octal `\ooo`, `\uXXXX` and `\UXXXX` with surrogate pairs joined) or unquoted
/// (`A-Z a-z 0-9 _ . $ : / -`). Text is UTF-8 (a UTF-8 byte order mark is skipped) or UTF-16
/// with its byte order mark (`FF FE` little-, `FE FF` big-endian), as Xcode writes it. A key
/// given twice keeps its last value.
public struct LocalizableStrings: Sendable, Hashable {
    /// The entries, key → value.
    public private(set) var entries: [String: String]

    /// Creates a table from entries.
    public init(_ entries: [String: String] = [:]) { self.entries = entries }

    /// The value for `key`, `nil` when the table has none.
    public subscript(key: String) -> String? { entries[key] }

    /// Parses a `Localizable.strings` file's bytes.
    /// - Throws: `ExtensionError` `.invalidStrings` with the line number and what was expected
    ///   (not UTF-8 or UTF-16, an unterminated string or comment, a missing `=` or `;`, a bad
    ///   escape); the reason never quotes the file's text.
    public init(bytes: [UInt8]) throws {
        let scalars = try Self.decode(bytes)
        var p = Parser(scalars: scalars)
        entries = try p.entries()
    }

    /// The text as Unicode scalars, by its byte order mark (UTF-8 without one).
    static func decode(_ bytes: [UInt8]) throws -> [Unicode.Scalar] {
        var out: [Unicode.Scalar] = []
        func run<C: UnicodeCodec>(_ codec: C.Type, _ units: some Sequence<C.CodeUnit>) throws {
            var it = units.makeIterator()
            var c = C()
            loop: while true {
                switch c.decode(&it) {
                case .scalarValue(let s): out.append(s)
                case .emptyInput: break loop
                case .error: throw ExtensionError(.invalidStrings, "the file is not valid \(C.self == UTF8.self ? "UTF-8" : "UTF-16") text (byte \(out.count))")
                }
            }
        }
        if bytes.starts(with: [0xFF, 0xFE]) || bytes.starts(with: [0xFE, 0xFF]) {
            let little = bytes[0] == 0xFF
            let body = bytes.dropFirst(2)
            guard body.count % 2 == 0 else { throw ExtensionError(.invalidStrings, "the UTF-16 file has an odd number of bytes") }
            let units = stride(from: body.startIndex, to: body.endIndex, by: 2).map { i -> UInt16 in
                little ? UInt16(body[i]) | UInt16(body[i + 1]) << 8 : UInt16(body[i]) << 8 | UInt16(body[i + 1])
            }
            try run(UTF16.self, units)
        } else {
            try run(UTF8.self, bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? Array(bytes.dropFirst(3)) : bytes)
        }
        return out
    }

    /// A recursive-descent reader over the scalars, counting lines for its errors.
    struct Parser {
        let scalars: [Unicode.Scalar]
        var at = 0
        var line = 1

        init(scalars: [Unicode.Scalar]) { self.scalars = scalars }

        func fail(_ what: String) -> ExtensionError {
            ExtensionError(.invalidStrings, "line \(line): \(what)")
        }

        var current: Unicode.Scalar? { at < scalars.count ? scalars[at] : nil }

        mutating func advance() {
            if scalars[at] == "\n" { line += 1 }
            at += 1
        }

        /// Skips whitespace and comments.
        mutating func skip() throws {
            while let c = current {
                if c.properties.isWhitespace {
                    advance()
                } else if c == "/", at + 1 < scalars.count, scalars[at + 1] == "*" {
                    let start = line
                    at += 2
                    while true {
                        guard let d = current else { throw ExtensionError(.invalidStrings, "line \(start): a /* comment is not closed") }
                        if d == "*", at + 1 < scalars.count, scalars[at + 1] == "/" { at += 2; break }
                        advance()
                    }
                } else if c == "/", at + 1 < scalars.count, scalars[at + 1] == "/" {
                    while let d = current, d != "\n" { at += 1 }
                } else {
                    return
                }
            }
        }

        mutating func entries() throws -> [String: String] {
            var out: [String: String] = [:]
            while true {
                try skip()
                guard current != nil else { return out }
                let key = try string("a key")
                try skip()
                if current == ";" {
                    advance()
                    out[key] = key
                    continue
                }
                guard current == "=" else { throw fail("expected = or ; after the key") }
                advance()
                try skip()
                let value = try string("a value after =")
                try skip()
                guard current == ";" else { throw fail("expected ; after the value") }
                advance()
                out[key] = value
            }
        }

        static func isUnquoted(_ c: Unicode.Scalar) -> Bool {
            (c.value < 0x80 && (c.properties.isAlphabetic || ("0"..."9").contains(c))) || "_.$:/-".unicodeScalars.contains(c)
        }

        mutating func string(_ what: String) throws -> String {
            guard let c = current else { throw fail("expected \(what), found the end of the file") }
            var s = String.UnicodeScalarView()
            if c != "\"" {
                guard Self.isUnquoted(c) else { throw fail("expected \(what) (a quoted string)") }
                while let d = current, Self.isUnquoted(d) { s.append(d); at += 1 }
                return String(s)
            }
            let start = line
            at += 1
            while true {
                guard let d = current else { throw ExtensionError(.invalidStrings, "line \(start): a string is not closed") }
                advance()
                if d == "\"" { return String(s) }
                if d != "\\" { s.append(d); continue }
                guard let e = current else { throw ExtensionError(.invalidStrings, "line \(start): a string is not closed") }
                advance()
                switch e {
                case "n": s.append("\n")
                case "t": s.append("\t")
                case "r": s.append("\r")
                case "a": s.append("\u{07}")
                case "b": s.append("\u{08}")
                case "f": s.append("\u{0C}")
                case "v": s.append("\u{0B}")
                case "u", "U":
                    var v = try hex4()
                    if (0xD800..<0xDC00).contains(v), current == "\\", at + 1 < scalars.count, scalars[at + 1] == "u" || scalars[at + 1] == "U" {
                        at += 2
                        let low = try hex4()
                        guard (0xDC00..<0xE000).contains(low) else { throw fail("a \\u escape has a lone surrogate") }
                        v = 0x10000 + ((v - 0xD800) << 10) + (low - 0xDC00)
                    }
                    guard let u = Unicode.Scalar(v) else { throw fail("a \\u escape has a lone surrogate") }
                    s.append(u)
                case "0"..."7":
                    var v = e.value - 0x30
                    var n = 1
                    while n < 3, let o = current, ("0"..."7").contains(o) { v = v * 8 + o.value - 0x30; at += 1; n += 1 }
                    guard let u = Unicode.Scalar(v) else { throw fail("a bad octal escape") }
                    s.append(u)
                default:
                    s.append(e)  // \" \\ \' and any other character stand for themselves
                }
            }
        }

        mutating func hex4() throws -> UInt32 {
            var v: UInt32 = 0
            for _ in 0..<4 {
                guard let c = current, let d = UInt32(String(c), radix: 16) else { throw fail("a \\u escape needs 4 hexadecimal digits") }
                v = v * 16 + d
                at += 1
            }
            return v
        }
    }

    /// `format` with `args` in its `%@` (the next argument) and `%n$@` (argument n, from 1)
    /// specifiers, `%%` as `%`, as iOS formats a `loc-key`'s string with `loc-args`. A
    /// specifier without its argument stays as written (`%2$@`); arguments no specifier uses
    /// are left out; any other `%` sequence stays as written.
    public static func format(_ format: String, _ args: [String]) -> String {
        var out = ""
        let s = Array(format.unicodeScalars)
        var next = 0
        var i = 0
        while i < s.count {
            guard s[i] == "%", i + 1 < s.count else { out.unicodeScalars.append(s[i]); i += 1; continue }
            if s[i + 1] == "%" { out += "%"; i += 2; continue }
            if s[i + 1] == "@" {
                out += next < args.count ? args[next] : "%@"
                next += 1
                i += 2
                continue
            }
            var j = i + 1
            var n = 0
            while j < s.count, ("0"..."9").contains(s[j]) { n = n * 10 + Int(s[j].value - 0x30); j += 1 }
            if j > i + 1, j + 1 < s.count, s[j] == "$", s[j + 1] == "@", n >= 1 {
                out += n <= args.count ? args[n - 1] : String(String.UnicodeScalarView(s[i...(j + 1)]))
                i = j + 2
                continue
            }
            out.unicodeScalars.append(s[i])
            i += 1
        }
        return out
    }

    /// The text iOS shows for a localized alert member: the table's string for `key`
    /// formatted with `args`; the key itself when the table (or no table) has none, as
    /// iOS shows a key its `Localizable.strings` lacks.
    public func text(key: String, args: [String]) -> String {
        Self.format(entries[key] ?? key, args)
    }
}
