public import PushSealSystem
public import PushSealJSON
/// An error from the format layer: JSON reading and writing, and the wire format.
///
/// Compare errors by ``code``: the human ``reason`` may change between releases, the codes
/// will not. Reasons name what was wrong and where (a byte offset), never key bytes or
/// plaintext beyond the offending character.
public typealias FormatError = DomainError<FormatErrorDomain>

/// The domain of ``FormatError``: `name` is `format`; `Detail`: The payload field an envelope error is about (``FormatError/field``).
public enum FormatErrorDomain: ErrorDomain { public static let name = "format"; public typealias Detail = String? }

extension ErrorCode<FormatError> {
    // MARK: JSON codes (JSONReader, JSONWriter): JSONError's codes under the same names, as
    // ``FormatError/init(_:)`` maps them; their meaning is documented on JSONError's.

    /// JSONError's `invalidJSON`: not JSON as RFC 8259 defines it (the reason says where).
    public static var invalidJSON: Self { Self(JSONError.Code.invalidJSON.name) }
    /// JSONError's `invalidUTF8`: not well-formed UTF-8.
    public static var invalidUTF8: Self { Self(JSONError.Code.invalidUTF8.name) }
    /// JSONError's `nestingTooDeep`.
    public static var nestingTooDeep: Self { Self(JSONError.Code.nestingTooDeep.name) }
    /// JSONError's `duplicateKey`: one object has the same key twice.
    public static var duplicateKey: Self { Self(JSONError.Code.duplicateKey.name) }
    /// JSONError's `inputTooLarge`.
    public static var inputTooLarge: Self { Self(JSONError.Code.inputTooLarge.name) }
    /// JSONError's `nonFiniteNumber`: an infinite or NaN number to write.
    public static var nonFiniteNumber: Self { Self(JSONError.Code.nonFiniteNumber.name) }

    // MARK: Wire format codes
    // (codec of the APNs payload fields, base64, plaintext; docs/FORMAT.md §8)

    /// A required payload field (`encrypted_data`, `key_id` or `enc_alg`) is absent, or the
    /// payload is not a JSON object. The reason names the field.
    public static var missingField: Self { Self("missingField") }
    /// A payload field is present but not a JSON string (e.g. a number). The reason names it.
    public static var wrongFieldType: Self { Self("wrongFieldType") }
    /// A payload field is the empty string (or, for `encrypted_data`, only whitespace).
    public static var emptyField: Self { Self("emptyField") }
    /// `enc_alg` is not `A256GCM`, the only algorithm of version 1.
    public static var unknownAlgorithm: Self { Self("unknownAlgorithm") }
    /// `key_id` is not 1–64 characters of `A-Z a-z 0-9 _ -`.
    public static var invalidKeyID: Self { Self("invalidKeyID") }
    /// An app id (bundle identifier, APNs topic) is empty, longer than 255 bytes, contains
    /// `|` or a character outside printable ASCII.
    public static var invalidAppID: Self { Self("invalidAppID") }
    /// `encrypted_data` (or `media.key`) is not base64 by the reading rules of FORMAT.md §4:
    /// a character outside both alphabets, both alphabets mixed, wrong padding, a length that
    /// is not a whole number of bytes, or non-zero leftover bits.
    public static var invalidBase64: Self { Self("invalidBase64") }
    /// The decoded box is shorter than the algorithm's smallest box (A256GCM: nonce plus tag,
    /// 28 bytes; v2: enc plus tag, 48 bytes).
    public static var truncatedBox: Self { Self("truncatedBox") }
    /// The box did not authenticate: wrong key, wrong key id or app id in the AAD, or any
    /// modified bit of nonce, ciphertext or tag (AES-GCM cannot tell these apart, on purpose).
    public static var authenticationFailed: Self { Self("authenticationFailed") }

    // MARK: Wire format version 2 codes (docs/FORMAT.md §V.8)

    /// A version 2 box is shorter than its 32-byte `enc` (a truncated payload or another
    /// layout); from `CryptoError` `.invalidPublicKey` of the HPKE core.
    public static var invalidEnc: Self { Self("invalidEnc") }
    /// X25519 of the device key with `enc` (or with a pinned sender key) gave the all-zero
    /// value: a low-order point (RFC 9180 §7.1.4); from `CryptoError` `.zeroSharedSecret`.
    public static var zeroSharedSecret: Self { Self("zeroSharedSecret") }
    /// A base-mode (`HPKE-BASE-X25519-A256GCM`) payload for an app that pinned a sender key.
    public static var downgradeRefused: Self { Self("downgradeRefused") }
    /// An auth-mode payload whose `sender_key_id` is not pinned for the app (or the app
    /// pinned no sender key at all).
    public static var unknownSenderKey: Self { Self("unknownSenderKey") }

    /// The key given to open or seal is not 32 bytes.
    public static var invalidKey: Self { Self("invalidKey") }
    /// The opened plaintext is not a UTF-8 JSON object of the documented shape; the reason
    /// names the member and the problem (e.g. `media.sha256: expected 64 hex digits`).
    public static var invalidPlaintext: Self { Self("invalidPlaintext") }
}

extension FormatError {
    /// The payload field an envelope error is about (`encrypted_data`, `key_id`, `enc_alg`, or
    /// an algorithm's own header field such as `sender_key_id`), or `nil`. Set for
    /// `.missingField`, `.wrongFieldType`, `.emptyField`, so a receiver can report
    /// `missingField:key_id` without reading the payload again. Not compared by `==`.
    public var field: String? { detail }

    /// Creates an error with a stable `code`, a human `reason` (no secrets) and, for an
    /// envelope field, the field's name.
    public init(_ code: Code, _ reason: String, field: String? = nil) {
        self.init(code, reason, detail: field)
    }

    /// The wire format's error for a JSON failure: the same code name (`invalidJSON`,
    /// `invalidUTF8`, `nestingTooDeep`, `duplicateKey`, `inputTooLarge`, `nonFiniteNumber`)
    /// and reason.
    public init(_ json: JSONError) {
        self.init(Code(json.code.name), json.reason)
    }
}

// Re-exported so that code importing only this module reads the error's `code`, `reason` and
// `suggestion` (their declarations live in PushSealSystem; MemberImportVisibility).
@_exported public import struct PushSealSystem.DomainError
