/// The one error shape every PushSeal module uses (STYLE.md): a stable machine-readable `code`,
/// the module's `domain`, and a human `reason` without secrets. Equality and hashing use the
/// code alone, so tests and callers compare errors by what they mean, not by their wording.
///
/// A module declares its error in a few lines:
/// ```swift
/// public struct CryptoError: CodedError {
///     public typealias Code = ErrorCode<CryptoError>
///     public static let domain = "crypto"
///     public let code: Code
///     public let reason: String
///     public init(_ code: Code, _ reason: String) { self.code = code; self.reason = reason }
/// }
/// extension ErrorCode<CryptoError> {
///     public static var authenticationFailed: Self { Self("authenticationFailed") }
/// }
/// ```
public protocol CodedError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The module's code type, normally ``ErrorCode`` of the error type itself.
    associatedtype Code: Hashable & Sendable & CustomStringConvertible
    /// The module's name for errors, e.g. `crypto`, `keychain`; stable.
    static var domain: String { get }
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

/// A stable error code of the error type `Owner`: its name (lowerCamelCase, e.g.
/// `authenticationFailed`) is the machine-readable part of the error and never changes.
/// `Owner` only keeps the codes of different modules apart; constants are declared in
/// `extension ErrorCode<Owner>`.
public struct ErrorCode<Owner>: Hashable, Sendable, CustomStringConvertible {
    /// The code's stable name, e.g. `authenticationFailed`.
    public let name: String

    /// A code named `name` (lowerCamelCase, stable).
    public init(_ name: String) { self.name = name }

    /// The stable name.
    public var description: String { name }
}

/// A ``CodedError`` that may carry the status of the platform API it stands for (the
/// keychain's `OSStatus`, e.g. -25308 `errSecInteractionNotAllowed`) and, when the fix is known
/// exactly, a suggestion (e.g. `chmod 600 PATH`). Command-line tools turn it into their error
/// report without depending on the module that threw it.
public protocol StatusCodedError: CodedError {
    /// The platform status number (e.g. -25308), or `nil`.
    var osStatus: Int32? { get }
    /// The platform's name for ``osStatus`` (e.g. `errSecInteractionNotAllowed`), or `nil`.
    var statusName: String? { get }
    /// What the user can do about it, when known exactly; `nil` otherwise.
    var suggestion: String? { get }
}
