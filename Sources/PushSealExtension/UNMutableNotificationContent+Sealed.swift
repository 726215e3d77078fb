import PushSealJSON
import PushSealWire

extension UNMutableNotificationContent {
    /// The `userInfo` key under which a decrypted notification carries its sealed `data`.
    public static let sealedDataUserInfoKey = "pushseal"

    /// The `userInfo` key under which a decrypted notification carries its sealed `id`
    /// (FORMAT.md §5.1): what the app's retract handler looks the notification up by.
    public static let sealedIDUserInfoKey = "pushseal-id"

    /// Makes `userInfo` what the app may trust after a successful open (security review F3):
    /// exactly the delivered `aps` (when the payload had one), the sealed `data` under
    /// ``sealedDataUserInfoKey`` (an empty object when nothing was sealed there) and the sealed
    /// `id` under ``sealedIDUserInfoKey`` (when it has one). Every other top-level member of the
    /// payload (the envelope fields, and anything added in transit) is dropped, so nothing
    /// unauthenticated can pass for sealed data, and no sealed member can overwrite an envelope field.
    /// - Parameters:
    ///   - data: the plaintext's `data`, or `nil`.
    ///   - id: the plaintext's `id`, or `nil`.
    ///   - payload: the APNs payload as delivered.
    mutating func setSealedUserInfo(_ data: JSONObject?, id: String?, payload: JSONValue) {
        var info = JSONObject()
        if case .object(let root) = payload, let aps = root["aps"] { info["aps"] = aps }
        info[Self.sealedDataUserInfoKey] = .object(data ?? JSONObject())
        if let id { info[Self.sealedIDUserInfoKey] = .string(id) }
        userInfo = info
    }

    /// Sets thread, category, interruption level and sound from the sealed `aps` when the
    /// plaintext has one (an absent member means none: no thread, no category, `active`, no
    /// sound). Without one, the delivered (unauthenticated) values are kept except those that
    /// could do harm: the category (its actions) is dropped, `time-sensitive` or `critical` is
    /// capped at `active`, and a critical sound becomes the default sound. So a sealed
    /// notification never raises a critical alert unless its sealed part asks for it.
    /// - Parameter sealed: the plaintext's `aps`, or `nil`.
    mutating func applyPresentation(_ sealed: PresentationFields?) {
        guard let sealed else {
            categoryIdentifier = ""
            if interruptionLevel == .critical || interruptionLevel == .timeSensitive { interruptionLevel = .active }
            if sound?.isCritical == true { sound = .default }
            return
        }
        threadIdentifier = sealed.threadID ?? ""
        categoryIdentifier = sealed.category ?? ""
        interruptionLevel = sealed.interruptionLevel.flatMap(UNNotificationInterruptionLevel.init(rawValue:)) ?? .active
        switch sealed.sound {
        case nil: sound = nil
        case .named(let name)?: sound = UNNotificationSound(name: name)
        case .critical(let name, let volume)?: sound = UNNotificationSound(name: name, isCritical: true, volume: volume)
        }
    }
}
