/// Where several instances keep one provider token per (team, key) (issue 23: "minted by one
/// instance under a database lease, read by the others, never more than once per 20 minutes
/// across the fleet"). A ``ProviderTokenCache`` made with one asks it instead of minting: when
/// its token is due for renewal, and after APNs rejected a token.
public protocol SharedProviderTokens: Sendable {
    /// The fleet's token for `key`: the stored one while it is younger than
    /// `refreshAfterSeconds` and not of `rejectedGeneration`; else one made by `mint` (given the
    /// `iat`, seconds since 1970) and stored, unless the fleet minted less than 20 minutes ago
    /// (then the stored one, or `nil` when it is the rejected one).
    /// - Returns: the JWT, its `iat`, its generation (the fleet's count), or `nil`.
    /// - Throws: the store's errors, `mint`'s errors.
    func token(key: ProviderKey, refreshAfterSeconds: Int64, rejectedGeneration: Int?,
               mint: (Int64) throws -> String) throws -> (jwt: String, issuedAt: Int64, generation: Int)?
}
