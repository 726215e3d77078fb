internal import PushSealSystem

extension JSONReader {
    /// The JSON type of the next value, as ``Scanner/peekKind()`` sees it from its first byte.
    public enum ValueKind: Sendable, Hashable {
        case object, array, string, number, bool, null

        /// `"an object"`, `"a string"`, … — the same words as ``JSONValue/typeName``.
        public var typeName: String {
            switch self {
            case .object: "an object"
            case .array: "an array"
            case .string: "a string"
            case .number: "a number"
            case .bool: "a boolean"
            case .null: "null"
            }
        }
    }

    /// Where a string value's content lies in the scanned input, found without building a `String`.
    public struct StringSpan: Sendable, Hashable {
        /// Byte offset of the first content byte (just after the opening quote).
        public let start: Int
        /// Byte offset of the closing quote; the content is `start..<end`.
        public let end: Int
        /// `true` when the content has at least one backslash escape.
        public let hasEscapes: Bool
        /// `true` when the content is already written the way ``JSONWriter`` writes it (only
        /// `\"`, `\\`, `\b`, `\f`, `\n`, `\r`, `\t` and lower-case `\u00XX` for the other control
        /// characters; no `\/`, no other `\u`): copying the content bytes between quotes gives
        /// exactly the writer's output for the decoded string.
        public let isMinimallyEscaped: Bool

        /// The content's length in bytes as written in the input.
        public var byteCount: Int { end - start }
    }

    /// A pull scanner over one JSON document: it checks the input with exactly the rules of
    /// ``parse(_:limits:)-(UnsafeRawBufferPointer,_)`` (strict UTF-8, escapes, no control
    /// characters, numbers, nesting) but builds nothing unless asked: strings come back as
    /// ``StringSpan``s into the input, so a caller can copy them on without decoding.
    ///
    /// Drive it by the document's shape: ``beginObject()``, then ``nextKey()`` until it returns
    /// `nil`, reading each member's value with ``readString()``, ``readNumber()``,
    /// ``readValue()`` (a ``JSONValue`` tree, for the members where one is wanted) or a nested
    /// ``beginObject()``; then ``finish()``. Duplicate keys are only rejected inside values read
    /// with ``readValue()``; the caller checks the keys it sees through ``nextKey()``.
    /// It points into the input: use it only while the input's bytes are valid.
    public struct Scanner {
        var parser: Parser
        private var afterValue = false
        /// The document as an array when the scanner was made by ``scanning(_:limits:_:)``:
        /// then `PushNotification.scan` keeps its text members as spans of it (no `String`s).
        public internal(set) var source: [UInt8]?

        init(parser: Parser) { self.parser = parser }

        /// A scanner at the start of `bytes`, one complete document (UTF-8, no byte order mark).
        /// The scanner points into `bytes`: use it only while they are valid (inside
        /// `withUnsafeBytes`).
        /// - Parameters:
        ///   - bytes: the document.
        ///   - limits: size and depth bounds; ``Limits/default`` when omitted.
        /// - Throws: `JSONError` `.inputTooLarge`, `.invalidJSON` (empty input).
        public init(_ bytes: UnsafeRawBufferPointer, limits: Limits = .default) throws {
            guard bytes.count <= limits.maxByteCount else {
                throw JSONError(.inputTooLarge, "JSON input of \(bytes.count) bytes exceeds the limit of \(limits.maxByteCount) bytes")
            }
            guard let base = bytes.baseAddress, bytes.count > 0 else {
                throw JSONError(.invalidJSON, "empty input at byte offset 0, expected a JSON value")
            }
            self.init(parser: Parser(base: base.assumingMemoryBound(to: UInt8.self), end: bytes.count, maxDepth: limits.maxDepth))
        }

        /// Runs `body` with a scanner at the start of `bytes` (see ``init(_:limits:)``). The
        /// scanner also holds `bytes` itself, so a `PushNotification` scanned from it
        /// (`PushNotification.scan(_:into:otherMember:)`) keeps its text as spans of `bytes` and is
        /// encoded by copying them, valid for as long as the notification lives.
        /// - Returns: what `body` returns.
        /// - Throws: `FormatError` `.inputTooLarge`, `.invalidJSON` (empty input); what `body` throws.
        public static func scanning<R>(_ bytes: [UInt8], limits: Limits = .default, _ body: (inout Scanner) throws -> R) throws -> R {
            try bytes.withUnsafeBytes { raw in
                var s = try Scanner(raw, limits: limits)
                s.source = bytes
                return try body(&s)
            }
        }

        /// The current byte offset in the input.
        public var offset: Int { parser.i }

        /// The JSON type of the next value (after whitespace).
        /// - Throws: `JSONError` `.invalidJSON` when no value can start here.
        public mutating func peekKind() throws -> ValueKind {
            parser.skipWhitespace()
            guard parser.i < parser.end else { throw parser.unexpected("a JSON value") }
            switch parser.p[parser.i] {
            case Byte.quote: return .string
            case Byte.openBrace: return .object
            case Byte.openBracket: return .array
            case 0x74, 0x66: return .bool
            case 0x6E: return .null
            case Byte.minus, 0x30...0x39: return .number
            default: throw parser.unexpected("a JSON value")
            }
        }

        /// Consumes `{` (after whitespace) and enters the object.
        /// - Throws: `JSONError` `.invalidJSON` (with the byte offset), `.nestingTooDeep`.
        public mutating func beginObject() throws {
            if parser.i == 0, parser.end >= 3, parser.p[0] == 0xEF, parser.p[1] == 0xBB, parser.p[2] == 0xBF {
                throw JSONError(.invalidJSON, "byte order mark at byte offset 0 (RFC 8259 §8.1 forbids it)")
            }
            parser.skipWhitespace()
            guard parser.i < parser.end, parser.p[parser.i] == Byte.openBrace else { throw parser.unexpected("'{'") }
            try parser.enter()
            parser.i += 1
            afterValue = false
        }

        /// The step between the items of an object or array: after whitespace, consumes `closing`
        /// (leaves the container, `false`) or, after a value, the `,` and the whitespace after it
        /// (`true`: an item is next). Shared by ``nextKey()`` and ``nextElement()``.
        @inline(__always)
        private mutating func nextItem(closing: UInt8, separatorExpected: String, itemExpected: String) throws -> Bool {
            parser.skipWhitespace()
            guard parser.i < parser.end else { throw parser.unexpected(afterValue ? separatorExpected : itemExpected) }
            let b = parser.p[parser.i]
            if b == closing {
                parser.i += 1
                parser.depth -= 1
                afterValue = true
                return false
            }
            if afterValue {
                guard b == Byte.comma else { throw parser.unexpected(separatorExpected) }
                parser.i += 1
                parser.skipWhitespace()
            }
            return true
        }

        /// The next member's key (its `:` consumed), or `nil` after consuming the object's `}`.
        /// - Throws: `JSONError` `.invalidJSON`, `.invalidUTF8`.
        public mutating func nextKey() throws -> StringSpan? {
            guard try nextItem(closing: Byte.closeBrace, separatorExpected: "',' or '}'", itemExpected: "a string key") else { return nil }
            guard parser.i < parser.end, parser.p[parser.i] == Byte.quote else { throw parser.unexpected("a string key") }
            let key = try parser.scanString()
            parser.skipWhitespace()
            guard parser.i < parser.end, parser.p[parser.i] == Byte.colon else { throw parser.unexpected("':'") }
            parser.i += 1
            afterValue = true
            return key
        }

        /// Consumes `[` (after whitespace) and enters the array; call ``nextElement()`` before
        /// each element.
        /// - Throws: `JSONError` `.invalidJSON` (with the byte offset), `.nestingTooDeep`.
        public mutating func beginArray() throws {
            parser.skipWhitespace()
            guard parser.i < parser.end, parser.p[parser.i] == Byte.openBracket else { throw parser.unexpected("'['") }
            try parser.enter()
            parser.i += 1
            afterValue = false
        }

        /// `true` when another element follows (its `,` consumed; read it next), or `false` after
        /// consuming the array's `]`.
        /// - Throws: `JSONError` `.invalidJSON`.
        public mutating func nextElement() throws -> Bool {
            let wasAfterValue = afterValue
            guard try nextItem(closing: Byte.closeBracket, separatorExpected: "',' or ']'", itemExpected: "a JSON value") else { return false }
            if wasAfterValue {
                guard parser.i < parser.end, parser.p[parser.i] != Byte.closeBracket else { throw parser.unexpected("a JSON value") }
            }
            afterValue = true
            return true
        }

        /// Reads a string value without decoding it.
        /// - Throws: `JSONError` `.invalidJSON` (not a string, bad escape, control character),
        ///   `.invalidUTF8`.
        public mutating func readString() throws -> StringSpan {
            parser.skipWhitespace()
            guard parser.i < parser.end, parser.p[parser.i] == Byte.quote else { throw parser.unexpected("a string") }
            return try parser.scanString()
        }

        /// Reads a number: ``JSONValue/integer(_:)`` or ``JSONValue/number(_:)`` by the rules of
        /// ``JSONReader``.
        /// - Throws: `JSONError` `.invalidJSON`.
        public mutating func readNumber() throws -> JSONValue {
            parser.skipWhitespace()
            guard parser.i < parser.end, parser.p[parser.i] == Byte.minus || parser.isDigit(parser.p[parser.i]) else {
                throw parser.unexpected("a number")
            }
            return try parser.parseNumber()
        }

        /// Reads any value as a ``JSONValue`` tree (duplicate keys rejected, nesting counted
        /// from the current depth).
        /// - Throws: what ``JSONReader/parse(_:limits:)-(UnsafeRawBufferPointer,_)`` throws.
        public mutating func readValue() throws -> JSONValue {
            parser.skipWhitespace()
            return try parser.parseValue()
        }

        /// Checks the next value as ``readValue()`` would (the same errors) without building it,
        /// and steps over it: for a member kept as raw bytes (from the offset before the call to
        /// ``offset`` after it).
        /// - Throws: what ``readValue()`` throws.
        public mutating func skipValue() throws {
            parser.skipWhitespace()
            try parser.skipValue()
        }

        /// Steps over the next value when its bytes are exactly `raw`, an object, array or string
        /// (self-delimiting) that a scanner accepted before at the same nesting depth — the same
        /// bytes are then the same value, so they are not checked again (a line format that
        /// repeats a member, such as push-seal batch's `headers`). `false`, nothing consumed,
        /// when they differ or `raw` is not such a value.
        public mutating func skipValue(ifEqualTo raw: UnsafeRawBufferPointer) -> Bool {
            parser.skipWhitespace()
            guard let r = raw.baseAddress, let first = raw.first, first == Byte.openBrace || first == Byte.openBracket || first == Byte.quote,
                  parser.end - parser.i >= raw.count,
                  Memory.equal(parser.p + parser.i, r, count: raw.count) else { return false }
            parser.i += raw.count
            return true
        }

        /// ``skipValue(ifEqualTo:)-(UnsafeRawBufferPointer)`` with the value's bytes in an array.
        public mutating func skipValue(ifEqualTo raw: [UInt8]) -> Bool {
            // Safe: the array's bytes are valid inside the closure and only compared there.
            raw.withUnsafeBytes { skipValue(ifEqualTo: $0) }
        }

        /// Checks that only whitespace follows the document's value.
        /// - Throws: `JSONError` `.invalidJSON`.
        public mutating func finish() throws {
            parser.skipWhitespace()
            if parser.i != parser.end { throw parser.unexpected("end of input after the JSON value") }
        }

        /// The content bytes of `span` as written in the input (escapes not decoded).
        public func rawBytes(_ span: StringSpan) -> UnsafeRawBufferPointer {
            UnsafeRawBufferPointer(start: parser.p + span.start, count: span.byteCount)
        }

        /// Runs `body` with the content bytes of `span` as written in the input (escapes not
        /// decoded), e.g. to match a key against known names without building a `String`.
        /// - Returns: what `body` returns.
        @inlinable public func withRawBytes<R>(_ span: StringSpan, _ body: (Span<UInt8>) throws -> R) rethrows -> R {
            // Safe: the content lies inside the input (the scanner made the span of bytes it
            // read), which is valid while the scanner is used; the span ends with the call.
            let bytes = rawBytes(span).assumingMemoryBound(to: UInt8.self)
            return try body(bytes.span)
        }

        /// The decoded string of `span`.
        public func string(_ span: StringSpan) -> String {
            if !span.hasEscapes {
                return String(decoding: UnsafeBufferPointer(start: parser.p + span.start, count: span.byteCount), as: UTF8.self)
            }
            var copy = parser
            copy.i = span.start - 1
            // The span was validated when it was scanned, so scanning it again cannot fail.
            guard (try? copy.scanString()) != nil else { return "" }
            return String(decoding: copy.scratch, as: UTF8.self)
        }

        /// Whether `span`'s content is exactly the ASCII `text` (no escapes).
        public func rawEquals(_ span: StringSpan, _ text: StaticString) -> Bool {
            guard span.byteCount == text.utf8CodeUnitCount else { return false }
            let t = text.utf8Start
            for k in 0..<span.byteCount where parser.p[span.start + k] != t[k] { return false }
            return true
        }
    }

}

extension Parser {
    /// Validates a string whose opening quote is at `p[i]` without building it; leaves `i`
    /// after the closing quote. When it has escapes, `scratch` holds its decoded UTF-8 after
    /// the call (``parseString()`` builds its `String` from that).
    /// - Throws: `JSONError` `.invalidJSON` (unterminated, control character, bad escape,
    ///   unpaired surrogate), `.invalidUTF8`.
    @inline(__always)
    mutating func scanString() throws -> JSONReader.StringSpan {
        // The common case inline: plain ASCII up to the closing quote (``ByteScan/skipPlainWords``).
        // Anything else continues in the general scan from where this stopped.
        let start = i + 1
        let j = ByteScan.skipPlainWords(p, from: start, end: end)
        if j < end, p[j] == Byte.quote {
            i = j + 1
            return JSONReader.StringSpan(start: start, end: j, hasEscapes: false, isMinimallyEscaped: true)
        }
        i = j
        return try scanString(from: start)
    }

    /// The general string scan: the content starts at `start` and `p[start..<i]` is plain ASCII
    /// (no escape, control or non-ASCII byte); leaves `i` after the closing quote.
    /// - Throws: as ``scanString()``.
    mutating func scanString(from start: Int) throws -> JSONReader.StringSpan {
        var hasEscapes = false
        var minimal = true
        var runStart = start  // first byte not yet copied to `scratch` (once escaped)
        while true {
            // Plain ASCII a word at a time, stopping exactly at the first byte that is not.
            i = ByteScan.skipPlainWords(p, from: i, end: end)
            guard i < end else {
                throw JSONError(.invalidJSON, "unterminated string starting at byte offset \(start - 1)")
            }
            let b = p[i]
            if b == Byte.quote {
                if hasEscapes { scratch.append(contentsOf: UnsafeBufferPointer(start: p + runStart, count: i - runStart)) }
                let span = JSONReader.StringSpan(start: start, end: i, hasEscapes: hasEscapes, isMinimallyEscaped: minimal)
                i += 1
                return span
            } else if b == Byte.backslash {
                if !hasEscapes {
                    hasEscapes = true
                    scratch.removeAll(keepingCapacity: true)
                }
                scratch.append(contentsOf: UnsafeBufferPointer(start: p + runStart, count: i - runStart))
                let escapeStart = i
                try parseEscape()
                runStart = i
                if minimal { minimal = isMinimalEscape(at: escapeStart, length: i - escapeStart) }
            } else if b < 0x20 {
                throw JSONError(.invalidJSON, "control character U+00\(hex2(b)) inside a string at byte offset \(i) (must be escaped)")
            } else if b < 0x80 {
                i += 1
            } else {
                let n = UTF8Validation.sequenceLength(p, at: i, end: end)
                if n == 0 {
                    throw JSONError(.invalidUTF8, "ill-formed UTF-8 byte 0x\(hex2(b)) at byte offset \(i)")
                }
                i += n
            }
        }
    }

    /// Whether the (valid) escape at `p[at..<at+length]` is the one ``JSONWriter`` writes for
    /// the character it stands for.
    func isMinimalEscape(at: Int, length: Int) -> Bool {
        if length == 2 { return p[at + 1] != Byte.slash }
        guard length == 6, p[at + 2] == Byte.zero, p[at + 3] == Byte.zero else { return false }
        let high = p[at + 4], low = p[at + 5]
        guard high == 0x30 || high == 0x31 else { return false }
        guard isDigit(low) || (low >= 0x61 && low <= 0x66) else { return false }
        // U+0008, U+0009, U+000A, U+000C, U+000D have short escapes.
        if high == 0x30 { return !(low == 0x38 || low == 0x39 || low == 0x61 || low == 0x63 || low == 0x64) }
        return true
    }
}

extension JSONReader {
    /// The decoded UTF-8 bytes of the JSON string whose opening quote is at byte
    /// `quoteIndex` of `bytes` (escapes resolved), or `nil` when no valid string starts there.
    /// For text a ``Scanner`` already validated (a span kept by a caller), so it cannot fail then.
    /// - Parameters:
    ///   - bytes: the whole JSON document.
    ///   - quoteIndex: offset of the string's opening `"` in `bytes`.
    public static func decodeString(in bytes: UnsafeBufferPointer<UInt8>, openingQuoteAt quoteIndex: Int) -> [UInt8]? {
        guard let base = bytes.baseAddress, quoteIndex >= 0, quoteIndex < bytes.count else { return nil }
        var parser = Parser(base: base, end: bytes.count, maxDepth: 1)
        parser.i = quoteIndex
        guard (try? parser.scanString()) != nil else { return nil }
        return parser.scratch
    }

    /// The decoded string of the JSON string content `start..<end` of the document `bytes` (a
    /// span a ``Scanner`` read and validated, kept by the caller): copied as it is without
    /// escapes, else decoded from its opening quote at `start - 1`. `nil` when the range does
    /// not lie inside `bytes` or no valid string starts there.
    /// - Parameters:
    ///   - bytes: the whole JSON document.
    ///   - start: offset of the first content byte (just after the opening quote), at least 1.
    ///   - end: offset of the closing quote.
    ///   - hasEscapes: whether the content has a backslash escape (``StringSpan/hasEscapes``).
    public static func decodedString(in bytes: RawSpan, start: Int, end: Int, hasEscapes: Bool) -> String? {
        guard start >= 1, start <= end, end < bytes.byteCount else { return nil }
        // Safe: the document's memory is valid for the call and only read; `start..<end` lies
        // inside it (checked just above).
        return bytes.withUnsafeBytes { raw in
            let u = raw.assumingMemoryBound(to: UInt8.self)
            if !hasEscapes { return String(decoding: UnsafeBufferPointer(rebasing: u[start..<end]), as: UTF8.self) }
            return decodeString(in: u, openingQuoteAt: start - 1).map { String(decoding: $0, as: UTF8.self) }
        }
    }
}
