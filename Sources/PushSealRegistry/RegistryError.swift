public import PushSealSystem
import PushSealCrypto

/// An error of the PostgreSQL registry: the database, its schema, or the key-encryption key.
///
/// Compare by ``code``. Reasons name the database (never a password), SQLSTATEs, app ids,
/// recipients and key ids — never key bytes or the KEK.
public typealias RegistryError = DomainError<RegistryErrorDomain>

/// The domain of ``RegistryError``: `name` is `registry`; `Detail`: The SQLSTATE of a failed statement (``RegistryError/sqlState``).
public enum RegistryErrorDomain: ErrorDomain { public static let name = "registry"; public typealias Detail = String? }

extension ErrorCode<RegistryError> {
    /// The database cannot be reached (refused, no such socket, authentication failed,
    /// shutting down) and did not come back within the reconnect wait. CLIs exit 69
    /// (EX_UNAVAILABLE).
    public static var unavailable: Self { Self("unavailable") }

    /// A statement failed; ``RegistryError/sqlState`` holds its SQLSTATE (e.g. `42501`).
    public static var query: Self { Self("query") }

    /// The connection was lost while a transaction was committing: it may or may not have
    /// been applied (run the command again; every lifecycle step is idempotent).
    public static var outcomeUnknown: Self { Self("outcomeUnknown") }

    /// The database has no PushSeal schema or an older one: run `push-keys registry migrate`.
    public static var schemaTooOld: Self { Self("schemaTooOld") }

    /// The database's schema is newer than this build knows: refused (upgrade PushSeal).
    public static var schemaTooNew: Self { Self("schemaTooNew") }

    /// The key-encryption key file is missing, a link, not 0600, not the caller's, or not 32
    /// bytes (raw, or 64 hex digits).
    public static var kekFile: Self { Self("kekFile") }

    /// The key-encryption key is not the one the registry's keys are wrapped under.
    public static var wrongKEK: Self { Self("wrongKEK") }

    /// No key-encryption key was given where key bytes are read or written.
    public static var kekRequired: Self { Self("kekRequired") }

    /// A row that does not decode (a wrapped key of the wrong size, an unknown status).
    public static var corrupt: Self { Self("corrupt") }

    /// A connection string that libpq cannot parse.
    public static var invalidConnectionString: Self { Self("invalidConnectionString") }
}

extension RegistryError {
    /// The SQLSTATE of a failed statement (five characters, e.g. `23505`), or `nil`.
    public var sqlState: String? { detail }

    /// Creates an error (`reason` without secrets) with the failed statement's `sqlState`.
    public init(_ code: Code, _ reason: String, sqlState: String? = nil) {
        self.init(code, reason, detail: sqlState)
    }
}

// Re-exported so that code importing only this module reads the error's `code`, `reason` and
// `suggestion` (their declarations live in PushSealSystem; MemberImportVisibility).
@_exported public import struct PushSealSystem.DomainError
