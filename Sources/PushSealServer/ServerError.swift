public import PushSealSystem

/// An error of the composition layer itself (an upload body, a push-send file it cannot read, a
/// store without the part asked for). Errors of the modules below pass through unchanged and
/// typed (`SenderError`, `SealingKeyError`, `KeysError`, `RegistryError`, `APNsError`), so each
/// caller maps them as it already does (the CLIs to exit codes, the HTTP layer to 4xx/5xx).
public typealias ServerError = DomainError<ServerErrorDomain>

/// The domain of ``ServerError``: `name` is `server`.
public enum ServerErrorDomain: ErrorDomain { public static let name = "server" }

extension ErrorCode<ServerError> {
    /// The registration upload is not the iOS reference's body (`{"registration": record,
    /// "apnsDeviceToken", "apnsEnvironment", "pinnedSenderKeyIds"?}`) nor a bare record: not a
    /// JSON object, or a member of the wrong type. (A bad record inside is a `KeysError`.)
    public static var malformedUpload: Self { Self("malformedUpload") }
    /// The store holds no device tokens or no v2 registrations (a store of another kind).
    public static var unsupportedStore: Self { Self("unsupportedStore") }
    /// A line of push-send's output that is neither an outcome line nor an invalidation line.
    public static var unknownInput: Self { Self("unknownInput") }
    /// An outcome or invalidation line that is not a JSON object, or lacks its device token.
    public static var invalidOutcome: Self { Self("invalidOutcome") }
    /// The recipient has no device token for the environment (nothing to send to).
    public static var noDeviceToken: Self { Self("noDeviceToken") }
    /// A background thread (the outbox retention's) could not be created.
    public static var threadNotStarted: Self { Self("threadNotStarted") }
}

// Re-exported so that code importing only this module reads `code`, `reason` and `suggestion`.
@_exported public import struct PushSealSystem.DomainError
