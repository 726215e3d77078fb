public import PushSealServerKeyProviders
public import PushSealSender

/// What a sealer is made from, as plain configuration (`push-seal`'s `--app-id`, `--format` and
/// payload options).
public struct SealerConfiguration: Sendable {
    /// The app's bundle identifier (the APNs topic), bound into the AAD.
    public var appID: String
    /// The payload options: fallback alert, APNs headers, clear `aps` fields, fit and padding.
    public var options: SealOptions
    /// v1, v2 or automatic (v2 for a recipient with a v2 registration, else v1).
    public var format: SealFormatPolicy

    /// A configuration with the default options and the automatic format.
    public init(appID: String, options: SealOptions = SealOptions(), format: SealFormatPolicy = .automatic) {
        self.appID = appID
        self.options = options
        self.format = format
    }
}

extension ServerStore {
    /// A sealer of both wire formats over this store: v2 (HPKE; auth mode when the app has a
    /// sender key) for a recipient with a v2 registration, v1 for one with a keyset (as the
    /// configuration's format allows). The sender key is read once, now.
    /// - Throws: `SenderError` (`.invalidOption` for a bad APNs option, `.emptyFallbackAlert`),
    ///   `SealingKeyError` or `KeysError` reading the app's sender key; the store's errors.
    public func sealer(_ configuration: SealerConfiguration) throws -> NotificationSealer {
        try sealerAndSenderKey(configuration).sealer
    }

    /// ``sealer(_:)`` and the key id of the sender key it seals auth mode with (`nil`: the app
    /// has none, or the format is version 1 only), so that a long-running sealer can notice a
    /// promotion or rotation (`push-seal batch` compares it with the store's primary once a second).
    /// - Throws: as ``sealer(_:)``.
    public func sealerAndSenderKey(_ configuration: SealerConfiguration) throws -> (sealer: NotificationSealer, senderKeyID: String?) {
        let keys = try RegistrationSealingKeys(keys: sealingKeys, appID: configuration.appID, policy: configuration.format)
        return (try NotificationSealer(appID: configuration.appID, keys: keys, options: configuration.options, registry: keys.registry), keys.senderKeyID)
    }
}
