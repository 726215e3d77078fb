public import PushSealJSON
import PushSealSystem
// The scanner: an alternative decoder of the sending form (`init(sendingJSON:)`) that reads a
// notification object member by member with `JSONReader.Scanner`, without building the JSON
// tree. It produces the same `PushNotification` for what it accepts and gives up (`false`) on
// anything unusual — a wrong type, an unknown or duplicate member, an escaped key — so the
// caller takes the tree decoder, which gives the same result or the precise error. Held to the
// tree decoder by a differential test (PushSealWireTests/ScannerDifferentialTests).
extension PushNotification {
    /// Reads a member the caller accepts beside the plaintext's own (the sender's `ttl`): given
    /// the member's key (it had no escapes) and the scanner at its value, it reads the value and
    /// returns `true`, or returns `false` (or throws) to take the tree decoder.
    public typealias ScannedOtherMember = (_ key: String, _ scanner: inout JSONReader.Scanner) throws -> Bool

    /// Scans the notification object at the scanner's position by the rules of
    /// ``init(sendingJSON:extraMemberNames:extraMember:checkingTimes:)``, into the caller's value
    /// (not returned, so not copied: the sender's hot path).
    ///
    /// Text members are kept as spans of the scanner's `source` when it has one (a scanner
    /// made over an array), else built as `String`s.
    /// - Parameters:
    ///   - s: a scanner positioned at the object; after `false` its position is unspecified.
    ///   - n: a fresh `PushNotification()`, filled in; unspecified after `false`.
    ///   - otherMember: reads a member that is not a ``NotificationMember`` (default: none).
    /// - Returns: `false` to take the tree decoder (a wrong type, an unknown, duplicate or
    ///   escaped key, a rule broken).
    public static func scan(_ s: inout JSONReader.Scanner, into n: inout PushNotification,
                            otherMember: ScannedOtherMember = { _, _ in false }) -> Bool {
        if let source = s.source { n.source = source }
        return (try? scanMembers(&s, into: &n, otherMember: otherMember, spans: s.source != nil)) == true
    }

    /// Scans a whole input holding one notification object (see ``scan(_:into:otherMember:)``);
    /// its text members stay spans of `input` (held by the notification), so encoding copies
    /// them without building `String`s.
    /// - Parameters:
    ///   - input: UTF-8 JSON text of one object, nothing after it but white space.
    ///   - n: a fresh `PushNotification()`, filled in; unspecified after `false`.
    ///   - limits: the reader's limits.
    ///   - otherMember: reads a member that is not a ``NotificationMember`` (default: none).
    /// - Returns: `false` for anything the tree decoder must read, including trailing bytes.
    public static func scan(_ input: [UInt8], into n: inout PushNotification, limits: JSONReader.Limits = .default,
                            otherMember: ScannedOtherMember = { _, _ in false }) -> Bool {
        guard !input.isEmpty, input.count <= limits.maxByteCount else { return false }
        // The scanner made here directly (not through `Scanner.scanning`, whose scanner keeps a
        // second reference to the input): the notification holds the input its spans point into.
        n.source = input
        return input.withUnsafeBytes { raw in
            guard var s = try? JSONReader.Scanner(raw, limits: limits) else { return false }
            return (try? scanMembers(&s, into: &n, otherMember: otherMember, spans: true)) == true && (try? s.finish()) != nil
        }
    }

    /// The members of ``scan(_:into:otherMember:)``, read into `n`; `spans`: keep text members as
    /// spans of `n.source`, the scanned input (else build `String`s).
    /// - Returns: `false` to take the tree decoder.
    /// - Throws: the scanner's errors (also: take the tree decoder).
    private static func scanMembers(_ s: inout JSONReader.Scanner, into n: inout PushNotification,
                                    otherMember: ScannedOtherMember, spans: Bool) throws -> Bool {
        var seen: UInt32 = 0
        guard try s.peekKind() == .object else { return false }
        try s.beginObject()
        while let key = try s.nextKey() {
            guard !key.hasEscapes else { return false }
            guard let member = s.withRawBytes(key, { NotificationMember.named($0) }) else {
                guard try otherMember(s.string(key), &s) else { return false }
                continue
            }
            let bit = UInt32(1) << UInt32(member.bitIndex)
            guard seen & bit == 0 else { return false }
            seen |= bit
            switch member {  // schema-switch: scanner
            case .title, .subtitle, .body, .id:
                guard try s.peekKind() == .string else { return false }
                let span = try s.readString()
                let text: NotificationText = spans ? NotificationText(span) : .string(s.string(span))
                switch member {
                case .title: n.titleText = text
                case .subtitle: n.subtitleText = text
                case .body: n.bodyText = text
                default: n.idText = text
                }
            case .iat, .exp:
                guard try s.peekKind() == .number, case .integer(let t) = try s.readNumber(), t >= 0 else { return false }
                if member == .iat { n.iat = t } else { n.exp = t }
            case .media: n.media = try sendingMedia(s.readValue())
            case .localizations: n.localizations = try sendingLocalizations(s.readValue())
            case .data:
                guard case .object(let d) = try s.readValue(),
                      !d.contains(where: { reservedDataNames.contains($0.key) }) else { return false }
                n.data = d
            case .aps: n.aps = try sendingPresentation(s.readValue())
            case .kind: n.kind = try sendingKind(s.readValue())
            case .ids: n.ids = try sendingIDs(s.readValue())
            }
        }
        if n.kind != .display || !n.ids.isEmpty { try n.checkKind() }
        try checkTimes(iat: n.iat, exp: n.exp)
        return true
    }
}

extension NotificationMember {
    /// The member's position in ``allCases`` (0 for `title`), for the scanner's set of seen members.
    var bitIndex: Int {
        switch self {  // schema-switch: scanner's member bit
        case .title: 0
        case .subtitle: 1
        case .body: 2
        case .media: 3
        case .localizations: 4
        case .data: 5
        case .aps: 6
        case .iat: 7
        case .exp: 8
        case .id: 9
        case .kind: 10
        case .ids: 11
        }
    }
}
