// PushSealServer is the one library a server needs (Examples/server depends on it alone): the
// modules whose types its API takes and returns are re-exported, so `import PushSealServer`
// names `SealRequest`, `PushNotification`, `SealOptions` (PushSealSender, PushSealWire),
// `DeviceTokenStore`, `DeviceRegistration` (PushSealServerKeys, PushSealKeyRecords), `SealFormatPolicy`
// (PushSealServerKeyProviders), `APNsClient`, `APNsNotification`, `APNsOutcome` (PushSealAPNs) and
// `JSONValue` (PushSealJSON, the notification's `data`).
@_exported public import PushSealAPNs
@_exported public import PushSealJSON
@_exported public import PushSealServerKeyProviders
@_exported public import PushSealKeyRecords
@_exported public import PushSealServerKeys
@_exported public import PushSealSender
@_exported public import PushSealWire
