public import PushSealJSON
import PushSealWire

/// A minimal JSON writer that appends UTF-8 bytes to an array, for the payload's clear parts
/// and the CLIs' output lines: the wire module's `PlaintextEncoder` over a growable array (one
/// escaper for plaintext and payload), compact, minimal escapes (`"`, `\`, control characters
/// below U+0020 only; never `\/`), integers in decimal.
///
/// The sender writes every payload with it, so its output is exactly what is measured against
/// the 4096-byte APNs budget. ``escapedByteCount(_:)`` counts exactly what ``string(_:)`` writes.
public struct PayloadWriter: Sendable {
    private var encoder: PlaintextEncoder<[UInt8]>

    /// The bytes written so far.
    public var bytes: [UInt8] {
        get { encoder.sink }
        _modify { yield &encoder.sink }
    }

    /// A writer with room for `capacity` bytes.
    public init(capacity: Int = 4096) {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(capacity)
        encoder = PlaintextEncoder(into: bytes)
    }

    /// Appends ASCII punctuation or a literal key, unescaped. For text known to need no escape.
    public mutating func raw(_ text: StaticString) { encoder.raw(text) }

    /// Appends one byte.
    public mutating func byte(_ b: UInt8) { encoder.sink.append(b) }

    /// Appends `s` as a JSON string literal with quotes.
    public mutating func string(_ s: String) { encoder.string(s) }

    /// Appends `s` as a JSON string literal with quotes.
    public mutating func string(_ s: Substring) { encoder.string(s) }

    /// The number of bytes ``string(_:)`` writes for `s`, quotes included.
    public static func escapedByteCount(_ s: String) -> Int {
        var count = 2
        for c in s.utf8 {
            if c >= 0x20 && c != 0x22 && c != 0x5C { count += 1; continue }
            switch c {
            case 0x22, 0x5C, 0x0A, 0x0D, 0x09, 0x08, 0x0C: count += 2
            default: count += 6
            }
        }
        return count
    }

    /// Appends `value` in decimal.
    public mutating func integer(_ value: Int64) { encoder.integer(value) }

    /// Appends a finite `Double` in Swift's shortest round-trip form (`0.5`, `1.0`, `1e-07`).
    /// - Throws: `SenderError` `.invalidOption` for NaN or infinity, which JSON cannot express.
    public mutating func number(_ value: Double) throws {
        try Self.options { try encoder.number(value) }
    }

    /// Appends any JSON value (objects in member order).
    /// - Throws: `SenderError` `.invalidOption` for a non-finite number.
    public mutating func value(_ value: JSONValue) throws {
        try Self.options { try encoder.value(value) }
    }

    /// Appends an object with its members in order.
    /// - Throws: `SenderError` `.invalidOption` for a non-finite number.
    public mutating func object(_ o: JSONObject) throws {
        try Self.options { try encoder.object(o) }
    }

    /// Appends bytes as they are (already valid JSON text).
    public mutating func raw(bytes data: UnsafeRawBufferPointer) { encoder.sink.append(bytes: data) }

    private static func options(_ body: () throws -> Void) throws {
        do {
            try body()
        } catch let e as FormatError {
            throw SenderError(.invalidOption, "JSON has no NaN or infinity (\(e.reason))")
        }
    }
}
