/// The one error shape every PushSeal module uses (STYLE.md): a stable machine-readable `code`,
/// the module's `domain`, and a human `reason` without secrets. Equality and hashing use the
/// code alone, so tests and callers compare errors by what they mean, not by their wording.
///
/// A module declares its error as a ``DomainError`` of its own domain, in two lines, and its
/// codes as constants:
/// ```swift
/// public enum CryptoErrorDomain: ErrorDomain { public static let name = "crypto" }
/// public typealias CryptoError = DomainError<CryptoErrorDomain>
/// extension ErrorCode<CryptoError> {
///     public static var authenticationFailed: Self { Self("authenticationFailed") }
/// }
/// ```
/// The error module re-exports the struct (`@_exported public import struct
/// PushSealSystem.DomainError`), so code that imports only the error's module reads `code`,
/// `reason` and `suggestion`.
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

/// The domain of a ``DomainError``: a caseless enum per module that names its errors and says
/// what extra they carry.
public protocol ErrorDomain {
    /// What an error of this domain carries beside code, reason and suggestion (a field name,
    /// an SQLSTATE, a byte count); ``NoErrorDetail`` when nothing.
    associatedtype Detail: Sendable = NoErrorDetail
    /// The domain's stable name, e.g. `crypto`, `keys`: ``CodedError/domain``.
    static var name: String { get }
    /// The text of an error of this domain (its `description`); by default `code: reason`.
    static func describe(_ error: DomainError<Self>) -> String
}

extension ErrorDomain {
    /// `code: reason`.
    public static func describe(_ error: DomainError<Self>) -> String { "\(error.code): \(error.reason)" }
}

/// The ``ErrorDomain/Detail`` of a domain whose errors carry nothing extra.
public struct NoErrorDetail: Sendable {
    /// The empty detail.
    public init() {}
}

/// A domain whose codes stand for platform statuses (the keychain's `OSStatus`): its errors
/// are ``StatusCodedError``s.
public protocol StatusErrorDomain: ErrorDomain {
    /// The platform status a code stands for (e.g. `(-25308, "errSecInteractionNotAllowed")`
    /// for `interactionNotAllowed`), or `nil` for a code without one.
    static func status(of code: ErrorCode<DomainError<Self>>) -> (number: Int32, name: String)?
}

/// The error of one module: a stable ``code`` of the domain, a human ``reason`` (lower case, no
/// secrets), a ``suggestion`` when the fix is known exactly (e.g. `chmod 600 PATH`), and the
/// domain's ``detail``. Equality and hashing use the code alone (``CodedError``).
public struct DomainError<Domain: ErrorDomain>: CodedError {
    /// The stable codes of the domain (constants in `extension ErrorCode<…>`).
    public typealias Code = ErrorCode<DomainError>
    /// ``ErrorDomain/name``.
    public static var domain: String { Domain.name }

    /// The stable code; equality and hashing use it alone.
    public let code: Code
    /// A human explanation: lower case, no secrets; may change between releases.
    public let reason: String
    /// What the user can do about it, when known exactly; `nil` otherwise.
    public let suggestion: String?
    /// What the domain adds (``ErrorDomain/Detail``); the module names it (`field`, `sqlState`).
    public let detail: Domain.Detail

    /// Creates an error with a stable `code`, a human `reason` (no secrets), when the fix is
    /// known exactly a `suggestion`, and the domain's `detail`.
    public init(_ code: Code, _ reason: String, suggestion: String? = nil, detail: Domain.Detail) {
        self.code = code
        self.reason = reason
        self.suggestion = suggestion
        self.detail = detail
    }

    /// The domain's text (``ErrorDomain/describe(_:)``), by default `code: reason`.
    public var description: String { Domain.describe(self) }
}

extension DomainError where Domain.Detail == NoErrorDetail {
    /// Creates an error with a stable `code`, a human `reason` (no secrets) and, when the fix
    /// is known exactly, a `suggestion`.
    public init(_ code: Code, _ reason: String, suggestion: String? = nil) {
        self.init(code, reason, suggestion: suggestion, detail: NoErrorDetail())
    }
}

extension DomainError: StatusCodedError where Domain: StatusErrorDomain {
    /// The platform status number of ``code`` (e.g. -25308), or `nil`.
    public var osStatus: Int32? { Domain.status(of: code)?.number }
    /// The platform's name for ``osStatus`` (e.g. `errSecInteractionNotAllowed`), or `nil`.
    public var statusName: String? { Domain.status(of: code)?.name }
}
