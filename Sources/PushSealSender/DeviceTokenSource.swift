/// Where `BatchSealer` finds the APNs device token of a line that gives none (`push-seal batch
/// --device-tokens`): a server store's tokens for one environment. Called once per batch chunk
/// (at most ``BatchSealer/revalidationLineCount`` lines) with the chunk's recipients, and alone
/// for a recipient the quick scan of a line did not see; from worker threads, so it must be safe
/// to call concurrently.
public protocol DeviceTokenSource: Sendable {
    /// The device token (hex digits of even length) of each recipient in `recipients` that has
    /// one; recipients without one are left out.
    /// - Throws: any error (every line of the chunk that needs a token then fails with it,
    ///   ``SenderError`` code `deviceTokenLookupFailed` unless it is a ``SenderError`` already).
    func deviceTokens(appID: String, recipients: [String]) throws -> [String: String]
}

/// The tokens of one batch chunk, looked up in bulk before its lines are sealed.
/// Sendable: every stored property is immutable and the source is Sendable.
struct ChunkDeviceTokens: Sendable {
    let source: any DeviceTokenSource
    let appID: String
    /// Recipients asked in bulk.
    let asked: Set<String>
    let found: [String: String]
    let failure: SenderError?

    init(source: any DeviceTokenSource, appID: String, recipients: [String]) {
        self.source = source
        self.appID = appID
        asked = Set(recipients)
        do {
            found = try source.deviceTokens(appID: appID, recipients: recipients)
            failure = nil
        } catch {
            found = [:]
            failure = Self.lookupError(error)
        }
    }

    /// The token of `recipient`.
    /// - Throws: ``SenderError`` `.noDeviceToken` (the store has none for it), `.deviceTokenLookupFailed`.
    func token(for recipient: String) throws -> String {
        if let failure { throw failure }
        if let t = found[recipient] { return t }
        if !asked.contains(recipient) {
            let one: [String: String]
            do { one = try source.deviceTokens(appID: appID, recipients: [recipient]) } catch { throw Self.lookupError(error) }
            if let t = one[recipient] { return t }
        }
        throw SenderError(.noDeviceToken, "recipient \(recipient) has no device token in the store for this environment (and the line gives no deviceToken)")
    }

    static func lookupError(_ error: any Error) -> SenderError {
        if let e = error as? SenderError { return e }
        return SenderError(.deviceTokenLookupFailed, "cannot look the chunk's device tokens up: \(BatchSealer.describe(error).message)")
    }
}
