public import PushSealJSON
import PushSealWire

extension UNNotificationContent {
    /// Builds the content iOS shows for an APNs payload (Apple, "Generating a remote
    /// notification"): `aps.alert` as a string (the body) or an object with `title`,
    /// `subtitle`, `body`; `aps.badge` (integer); `aps.sound` (a name, or an object with `name`,
    /// `critical`, `volume`); `aps.thread-id`; `aps.category`; `aps.interruption-level`; every other top-level member goes
    /// into `userInfo` in payload order. Members of the wrong JSON type are ignored, as iOS
    /// ignores them. Localization keys (`loc-key`, `title-loc-key`) are not resolved.
    /// - Parameter payload: the APNs payload; anything but an object gives empty content.
    public init(apnsPayload payload: JSONValue) {
        var f = ContentFields()
        guard case .object(let root) = payload else { self.init(fields: f); return }
        if case .object(let aps)? = root["aps"] {
            switch aps["alert"] {
            case .string(let body)?:
                f.body = body
            case .object(let alert)?:
                f.title = alert["title"]?.stringValue ?? ""
                f.subtitle = alert["subtitle"]?.stringValue ?? ""
                f.body = alert["body"]?.stringValue ?? ""
            default:
                break
            }
            if let badge = aps["badge"]?.integerValue, let b = Int(exactly: badge) { f.badge = b }
            switch aps["sound"] {
            case .string(let name)?:
                f.sound = UNNotificationSound(name: name)
            case .object(let sound)?:
                let volume: Double? = switch sound["volume"] {
                case .number(let v)?: v
                case .integer(let v)?: Double(v)
                default: nil
                }
                f.sound = UNNotificationSound(name: sound["name"]?.stringValue ?? "default",
                                              isCritical: sound["critical"]?.integerValue == 1, volume: volume)
            default:
                break
            }
            f.threadIdentifier = aps["thread-id"]?.stringValue ?? ""
            f.categoryIdentifier = aps["category"]?.stringValue ?? ""
            if let level = aps["interruption-level"]?.stringValue.flatMap(UNNotificationInterruptionLevel.init(rawValue:)) {
                f.interruptionLevel = level
            }
        }
        for member in root where member.key != "aps" {
            f.userInfo[member.key] = member.value
        }
        self.init(fields: f)
    }
}
