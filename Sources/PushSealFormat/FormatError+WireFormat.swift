// Error codes of wire format v1 (docs/FORMAT.md §8). Kept in an extension so that
// FormatError.swift (the JSON layer's file) and this file evolve separately.

extension FormatError.Code {
    /// A required payload field (`encrypted_data`, `key_id` or `enc_alg`) is absent, or the
    /// payload is not a JSON object. The reason names the field.
    public static let missingField = FormatError.Code("missingField")
    /// A payload field is present but not a JSON string (e.g. a number). The reason names it.
    public static let wrongFieldType = FormatError.Code("wrongFieldType")
    /// A payload field is the empty string (or, for `encrypted_data`, only whitespace).
    public static let emptyField = FormatError.Code("emptyField")
    /// `enc_alg` is not `A256GCM`, the only algorithm of version 1.
    public static let unknownAlgorithm = FormatError.Code("unknownAlgorithm")
    /// `key_id` is not 1–64 characters of `A-Z a-z 0-9 _ -`.
    public static let invalidKeyID = FormatError.Code("invalidKeyID")
    /// An app id (bundle identifier, APNs topic) is empty, longer than 255 bytes, contains
    /// `|` or a character outside printable ASCII.
    public static let invalidAppID = FormatError.Code("invalidAppID")
    /// `encrypted_data` (or `media.key`) is not base64 by the reading rules of FORMAT.md §4:
    /// a character outside both alphabets, both alphabets mixed, wrong padding, a length that
    /// is not a whole number of bytes, or non-zero leftover bits.
    public static let invalidBase64 = FormatError.Code("invalidBase64")
    /// The decoded box is shorter than nonce plus tag (28 bytes).
    public static let truncatedBox = FormatError.Code("truncatedBox")
    /// The box did not authenticate: wrong key, wrong key id or app id in the AAD, or any
    /// modified bit of nonce, ciphertext or tag (AES-GCM cannot tell these apart, on purpose).
    public static let authenticationFailed = FormatError.Code("authenticationFailed")
    /// The key given to open or seal is not 32 bytes.
    public static let invalidKey = FormatError.Code("invalidKey")
    /// The opened plaintext is not a UTF-8 JSON object of the documented shape; the reason
    /// names the member and the problem (e.g. `media.sha256: expected 64 hex digits`).
    public static let invalidPlaintext = FormatError.Code("invalidPlaintext")
}
