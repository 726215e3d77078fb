/// The members of the plaintext object (FORMAT.md §5), in the table's order: the one list of the
/// plaintext schema.
///
/// Every codec of ``PushNotification`` switches over it exhaustively — the receiving decoder
/// (`init(json:)`), the sending decoder (`init(sendingJSON:)`), the scanner (`scan`), the encoder
/// (``PlaintextEncoder``), ``PushNotification/validate(checkingTimes:)``, `==` and the size estimate —
/// so a new member does not compile until each of them handles it. Each such `switch` carries
/// the comment `schema-switch:` naming its codec; `scripts/schema-probe.sh` compiles the module
/// with the test-only member `schemaProbe` (`-D PUSHSEAL_SCHEMA_PROBE`) and checks that every one
/// of them fails (run by `SchemaProbeTests` when `PUSHSEAL_SCHEMA_PROBE_CHECK=1`).
public enum NotificationMember: String, CaseIterable, Sendable {
    /// `title`: string, the alert title.
    case title
    /// `subtitle`: string, the alert subtitle.
    case subtitle
    /// `body`: string, the alert body.
    case body
    /// `media`: object, an attachment (`url`, `type`, `sha256`, `key`).
    case media
    /// `localizations`: object of locale tag → `{title?, subtitle?, body?}`.
    case localizations
    /// `data`: object for the app (`userInfo["pushseal"]`).
    case data
    /// `aps`: object, the sealed presentation fields.
    case aps
    /// `iat`: integer, issued at (seconds since 1970 UTC).
    case iat
    /// `exp`: integer, expires at (seconds since 1970 UTC).
    case exp
    /// `id`: string, the sender's notification id.
    case id
    /// `kind`: string, what the receiver does with the message (``MessageKind``; absent is `display`).
    case kind
    /// `ids`: array of 1–100 notification ids, the notifications a `retract` removes.
    case ids
    #if PUSHSEAL_SCHEMA_PROBE
    /// Test-only: a member no codec handles, so each exhaustive `switch` fails to compile
    /// (`scripts/schema-probe.sh`). Never defined in a real build.
    case schemaProbe
    #endif

    /// The member's name in the JSON object (its raw value), e.g. `localizations`.
    @inlinable public var name: String { rawValue }

    /// The member whose name is the UTF-8 bytes `key`, or `nil` (the scanner's lookup: no
    /// `String` built). Every case is found by its name (`NotificationMemberTests`).
    static func named(_ key: Span<UInt8>) -> NotificationMember? {
        func equals(_ name: StaticString) -> Bool {
            guard key.count == name.utf8CodeUnitCount else { return false }
            // Safe: `withUTF8Buffer` lends the literal's bytes for the call; both are read at
            // indices below `key.count`, the literal's length too (checked just above).
            return name.withUTF8Buffer { t in
                for i in 0..<key.count where key[i] != t[i] { return false }
                return true
            }
        }
        // By length first: one or two comparisons a key.
        switch key.count {
        case 2: return equals("id") ? .id : nil
        case 3: return equals("iat") ? .iat : equals("exp") ? .exp : equals("aps") ? .aps : equals("ids") ? .ids : nil
        case 4: return equals("body") ? .body : equals("data") ? .data : equals("kind") ? .kind : nil
        case 5: return equals("title") ? .title : equals("media") ? .media : nil
        case 8: return equals("subtitle") ? .subtitle : nil
        case 13: return equals("localizations") ? .localizations : nil
        default: return nil
        }
    }
}

/// What a receiver does with a message: the plaintext member `kind` (FORMAT.md §5.1). A
/// plaintext without `kind` is a `display` message, so every plaintext sealed before kinds
/// existed keeps its meaning.
public enum MessageKind: String, CaseIterable, Sendable {
    /// Show it: the Notification Service Extension substitutes its title, subtitle and body
    /// (at least one non-empty). The default.
    case display
    /// Take back earlier notifications: the app's background handler removes the delivered
    /// notifications whose `id` is in ``PushNotification/ids`` and shows nothing. Sent as a
    /// background push (`content-available`), never to the extension.
    case retract

    /// The most ids one retract names.
    public static let maxRetractIDs = 100
    /// The longest id a retract names, in UTF-8 bytes.
    public static let maxIDByteCount = 256
}
