public import PushSealSystem

/// An error from reading or writing JSON (``JSONReader``, ``JSONWriter``).
///
/// Compare errors by ``code``: the human ``reason`` may change between releases, the codes
/// will not. Reasons say what was wrong and at which byte offset, never more of the input
/// than the offending character.
public typealias JSONError = DomainError<JSONErrorDomain>

/// The domain of ``JSONError``: `name` is `json`.
public enum JSONErrorDomain: ErrorDomain { public static let name = "json" }

extension ErrorCode<JSONError> {
    /// The input is not JSON as RFC 8259 defines it: a syntax error, trailing bytes, a
    /// leading zero, `NaN`/`Infinity`, a control character or unpaired surrogate escape in
    /// a string, a byte order mark, or a number outside the range of `Double`. The reason
    /// says what and at which byte offset.
    public static var invalidJSON: Self { Self("invalidJSON") }
    /// The input (or a string handed to the writer) is not well-formed UTF-8 (Unicode
    /// Table 3-7): overlong forms, UTF-8-encoded surrogates, bytes above F4, truncated or
    /// stray continuation bytes.
    public static var invalidUTF8: Self { Self("invalidUTF8") }
    /// Arrays and objects nest deeper than ``JSONReader/Limits/maxDepth``.
    public static var nestingTooDeep: Self { Self("nestingTooDeep") }
    /// One object has the same key twice (keys compared as Swift strings, i.e. up to
    /// Unicode canonical equivalence). Rejected because readers disagree on which one wins.
    public static var duplicateKey: Self { Self("duplicateKey") }
    /// The input is longer than ``JSONReader/Limits/maxByteCount``.
    public static var inputTooLarge: Self { Self("inputTooLarge") }
    /// The writer was asked to write an infinite or NaN `Double`, which JSON cannot express.
    public static var nonFiniteNumber: Self { Self("nonFiniteNumber") }
}

extension JSONError {
    /// The byte offset (0-based, into the input) the reason names (`… at byte offset N …`), or
    /// `nil` when it names none. Lets a wrapper keep the position while dropping the reason's
    /// quoted input (a decrypted plaintext's member name, security review F15).
    public var byteOffset: Int? {
        guard let r = reason.firstRange(of: "byte offset ") else { return nil }
        let digits = reason[r.upperBound...].prefix { $0.isASCII && $0.isNumber }
        return Int(digits)
    }
}

// Re-exported so that code importing only this module reads the error's `code`, `reason` and
// `suggestion` (their declarations live in PushSealSystem; MemberImportVisibility).
@_exported public import struct PushSealSystem.DomainError
