import PushSealJSON
import PushSealWire

extension NotificationSealer {
    /// The clear part of a batch line's payload: the sealer's fallback alert, `aps` fields and
    /// collapse id, each replaced by what the line gives (`aps.alert` replaces the whole
    /// fallback alert). Checked by the rules of the command-line options (``ClearPart``), and
    /// `thread-id`, `category`, `interruption-level` and `sound` (a name or
    /// `{"critical", "name", "volume"}`) by the rules of the sealed `aps`
    /// (`PushNotification.sendingPresentation`); `null` keeps the default.
    /// - Throws: `SenderError` `.invalidNotification` naming the member (a wrong type, an
    ///   unknown member, a value the options would refuse), `.emptyFallbackAlert`.
    func clearPart(overriding fields: BatchLineFields) throws -> ClearPart {
        if fields.usesDefaultClearPart { return clear }
        var fallback = clear.fallback
        var aps = clear.aps
        var collapseID = clear.collapseID
        if let c = fields.collapseID {
            guard case .string(let s) = c else { throw SenderError(.invalidNotification, "collapseId must be a string, got \(c.typeName)") }
            collapseID = s
        }
        if let value = fields.aps {
            guard case .object(let o) = value else { throw SenderError(.invalidNotification, "aps must be an object, got \(value.typeName)") }
            var presentation = JSONObject()
            for m in o {
                if case .null = m.value { continue }
                switch m.key {
                case "alert": fallback = try Self.lineAlert(m.value)
                case "badge":
                    guard case .integer(let b) = m.value else { throw Self.wrongType("aps.badge", "an integer", m.value) }
                    aps.badge = b
                case "relevance-score":
                    switch m.value {
                    case .integer(let i): aps.relevanceScore = Double(i)
                    case .number(let d): aps.relevanceScore = d
                    default: throw Self.wrongType("aps.relevance-score", "a number", m.value)
                    }
                case "target-content-id": aps.targetContentID = try Self.lineString(m.value, "aps.target-content-id")
                case "filter-criteria": aps.filterCriteria = try Self.lineString(m.value, "aps.filter-criteria")
                case "thread-id", "category", "interruption-level", "sound": presentation[m.key] = m.value
                case "mutable-content":
                    throw SenderError(.invalidNotification, "aps.mutable-content is always 1 (push-seal sets it): leave it out")
                default:
                    throw SenderError(.invalidNotification, "unknown member aps.\(PushNotification.excerpt(m.key)) (known: \(BatchLineFields.apsMemberNames.joined(separator: ", ")))")
                }
            }
            if presentation.count > 0 {
                let p = try SenderError.fromNotificationRules { try PushNotification.sendingPresentation(.object(presentation)) }
                if presentation["thread-id"] != nil { aps.threadID = p.threadID }
                if presentation["category"] != nil { aps.category = p.category }
                if presentation["interruption-level"] != nil { aps.interruptionLevel = p.interruptionLevel }
                if presentation["sound"] != nil { aps.soundValue = p.sound }
            }
        }
        do {
            return try ClearPart(fallback: fallback, aps: aps, collapseID: collapseID)
        } catch let e as SenderError where e.code == .invalidOption {
            throw SenderError(.invalidNotification, "the line's \(e.reason)")
        }
    }

    /// A line's `aps.alert`: an object of ``BatchLineFields/alertMemberNames`` (strings, the
    /// `-args` arrays of strings).
    static func lineAlert(_ value: JSONValue) throws -> FallbackAlert {
        guard case .object(let o) = value else { throw wrongType("aps.alert", "an object", value) }
        var a = FallbackAlert(title: "", body: "")
        for m in o {
            if case .null = m.value { continue }
            let name = "aps.alert.\(m.key)"
            switch m.key {
            case "title": a.title = try lineString(m.value, name)
            case "body": a.body = try lineString(m.value, name)
            case "subtitle": a.subtitle = try lineString(m.value, name)
            case "title-loc-key": a.titleLocKey = try lineString(m.value, name)
            case "subtitle-loc-key": a.subtitleLocKey = try lineString(m.value, name)
            case "loc-key": a.locKey = try lineString(m.value, name)
            case "title-loc-args": a.titleLocArgs = try lineStrings(m.value, name)
            case "subtitle-loc-args": a.subtitleLocArgs = try lineStrings(m.value, name)
            case "loc-args": a.locArgs = try lineStrings(m.value, name)
            default:
                throw SenderError(.invalidNotification, "unknown member aps.alert.\(PushNotification.excerpt(m.key)) (known: \(BatchLineFields.alertMemberNames.joined(separator: ", ")))")
            }
        }
        return a
    }

    static func wrongType(_ name: String, _ expected: String, _ got: JSONValue) -> SenderError {
        SenderError(.invalidNotification, "\(name) must be \(expected), got \(got.typeName)")
    }

    static func lineString(_ v: JSONValue, _ name: String) throws -> String {
        guard case .string(let s) = v else { throw wrongType(name, "a string", v) }
        return s
    }

    static func lineStrings(_ v: JSONValue, _ name: String) throws -> [String] {
        guard case .array(let a) = v else { throw wrongType(name, "an array of strings", v) }
        return try a.map { e in
            guard case .string(let s) = e else { throw wrongType(name, "an array of strings", v) }
            return s
        }
    }
}
