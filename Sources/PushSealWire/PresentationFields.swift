public import PushSealJSON

/// The sealed presentation fields: the plaintext member `aps` (FORMAT.md §5, security review
/// F3), an object with APNs' own names `thread-id`, `category`, `interruption-level`, `sound`.
/// When a plaintext has one, the receiver takes these from it alone (an absent member means
/// none: no thread, no category, `active`, no sound) instead of from the clear `aps`, which
/// the tag does not cover. Unknown members are ignored, as elsewhere in §5.
public struct PresentationFields: Sendable, Hashable {
    /// A sealed sound.
    public enum Sound: Sendable, Hashable {
        /// A sound file name in the app bundle, or `default` (the string form, or an object
        /// with `critical` 0 or absent).
        case named(String)
        /// A critical alert sound (`{"critical": 1, "name"?, "volume"?}`): `name` (default
        /// `default`) and `volume` 0…1 (default 1). Needs Apple's critical alerts entitlement.
        case critical(name: String, volume: Double)
    }

    /// The interruption levels iOS knows: `passive`, `active`, `time-sensitive`, `critical`.
    public static let interruptionLevels = ["passive", "active", "time-sensitive", "critical"]

    /// `thread-id`: groups notifications; `nil` for none.
    public var threadID: String?
    /// `category`: the notification category (its actions); `nil` for none.
    public var category: String?
    /// `interruption-level`: one of ``interruptionLevels``; `nil` means `active`.
    public var interruptionLevel: String?
    /// `sound`; `nil` for none.
    public var sound: Sound?

    /// Creates sealed presentation fields.
    public init(threadID: String? = nil, category: String? = nil, interruptionLevel: String? = nil, sound: Sound? = nil) {
        self.threadID = threadID
        self.category = category
        self.interruptionLevel = interruptionLevel
        self.sound = sound
    }

    /// Reads the plaintext's `aps` by the receiver's rules: strings for `thread-id`,
    /// `category`; `interruption-level` one of ``interruptionLevels``; `sound` a string or an
    /// object with `name` (string), `critical` (integer 0 or 1), `volume` (number 0…1).
    /// `null` means absent. Error reasons name the member, never quote its value (F15).
    /// - Throws: `FormatError` `.invalidPlaintext` (`aps.<member>: <problem>`).
    public init(json value: JSONValue) throws {
        guard case .object(let o) = value else { throw PushNotification.wrongType("aps", "object", value) }
        func string(_ name: String) throws -> String? {
            guard let v = try PushNotification.optional(o, name, path: "aps.") else { return nil }
            guard case .string(let s) = v else { throw PushNotification.wrongType("aps.\(name)", "string", v) }
            return s
        }
        threadID = try string("thread-id")
        category = try string("category")
        interruptionLevel = try string("interruption-level")
        if let l = interruptionLevel, !Self.interruptionLevels.contains(l) {
            throw FormatError(.invalidPlaintext, "aps.interruption-level: expected passive, active, time-sensitive or critical")
        }
        switch try PushNotification.optional(o, "sound", path: "aps.") {
        case nil:
            sound = nil
        case .string(let name)?:
            sound = .named(name)
        case .object(let so)?:
            var name = "default"
            if let n = try PushNotification.optional(so, "name", path: "aps.sound.") {
                guard case .string(let s) = n else { throw PushNotification.wrongType("aps.sound.name", "string", n) }
                name = s
            }
            var critical: Int64 = 0
            if let c = try PushNotification.optional(so, "critical", path: "aps.sound.") {
                guard case .integer(let i) = c, i == 0 || i == 1 else {
                    throw FormatError(.invalidPlaintext, "aps.sound.critical: expected the integer 0 or 1")
                }
                critical = i
            }
            var volume = 1.0
            if let v = try PushNotification.optional(so, "volume", path: "aps.sound.") {
                let x: Double? = switch v {
                case .integer(let i): Double(i)
                case .number(let d): d
                default: nil
                }
                guard let x, x >= 0, x <= 1 else { throw FormatError(.invalidPlaintext, "aps.sound.volume: expected a number from 0 to 1") }
                volume = x
            }
            sound = critical == 1 ? .critical(name: name, volume: volume) : .named(name)
        case let other?:
            throw PushNotification.wrongType("aps.sound", "string or object", other)
        }
    }

    /// The fields as a JSON object in the order thread-id, category, interruption-level,
    /// sound (absent ones omitted; a critical sound as `{"critical":1,"name":…,"volume":…}`).
    public func jsonValue() -> JSONValue {
        var o = JSONObject()
        if let threadID { o["thread-id"] = .string(threadID) }
        if let category { o["category"] = .string(category) }
        if let interruptionLevel { o["interruption-level"] = .string(interruptionLevel) }
        switch sound {
        case .named(let name)?: o["sound"] = .string(name)
        case .critical(let name, let volume)?:
            o["sound"] = .object(["critical": .integer(1), "name": .string(name), "volume": .number(volume)])
        case nil: break
        }
        return .object(o)
    }
}
