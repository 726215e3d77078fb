/// The shape every PushSeal error struct shares (STYLE.md): a stable machine-readable `code`
/// and a human `reason` without secrets. Equality and hashing use the code alone, so tests and
/// callers compare errors by what they mean, not by their wording.
///
/// Each module has its own error struct (`CryptoError`, `FormatError`, `KeychainError`, …) with a
/// nested `Code` type whose static constants are the stable codes.
public protocol CodedError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The module's code type: hashable, printable as its stable name.
    associatedtype Code: Hashable & Sendable & CustomStringConvertible
    /// The stable code.
    var code: Code { get }
    /// A human explanation, without secrets; may change between releases.
    var reason: String { get }
}

extension CodedError {
    /// Equal when the codes are equal; the reasons are not compared.
    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }
    /// Hashes the code only, consistent with `==`.
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }
    /// `code: reason`.
    public var description: String { "\(code): \(reason)" }
}
