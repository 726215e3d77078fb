public import PushSealJSON
import PushSealWire

extension UNNotificationContent {
    /// Builds the content iOS shows for an APNs payload (Apple, "Generating a remote
    /// notification"): `aps.alert` as a string (the body) or an object with `title`,
    /// `subtitle`, `body`; `aps.badge` (integer); `aps.sound` (a name, or an object with `name`,
    /// `critical`, `volume`); `aps.thread-id`; `aps.category`; `aps.interruption-level`; every other top-level member goes
    /// into `userInfo` in payload order; `aps.relevance-score`, `aps.target-content-id`,
    /// `aps.filter-criteria`. Members of the wrong JSON type are ignored, as iOS ignores them.
    /// A localized alert (`title-loc-key`, `subtitle-loc-key`, `loc-key`, with their `-args`)
    /// is looked up in `strings` and formatted (``LocalizableStrings/text(key:args:)``): a key
    /// wins over the plain member beside it; a key the table lacks shows as the key itself, as
    /// on iOS, so a localized alert without its table names its keys instead of showing blank.
    /// - Parameters:
    ///   - payload: the APNs payload; anything but an object gives empty content.
    ///   - strings: the app's `Localizable.strings` for the device's language (default: none).
    public init(apnsPayload payload: JSONValue, strings: LocalizableStrings = LocalizableStrings()) {
        var f = ContentFields()
        guard case .object(let root) = payload else { self.init(fields: f); return }
        if case .object(let aps)? = root["aps"] {
            switch aps["alert"] {
            case .string(let body)?:
                f.body = body
            case .object(let alert)?:
                func text(_ plain: String, _ key: String) -> String {
                    guard let k = alert[key]?.stringValue, !k.isEmpty else { return alert[plain]?.stringValue ?? "" }
                    let args: [String] = if case .array(let a)? = alert[key.replacing("-key", with: "-args")] {
                        a.map { $0.stringValue ?? "" }
                    } else {
                        []
                    }
                    return strings.text(key: k, args: args)
                }
                f.title = text("title", "title-loc-key")
                f.subtitle = text("subtitle", "subtitle-loc-key")
                f.body = text("body", "loc-key")
                if f.hasNoReadableText, let key = ["loc-key", "title-loc-key", "subtitle-loc-key"].lazy.compactMap({ alert[$0]?.stringValue }).first(where: { !$0.isEmpty }) {
                    // A table's empty (or white-space) string: never a blank alert, name the key.
                    f.body = key
                }
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
            switch aps["relevance-score"] {
            case .number(let r)?: f.relevanceScore = r
            case .integer(let r)?: f.relevanceScore = Double(r)
            default: break
            }
            f.targetContentIdentifier = aps["target-content-id"]?.stringValue
            f.filterCriteria = aps["filter-criteria"]?.stringValue
        }
        for member in root where member.key != "aps" {
            f.userInfo[member.key] = member.value
        }
        self.init(fields: f)
    }
}
