public import PushSealJSON
import PushSealSystem
// The scanner: an alternative decoder of the sending form (`init(sendingJSON:)`) that reads a
// notification object member by member with `JSONReader.Scanner`, without building the JSON
// tree. It produces the same `Notification` for what it accepts and gives up (`nil`) on
// anything unusual — a wrong type, an unknown or duplicate member, an escaped key — so the
// caller takes the tree decoder, which gives the same result or the precise error. Held to the
// tree decoder by a differential test (PushSealWireTests/ScannerDifferentialTests).
extension Notification {
    /// The member number of the known member named by the UTF-8 bytes `k` (title 0, subtitle 1,
    /// body 2, media 3, localizations 4, data 5, iat 6, exp 7, the extra integer 8, id 9), or `nil`.
    static func scannedMember(_ k: UnsafeRawBufferPointer, extraInteger: StaticString?) -> Int? {
        func named(_ name: StaticString) -> Bool {
            guard k.count == name.utf8CodeUnitCount else { return false }
            let t = name.utf8Start
            for i in 0..<k.count where k[i] != t[i] { return false }
            return true
        }
        if let extraInteger, named(extraInteger) { return 8 }
        switch k.count {
        case 2: return named("id") ? 9 : nil
        case 3: return named("iat") ? 6 : named("exp") ? 7 : nil
        case 4: return named("body") ? 2 : named("data") ? 5 : nil
        case 5: return named("title") ? 0 : named("media") ? 3 : nil
        case 8: return named("subtitle") ? 1 : nil
        case 13: return named("localizations") ? 4 : nil
        default: return nil
        }
    }

    /// Scans the notification object at the scanner's position by the rules of
    /// ``init(sendingJSON:extraMemberNames:extraMember:)``.
    /// - Parameters:
    ///   - s: a scanner positioned at the object; after `nil` its position is unspecified.
    ///   - extraInteger: one more member to accept, a non-negative integer (the sender's `ttl`).
    /// - Returns: the notification and the extra member's value, or `nil` to take the tree decoder.
    public static func scan(_ s: inout JSONReader.Scanner, extraInteger: StaticString? = nil) -> (notification: Notification, extra: Int64?)? {
        var n = Notification()
        var extra: Int64?
        guard scan(&s, into: &n, extra: &extra, extraInteger: extraInteger) else { return nil }
        return (n, extra)
    }

    /// ``scan(_:extraInteger:)`` into the caller's value, without returning (and so copying) a
    /// notification: the sender's hot path.
    /// - Parameters:
    ///   - n: a fresh `Notification()`, filled in; unspecified after `false`.
    ///   - extra: the extra member's value (`nil` when absent); unspecified after `false`.
    /// - Returns: `false` to take the tree decoder.
    public static func scan(_ s: inout JSONReader.Scanner, into n: inout Notification, extra: inout Int64?,
                            extraInteger: StaticString? = nil) -> Bool {
        if let source = s.source { n.source = source }
        return (try? scanMembers(&s, into: &n, extra: &extra, extraInteger: extraInteger, spans: s.source != nil)) == true
    }

    /// The members of ``scan(_:extraInteger:)``, read into `n` and `extra`; `spans`: keep text
    /// members as spans of `n.source`, the scanned input (else build `String`s).
    /// - Returns: `false` to take the tree decoder.
    /// - Throws: the scanner's errors (also: take the tree decoder).
    private static func scanMembers(_ s: inout JSONReader.Scanner, into n: inout Notification, extra: inout Int64?,
                                    extraInteger: StaticString?, spans: Bool) throws -> Bool {
        var seen = 0
        guard try s.peekKind() == .object else { return false }
        try s.beginObject()
        while let key = try s.nextKey() {
            guard !key.hasEscapes, let member = scannedMember(s.rawBytes(key), extraInteger: extraInteger) else { return false }
            guard seen & (1 << member) == 0 else { return false }
            seen |= 1 << member
            switch member {
            case 0, 1, 2, 9:
                guard try s.peekKind() == .string else { return false }
                let span = try s.readString()
                let text: NotificationText = spans ? NotificationText(span) : .string(s.string(span))
                switch member {
                case 0: n.titleText = text
                case 1: n.subtitleText = text
                case 2: n.bodyText = text
                default: n.idText = text
                }
            case 6, 7, 8:
                guard try s.peekKind() == .number, case .integer(let t) = try s.readNumber(), t >= 0 else { return false }
                switch member {
                case 6: n.iat = t
                case 7: n.exp = t
                default: extra = t
                }
            case 3: n.media = try sendingMedia(s.readValue())
            case 4: n.localizations = try sendingLocalizations(s.readValue())
            default:
                guard case .object(let d) = try s.readValue(),
                      !d.contains(where: { reservedDataNames.contains($0.key) }) else { return false }
                n.data = d
            }
        }
        try checkTimes(iat: n.iat, exp: n.exp)
        return true
    }

    /// Scans a whole input holding one notification object (see ``scan(_:extraInteger:)``);
    /// its text members are built as `String`s.
    /// - Returns: `nil` for anything the tree decoder must read, including trailing bytes.
    public static func scan(_ input: UnsafeRawBufferPointer, limits: JSONReader.Limits = .default,
                            extraInteger: StaticString? = nil) -> (notification: Notification, extra: Int64?)? {
        guard !input.isEmpty, input.count <= limits.maxByteCount, var s = try? JSONReader.Scanner(input, limits: limits) else { return nil }
        return scanWhole(&s, extraInteger: extraInteger)
    }

    /// Scans a whole input holding one notification object (see ``scan(_:extraInteger:)``);
    /// its text members stay spans of `input` (held by the notification), so encoding copies
    /// them without building `String`s. The same notification as the other ``scan(_:limits:extraInteger:)``.
    /// - Returns: `nil` for anything the tree decoder must read, including trailing bytes.
    public static func scan(_ input: [UInt8], limits: JSONReader.Limits = .default,
                            extraInteger: StaticString? = nil) -> (notification: Notification, extra: Int64?)? {
        var n = Notification()
        var extra: Int64?
        guard scan(input, into: &n, extra: &extra, limits: limits, extraInteger: extraInteger) else { return nil }
        return (n, extra)
    }

    /// The span scan of a whole input (``scan(_:limits:extraInteger:)-([UInt8],_,_)``) into the
    /// caller's value, without returning (and so copying) a notification.
    /// - Parameters:
    ///   - n: a fresh `Notification()`, filled in; unspecified after `false`.
    ///   - extra: the extra member's value (`nil` when absent); unspecified after `false`.
    /// - Returns: `false` for anything the tree decoder must read, including trailing bytes.
    public static func scan(_ input: [UInt8], into n: inout Notification, extra: inout Int64?,
                            limits: JSONReader.Limits = .default, extraInteger: StaticString? = nil) -> Bool {
        guard !input.isEmpty, input.count <= limits.maxByteCount else { return false }
        // The scanner made here directly (not through `Scanner.scanning`, whose scanner keeps a
        // second reference to the input): the notification holds the input its spans point into.
        n.source = input
        return input.withUnsafeBytes { raw in
            guard var s = try? JSONReader.Scanner(raw, limits: limits) else { return false }
            return (try? scanMembers(&s, into: &n, extra: &extra, extraInteger: extraInteger, spans: true)) == true && (try? s.finish()) != nil
        }
    }

    private static func scanWhole(_ s: inout JSONReader.Scanner, extraInteger: StaticString?) -> (notification: Notification, extra: Int64?)? {
        guard let r = scan(&s, extraInteger: extraInteger), (try? s.finish()) != nil else { return nil }
        return r
    }
}
