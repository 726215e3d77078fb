public import PushSealJSON
import PushSealWire

/// Whether iOS would hand a payload to a Notification Service Extension.
///
/// iOS runs the extension only when `aps.mutable-content` is the integer 1 (not `true`, not
/// `"1"`, not `1.0`) and `aps.alert` is non-empty: a non-empty string, or an object with at
/// least one non-empty string member among `title`, `subtitle`, `body`, `loc-key`,
/// `title-loc-key`, `subtitle-loc-key`. Otherwise the system shows the alert as sent — or
/// nothing for a background push without an alert.
public enum Eligibility: Sendable, Hashable {
    /// The payload reaches the extension.
    case eligible
    /// The payload does not reach the extension. `reason` is a stable token naming the value
    /// found — `mutableContent:true`, `mutableContent:"1"`, `mutableContent:0`,
    /// `mutableContent:1.0`, `mutableContent:missing`, `noAlert`, `emptyAlert`, `apsMissing`,
    /// `apsNotObject`, `payloadNotObject` — and `detail` says it in words.
    case notEligible(reason: String, detail: String)

    /// Decides eligibility of an APNs payload.
    /// - Parameter payload: the APNs payload.
    public init(payload: JSONValue) {
        guard case .object(let root) = payload else {
            self = .notEligible(reason: "payloadNotObject", detail: "payload is a JSON \(payload.typeName), not an object")
            return
        }
        guard case .object(let aps)? = root["aps"] else {
            if let aps = root["aps"] {
                self = .notEligible(reason: "apsNotObject", detail: "aps is a JSON \(aps.typeName), not an object")
            } else {
                self = .notEligible(reason: "apsMissing", detail: "aps is missing")
            }
            return
        }
        guard Self.hasNonEmptyAlert(aps["alert"]) else {
            let background = ": a background push without an alert never reaches an extension"
            if let alert = aps["alert"] {
                self = .notEligible(reason: "emptyAlert", detail: "aps.alert is empty (\(Self.describe(alert)))" + background)
            } else {
                self = .notEligible(reason: "noAlert", detail: "aps.alert is missing" + background)
            }
            return
        }
        switch aps["mutable-content"] {
        case .integer(1)?:
            self = .eligible
        case let value?:
            self = .notEligible(reason: "mutableContent:\(Self.spell(value))",
                                detail: "mutable-content is \(Self.describe(value)), not the integer 1")
        case nil:
            self = .notEligible(reason: "mutableContent:missing", detail: "mutable-content is missing; the integer 1 is needed")
        }
    }

    /// The reason token when not eligible, `nil` when eligible.
    public var reason: String? {
        if case .notEligible(let reason, _) = self { return reason }
        return nil
    }

    /// A JSON-like spelling of a scalar for a reason token: `true`, `0`, `1.0`, `"1"` (strings
    /// cut at 16 characters), `null`, `array`, `object`.
    static func spell(_ value: JSONValue) -> String {
        switch value {
        case .null: "null"
        case .bool(let b): b ? "true" : "false"
        case .integer(let i): String(i)
        case .number(let d): String(d)
        case .string(let s): "\"" + (s.count > 16 ? String(s.prefix(16)) + "…" : s) + "\""
        case .array: "array"
        case .object: "object"
        }
    }

    /// True when `alert` would show something.
    static func hasNonEmptyAlert(_ alert: JSONValue?) -> Bool {
        switch alert {
        case .string(let s)?:
            return !s.isEmpty
        case .object(let o)?:
            return ["title", "subtitle", "body", "loc-key", "title-loc-key", "subtitle-loc-key"].contains {
                !(o[$0]?.stringValue ?? "").isEmpty
            }
        default:
            return false
        }
    }

    /// A short description of a JSON value and its type, for reasons: `true (boolean)`,
    /// `"1" (string)`, `0 (integer)`, `1.0 (number)`. Strings are cut at 32 characters.
    static func describe(_ value: JSONValue) -> String {
        switch value {
        case .null: "null"
        case .bool(let b): "\(b) (boolean)"
        case .integer(let i): "\(i) (integer)"
        case .number(let d): "\(d) (number)"
        case .string(let s): "\"\(s.count > 32 ? String(s.prefix(32)) + "…" : s)\" (string)"
        case .array(let a): "an array of \(a.count)"
        case .object(let o): "an object of \(o.count) members"
        }
    }
}
