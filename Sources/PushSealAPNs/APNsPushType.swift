/// The `apns-push-type` header (Apple, "Sending notification requests to APNs"): what the
/// notification does, the topic suffix APNs expects, and its payload limit.
public enum APNsPushType: String, Sendable, Hashable, CaseIterable {
    /// A visible alert (a sealed PushSeal notification is one).
    case alert
    /// A silent background update (`content-available`); priority must be 5.
    case background
    /// A location query (topic `<bundle>.location-query`).
    case location
    /// A VoIP call (topic `<bundle>.voip`; payload up to 5120 bytes).
    case voip
    /// A watchOS complication update (topic `<bundle>.complication`).
    case complication
    /// A File Provider change (topic `<bundle>.pushkit.fileprovider`).
    case fileprovider
    /// A device-management wake-up.
    case mdm
    /// A Live Activity update (topic `<bundle>.push-type.liveactivity`).
    case liveactivity
    /// A Push to Talk message (topic `<bundle>.voip-ptt`).
    case pushtotalk
    /// A widget reload (topic `<bundle>.push-type.widgets`).
    case widgets
    /// A control reload (topic `<bundle>.push-type.controls`).
    case controls

    /// What `apns-topic` must end with for this push type (empty: the bundle id alone).
    public var topicSuffix: String {
        switch self {
        case .alert, .background, .mdm: ""
        case .location: ".location-query"
        case .voip: ".voip"
        case .complication: ".complication"
        case .fileprovider: ".pushkit.fileprovider"
        case .liveactivity: ".push-type.liveactivity"
        case .pushtotalk: ".voip-ptt"
        case .widgets: ".push-type.widgets"
        case .controls: ".push-type.controls"
        }
    }

    /// The largest payload APNs accepts for this type, in bytes: 5120 for VoIP, else 4096.
    public var maxPayloadByteCount: Int { self == .voip ? 5120 : 4096 }

    /// The topic for a bundle id: the bundle id with ``topicSuffix`` appended unless it ends
    /// with it already.
    public func topic(forBundleID bundleID: String) -> String {
        bundleID.hasSuffix(topicSuffix) ? bundleID : bundleID + topicSuffix
    }
}
