import PushSealJSON
import PushSealSystem
import PushSealWire

/// What a `push-seal batch` line may set besides `recipient` and `notification`: a device
/// token passed through to its output line (for push-send), its own clear `aps` members
/// (the fallback alert and the pass-through fields) and its own `apns-collapse-id`. Whatever a
/// line leaves out (or gives as `null`) comes from the sealer's options, the command line.
struct BatchLineFields: Sendable {
    /// The line members besides `recipient` and `notification`.
    static let memberNames = ["deviceToken", "aps", "collapseId"]
    /// The members of a line's `aps`, in APNs' names.
    static let apsMemberNames = ["alert", "badge", "sound", "thread-id", "category", "interruption-level", "relevance-score",
                                 "target-content-id", "filter-criteria"]
    /// The members of a line's `aps.alert`.
    static let alertMemberNames = ["title", "subtitle", "body", "title-loc-key", "title-loc-args", "subtitle-loc-key",
                                   "subtitle-loc-args", "loc-key", "loc-args"]

    /// Longest `deviceToken`, in hex digits (push-send's and the key stores' limit).
    static let maxDeviceTokenLength = 256

    /// `deviceToken` as given (hex digits of even length), `nil` when absent.
    var deviceToken: String?
    /// `aps`, `nil` when absent or `null`.
    var aps: JSONValue?
    /// `collapseId`, `nil` when absent or `null`.
    var collapseID: JSONValue?

    /// `true` when the line sets nothing of its own in the payload (the sealer's clear part serves).
    var usesDefaultClearPart: Bool { aps == nil && collapseID == nil }

    /// Takes one line member; returns `false` for a name that is not one of ``memberNames``.
    /// - Throws: `SenderError` `.invalidNotification` for a device token that is not a string
    ///   of hex digits of even length.
    mutating func take(_ name: String, _ value: JSONValue) throws -> Bool {
        switch name {
        case "deviceToken":
            guard case .string(let t) = value else {
                if case .null = value { return true }
                throw SenderError(.invalidNotification, "deviceToken must be a string of hex digits, got \(value.typeName)")
            }
            guard !t.utf8.isEmpty, t.utf8.count % 2 == 0, t.utf8.allSatisfy({ Hex.value(ofDigit: $0) != nil }) else {
                throw SenderError(.invalidNotification, "deviceToken must be hex digits of even length, got \(t.utf8.count) characters")
            }
            // push-send refuses longer ones (APNsNotification.maxDeviceTokenLength): refused here first.
            guard t.utf8.count <= Self.maxDeviceTokenLength else {
                throw SenderError(.invalidNotification, "deviceToken is \(t.utf8.count) characters, over the \(Self.maxDeviceTokenLength) allowed")
            }
            deviceToken = t
        case "aps":
            if case .null = value { return true }
            aps = value
        case "collapseId":
            if case .null = value { return true }
            collapseID = value
        default:
            return false
        }
        return true
    }
}
