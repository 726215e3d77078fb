import PushSealJSON
import PushSealWire

/// The clear part of a payload: `aps` with the fallback alert, `mutable-content` and the
/// pass-through fields, written once as the bytes before `encrypted_data`, and the
/// `apns-collapse-id` that goes with it. The sealer builds one from its options; a batch line
/// that sets its own fields gets its own (``NotificationSealer/clearPart(overriding:)``),
/// checked by exactly the same rules.
///
/// The members live in one immutable box, so the copy every seal makes (the sealer's own clear
/// part, or a line's) is one retain, not one per string of the alert and `aps` fields.
public struct ClearPart: Sendable {
    /// The fallback alert.
    public var fallback: FallbackAlert { storage.fallback }
    /// The pass-through `aps` fields.
    public var aps: APSFields { storage.aps }
    /// `apns-collapse-id`; `nil` for none.
    public var collapseID: String? { storage.collapseID }
    /// `{"aps":{…},"encrypted_data":"`.
    var prefix: [UInt8] { storage.prefix }

    /// Immutable after `init` (every member a `let` of a Sendable type), so sharing it between
    /// threads is safe.
    private final class Storage: Sendable {
        let fallback: FallbackAlert
        let aps: APSFields
        let collapseID: String?
        let prefix: [UInt8]
        init(fallback: FallbackAlert, aps: APSFields, collapseID: String?, prefix: [UInt8]) {
            self.fallback = fallback
            self.aps = aps
            self.collapseID = collapseID
            self.prefix = prefix
        }
    }
    private let storage: Storage

    /// Checks the fields and writes the prefix.
    /// - Throws: `SenderError` `.emptyFallbackAlert` (no title or `title-loc-key`, or no body
    ///   or `loc-key`), `.invalidOption` (a collapse id not 1 to 64 bytes, a negative badge, an
    ///   unknown interruption level, a relevance score outside 0...1, an empty string field, a
    ///   critical sound's volume outside 0...1, loc-args without their loc-key).
    public init(fallback: FallbackAlert, aps: APSFields, collapseID: String?) throws {
        let f = fallback
        guard !f.title.isEmpty || !(f.titleLocKey ?? "").isEmpty, !f.body.isEmpty || !(f.locKey ?? "").isEmpty else {
            throw SenderError(.emptyFallbackAlert, "the fallback alert needs a non-empty title and body (or title-loc-key and loc-key), or iOS never runs the extension")
        }
        for (name, value) in [("subtitle", f.subtitle), ("title-loc-key", f.titleLocKey), ("subtitle-loc-key", f.subtitleLocKey), ("loc-key", f.locKey)] {
            if let value, value.isEmpty { throw SenderError(.invalidOption, "the fallback \(name) must not be empty") }
        }
        for (name, args, key) in [("title-loc-args", f.titleLocArgs, f.titleLocKey), ("subtitle-loc-args", f.subtitleLocArgs, f.subtitleLocKey),
                                  ("loc-args", f.locArgs, f.locKey)] where args != nil && key == nil {
            throw SenderError(.invalidOption, "the fallback \(name) needs its \(name.replacing("-args", with: "-key"))")
        }
        if let c = collapseID {
            guard !c.isEmpty, c.utf8.count <= SealOptions.maxCollapseIDByteCount else {
                throw SenderError(.invalidOption, "apns-collapse-id must be 1 to \(SealOptions.maxCollapseIDByteCount) bytes, got \(c.utf8.count)")
            }
        }
        if let b = aps.badge, b < 0 { throw SenderError(.invalidOption, "badge must be 0 or more, got \(b)") }
        if let l = aps.interruptionLevel, !APSFields.interruptionLevels.contains(l) {
            throw SenderError(.invalidOption, "interruption-level must be one of \(APSFields.interruptionLevels.joined(separator: ", ")), got '\(l)'")
        }
        if let r = aps.relevanceScore, !(r >= 0 && r <= 1) {
            throw SenderError(.invalidOption, "relevance-score must be between 0 and 1, got \(r)")
        }
        var soundName: String?
        switch aps.soundValue {
        case .named(let name)?: soundName = name
        case .critical(let name, let volume)?:
            soundName = name
            guard volume >= 0 && volume <= 1 else { throw SenderError(.invalidOption, "sound.volume must be between 0 and 1, got \(volume)") }
        case nil: break
        }
        for (name, value) in [("sound", soundName), ("thread-id", aps.threadID), ("category", aps.category),
                              ("target-content-id", aps.targetContentID), ("filter-criteria", aps.filterCriteria)] {
            if let value, value.isEmpty { throw SenderError(.invalidOption, "\(name) must not be empty") }
        }
        var w = JSONWriter(reservingCapacity: 256)
        w.beginObject()
        w.key(static: "aps")
        w.beginObject()
        w.key(static: "alert")
        w.beginObject()
        func text(_ name: StaticString, _ value: String?) {
            guard let value else { return }
            w.key(static: name)
            w.string(value)
        }
        func args(_ name: StaticString, _ values: [String]?) {
            guard let values else { return }
            w.key(static: name)
            w.beginArray()
            for v in values { w.string(v) }
            w.endArray()
        }
        text("title", f.title.isEmpty ? nil : f.title)
        text("body", f.body.isEmpty ? nil : f.body)
        text("subtitle", f.subtitle)
        text("title-loc-key", f.titleLocKey)
        args("title-loc-args", f.titleLocArgs)
        text("subtitle-loc-key", f.subtitleLocKey)
        args("subtitle-loc-args", f.subtitleLocArgs)
        text("loc-key", f.locKey)
        args("loc-args", f.locArgs)
        w.endObject()
        w.key(static: "mutable-content")
        w.integer(1)
        do {
            switch aps.soundValue {
            case .named(let s)?: text("sound", s)
            case .critical(let name, let volume)?:
                w.key(static: "sound")
                w.beginObject()
                w.key(static: "critical"); w.integer(1)
                text("name", name)
                w.key(static: "volume"); try w.number(volume)
                w.endObject()
            case nil: break
            }
            if let b = aps.badge { w.key(static: "badge"); w.integer(b) }
            text("thread-id", aps.threadID)
            text("category", aps.category)
            text("interruption-level", aps.interruptionLevel)
            if let r = aps.relevanceScore { w.key(static: "relevance-score"); try w.number(r) }
        } catch let e as JSONError {
            throw SenderError(.invalidOption, "JSON has no NaN or infinity (\(e.reason))")
        }
        text("target-content-id", aps.targetContentID)
        text("filter-criteria", aps.filterCriteria)
        w.endObject()
        // The box's string is opened here and closed by the payload's tail (after the base64).
        w.key(static: "encrypted_data")
        w.raw("\"")
        self.storage = Storage(fallback: fallback, aps: aps, collapseID: collapseID, prefix: w.bytes)
    }

    /// The clear part of a retract (FORMAT.md §5.1), a background push: `{"aps":{"content-available":1},"encrypted_data":"`
    /// — no alert, no `mutable-content`, no sound, badge or other field, no collapse id.
    /// `fallback` is empty: a background push shows nothing.
    public static let background = ClearPart(backgroundPrefix: Array("{\"aps\":{\"content-available\":1},\"encrypted_data\":\"".utf8))

    private init(backgroundPrefix: [UInt8]) {
        self.storage = Storage(fallback: FallbackAlert(title: "", body: ""), aps: APSFields(), collapseID: nil, prefix: backgroundPrefix)
    }

    /// The error for a payload whose clear part (`aps` with the fallback alert, the sealed
    /// fields' names, `key_id`, an empty box) is over the budget by itself: no sealed content
    /// fits, and no fitting helps. Names the largest clear member.
    func tooLarge(_ clearByteCount: Int) -> SenderError {
        let f = fallback
        let members: [(name: String, value: String?)] = [
            ("the fallback title", f.title), ("the fallback body", f.body), ("the fallback subtitle", f.subtitle),
            ("the fallback title-loc-key", f.titleLocKey), ("the fallback loc-key", f.locKey),
            ("the fallback loc-args", f.locArgs?.joined()), ("the fallback title-loc-args", f.titleLocArgs?.joined()),
            ("aps.sound", aps.sound), ("aps.thread-id", aps.threadID), ("aps.category", aps.category),
            ("aps.target-content-id", aps.targetContentID), ("aps.filter-criteria", aps.filterCriteria),
        ]
        var reason = "the clear part of the payload (aps with the fallback alert, key_id and the sealed fields) is \(clearByteCount) bytes "
            + "before any sealed content, APNs allows \(SealOptions.maxPayloadByteCount)"
        if let largest = members.compactMap({ m in m.value.map { (name: m.name, byteCount: $0.utf8.count) } }).max(by: { $0.byteCount < $1.byteCount }) {
            reason += ": \(largest.name) alone is \(largest.byteCount) bytes"
        }
        return SenderError(.clearPartTooLarge, reason, payloadByteCount: clearByteCount)
    }
}
