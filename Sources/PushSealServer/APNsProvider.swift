public import PushSealAPNs
public import PushSealSender

/// An APNs provider connection as plain configuration: the token-based key (`.p8`, key id,
/// team id) and the client's settings (endpoint, connections, window, retries).
public struct APNsProviderConfiguration: Sendable {
    /// The `.p8` file (PKCS#8 P-256) from Apple's developer site.
    public var p8Path: String
    /// Its 10-character key id.
    public var keyID: String
    /// The 10-character team id.
    public var teamID: String
    /// Endpoint, pool, window and retry settings.
    public var client: APNsClient.Configuration

    /// A configuration of the key and the client settings.
    public init(p8Path: String, keyID: String, teamID: String, client: APNsClient.Configuration) {
        self.p8Path = p8Path
        self.keyID = keyID
        self.teamID = teamID
        self.client = client
    }

    /// The provider token cache of the key (one per key: share it between the key's clients).
    /// - Throws: `APNsError` `.badProviderKey` (unreadable, not a P-256 PKCS#8 key, a key or team
    ///   id that is not 10 characters of A-Z and 0-9).
    public func tokenCache() throws -> ProviderTokenCache {
        ProviderTokenCache(key: try ProviderKey(p8Path: p8Path, keyID: keyID, teamID: teamID))
    }
}

extension APNsNotification {
    /// The APNs request of a sealed notification for one device token: its payload and headers
    /// (`apns-push-type`, the topic with the push type's suffix, priority, expiration, collapse id).
    /// - Parameters:
    ///   - sealed: the sealer's output.
    ///   - deviceToken: the recipient's token (hex).
    ///   - apnsID: `apns-id` to send (a UUID), `nil` to let the client choose.
    public init(sealed: SealedNotification, deviceToken: String, apnsID: String? = nil) {
        let type = APNsPushType(rawValue: sealed.headers.pushType) ?? .alert
        self.init(deviceToken: deviceToken, payload: sealed.payload, pushType: type, topic: type.topic(forBundleID: sealed.headers.topic),
                  priority: sealed.headers.priority, expiration: sealed.headers.expiration, collapseID: sealed.headers.collapseID, apnsID: apnsID)
    }
}
