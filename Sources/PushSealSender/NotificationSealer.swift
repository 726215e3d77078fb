import PushSealJSON
import PushSealSystem
import Foundation
import PushSealCrypto
public import PushSealWire

/// Builds sealed APNs payloads: notification in, exact payload bytes and request headers out.
///
/// Every payload has `aps.alert` with the non-empty fallback title and body and
/// `"mutable-content":1` (the integer), so iOS runs the Notification Service Extension; the
/// sealer refuses to build anything else. The notification is written as compact JSON, padded
/// to its Padmé length, sealed through `WireFormat.seal(_:key:context:algorithm:into:)` with
/// the registry entry the recipient's primary key names (v1: AES-256-GCM, fresh random nonce,
/// AAD `pushseal:v1|A256GCM|<key_id>|<app_id>`) and carried as `encrypted_data`, followed by
/// `key_id`, `enc_alg` and the algorithm's own header fields. The serialized payload is measured in bytes as written and must be at
/// most 4096 (``SealOptions/maxPayloadByteCount``).
///
/// Sendable and stateless per seal: one sealer may be used from many threads at once.
public struct NotificationSealer: Sendable {
    /// The app id (bundle identifier, APNs topic), bound into the AAD.
    public let appID: String
    /// The options shared by every payload.
    public let options: SealOptions
    /// The envelope algorithms a sealing key may name (default ``EnvelopeRegistry/standard``).
    public let registry: EnvelopeRegistry
    /// Where the recipients' primary keys come from (``BatchSealer`` calls its `beginBatch()`).
    let keys: any SealingKeyProvider
    private let clock: @Sendable () -> Int64
    /// The clear part of every payload of this sealer (`{"aps":{…},"encrypted_data":"` and the
    /// collapse id) unless a seal is given its own.
    public let clear: ClearPart

    /// The system clock in whole seconds since 1970 UTC (`CLOCK_REALTIME_COARSE`: whole seconds
    /// need no finer clock, and it is the cheapest read).
    public static let systemClock: @Sendable () -> Int64 = { unixTimeSeconds() }

    /// Creates a sealer and checks the options once.
    /// - Parameters:
    ///   - appID: the app's bundle identifier: 1-255 bytes of printable ASCII other than `|`
    ///     (FORMAT.md §3.2; a keychain's keysets allow only `A-Z a-z 0-9 . -`).
    ///   - keys: where the recipients' primary keys come from.
    ///   - options: fallback alert, aps fields, priority, collapse id, TTL, padding, fit.
    ///   - clock: seconds since 1970 UTC, for `iat` and TTLs (tests pass a fixed one).
    ///   - registry: the envelope algorithms by `enc_alg` (default ``EnvelopeRegistry/standard``).
    /// - Throws: `SenderError` `.emptyFallbackAlert`, `.invalidOption` (also for a default TTL
    ///   that takes `exp` past `WireFormat.maxTimeSeconds` from now).
    public init(appID: String, keys: any SealingKeyProvider, options: SealOptions = SealOptions(),
                clock: @escaping @Sendable () -> Int64 = NotificationSealer.systemClock,
                registry: EnvelopeRegistry = .standard) throws {
        guard !appID.isEmpty else { throw SenderError(.invalidOption, "the app id must not be empty") }
        guard WireFormat.isValidAppID(appID) else {
            throw SenderError(.invalidOption, "app id \(PushNotification.excerpt(appID)) is not 1-255 bytes of printable ASCII other than |")
        }
        guard options.priority == 10 || options.priority == 5 else {
            throw SenderError(.invalidOption, "apns-priority must be 10 or 5, got \(options.priority)")
        }
        if let t = options.defaultTTLSeconds {
            guard t >= 0 else { throw SenderError(.invalidOption, "the ttl must not be negative") }
            guard SealRequest.expiry(now: clock(), ttlSeconds: t) != nil else {
                throw SenderError(.invalidOption, SealRequest.ttlTooLarge(t))
            }
        }
        self.clear = try ClearPart(fallback: options.fallback, aps: options.aps, collapseID: options.collapseID)
        self.registry = registry
        self.appID = appID
        self.options = options
        self.keys = keys
        self.clock = clock
    }

    /// Reads the JSON form of a notification (see ``SealRequest/init(json:)``) and seals it.
    ///
    /// A well-formed notification is read by the wire module's scanner (`PushNotification.scan`,
    /// the reader's rules, no JSON tree); anything unusual (a wrong type, an unknown member)
    /// takes the tree decoder, which gives the same payload or the precise error.
    /// - Parameters:
    ///   - notificationJSON: UTF-8 JSON text of one notification object (at most 1 MiB).
    ///   - recipient: the recipient's name for the key provider.
    /// - Throws: `SenderError` `.invalidJSON` and everything ``seal(_:for:)`` throws.
    public func seal(notificationJSON: [UInt8], for recipient: String) throws -> SealedNotification {
        // Scanned into this value in place (a returned notification would be copied).
        var scanned = PushNotification()
        var ttl: Int64?
        if PushNotification.scan(notificationJSON, into: &scanned, otherMember: { try SealRequest.scanTTL($0, &$1, into: &ttl) }) {
            try SealRequest.checkTTL(exp: scanned.exp, ttlSeconds: ttl)
            return try seal(&scanned, ttlSeconds: ttl, for: recipient)
        }
        var request = try SealRequest(jsonBytes: notificationJSON)
        return try seal(&request.notification, ttlSeconds: request.ttlSeconds, for: recipient)
    }

    /// Seals `request` for `recipient`.
    ///
    /// The request is checked first by the rules of its JSON form (``SealRequest/validate()``):
    /// a value built in code is refused exactly as the same notification in JSON would be.
    /// - Parameters:
    ///   - request: what the user should see; `iat` defaults to now, `ttlSeconds` (or the
    ///     options' default TTL) becomes `exp`.
    ///   - recipient: the recipient's name for the key provider (non-empty).
    /// - Returns: the payload bytes (at most 4096), headers, key id, and the fit changes.
    /// - Throws: `SenderError` `.emptyNotification`, `.invalidNotification` (a member a receiver
    ///   would reject, a time out of range, `exp` before `iat`, a TTL past
    ///   `WireFormat.maxTimeSeconds`), `.payloadTooLarge` (actual and allowed bytes; the actual size also in ``SenderError/payloadByteCount``),
    ///   `.cannotFit`, `.clearPartTooLarge`, `.unknownRecipient`, `.keyUnavailable`,
    ///   `.keyStoreLocked`, `.keyStoreUnreadable`, `.sealFailed`; a provider's own errors pass
    ///   through.
    public func seal(_ request: SealRequest, for recipient: String) throws -> SealedNotification {
        try request.validate()
        var notification = request.notification
        return try seal(&notification, ttlSeconds: request.ttlSeconds, for: recipient)
    }

    /// Seals a retract (FORMAT.md §5.1) for `recipient`: a background push (`aps` exactly
    /// `{"content-available":1}`, headers `apns-push-type: background`, `apns-priority: 5`, no
    /// collapse id) whose sealed plaintext names the notification ids to remove. What an HTTP
    /// gateway's `POST /v1/notifications/{id}/retract` calls with the id it once sealed under
    /// (and the batch form with several).
    /// - Parameters:
    ///   - ids: 1–100 notification ids (each 1–256 bytes) of earlier notifications to `recipient`.
    ///   - retractID: the retract's own id for the device's replay guard (`nil`: a random one
    ///     when ``SealOptions/generatesIDs``).
    ///   - ttlSeconds: its time to live (`nil`: the options' default TTL).
    ///   - recipient: the recipient's name for the key provider.
    /// - Throws: as ``seal(_:for:)-(SealRequest,_)``; `.invalidNotification` for 0 or more than
    ///   100 ids, or an empty or overlong id.
    public func sealRetract(ids: [String], retractID: String? = nil, ttlSeconds: Int64? = nil, for recipient: String) throws -> SealedNotification {
        try seal(SealRequest(PushNotification.retract(ids: ids, id: retractID), ttlSeconds: ttlSeconds), for: recipient)
    }

    /// Seals `notification` for `recipient` (``seal(_:for:)-(SealRequest,_)`` with a TTL).
    /// - Throws: as ``seal(_:for:)-(SealRequest,_)``.
    public func seal(_ notification: PushSealWire.PushNotification, ttlSeconds: Int64? = nil, for recipient: String) throws -> SealedNotification {
        try seal(SealRequest(notification, ttlSeconds: ttlSeconds), for: recipient)
    }

    /// The seal job shared by every way in: checks, times, key, plaintext, budget, seal, payload.
    /// `n` is the caller's, filled in place (`iat`, `exp` are set here; not copied, so its
    /// members are not retained again); its members were checked by the sending rules.
    /// `clear`: the payload's clear part, `nil` for the sealer's own (``clear``).
    func seal(_ n: inout PushNotification, ttlSeconds: Int64?, for recipient: String, clear: ClearPart? = nil) throws -> SealedNotification {
        // A retract is a background push whatever the options' or a line's alert (FORMAT.md §5.1).
        if n.kind == .retract { return try seal(&n, ttlSeconds: ttlSeconds, for: recipient, clearPart: ClearPart.background) }
        // Borrowed, not copied (`clear ?? self.clear` made a copy: a retain and release per seal).
        if let clear { return try seal(&n, ttlSeconds: ttlSeconds, for: recipient, clearPart: clear) }
        return try seal(&n, ttlSeconds: ttlSeconds, for: recipient, clearPart: self.clear)
    }

    private func seal(_ n: inout PushNotification, ttlSeconds: Int64?, for recipient: String, clearPart clear: borrowing ClearPart) throws -> SealedNotification {
        let prefix = clear.prefix
        guard !recipient.isEmpty else { throw SenderError(.invalidOption, "the recipient must not be empty") }
        // The receiver's rule: title, subtitle and body all empty or white space is blankContent
        // (a display message's; a retract shows nothing and was checked by `checkKind()`).
        let isRetract = n.kind == .retract
        guard n.hasVisibleText || isRetract else {
            throw SenderError(.emptyNotification, "the notification needs a title, subtitle or body that is not empty or white space only")
        }
        if !n.localizations.isEmpty, let locale = n.blankLocale {
            throw SenderError(.emptyNotification, "localizations.\(locale): its title, subtitle and body (with the default's for missing ones) are empty or white space only")
        }
        let now = clock()
        if n.iat == nil { n.iat = now }
        if options.generatesIDs, !n.hasID { n.id = Self.generatedID() }
        // apns-expiration: exp, or 0 for a TTL of 0 (APNs: deliver now or never), whose sealed
        // exp is iat + 60 s so it is not born expired (docs/FORMAT.md §5, docs/cli.md).
        var apnsExpiration = n.exp
        if let ttl = ttlSeconds ?? (n.exp == nil ? options.defaultTTLSeconds : nil) {
            let sealedTTL = ttl == 0 ? SealOptions.immediateTTLSeconds : ttl
            guard let e = SealRequest.expiry(now: now, ttlSeconds: sealedTTL) else {
                throw SenderError(.invalidNotification, SealRequest.ttlTooLarge(ttl))
            }
            n.exp = e
            apnsExpiration = ttl == 0 ? 0 : e
        }
        let (iat, exp) = (n.iat, n.exp)  // not `n` in the closure: capturing it copies the notification
        try SenderError.fromNotificationRules { try PushNotification.checkTimes(iat: iat, exp: exp) }

        let sealingKey: SealingKey
        do {
            sealingKey = try keys.primaryKey(appID: appID, recipient: recipient)
        } catch let e as any SenderErrorConvertible {
            throw e.senderError
        }
        guard sealingKey.hasValidKeyID else {
            throw SenderError(.keyUnavailable, "the key id of \(recipient)'s primary key is not 1-64 characters of A-Z a-z 0-9 _ -")
        }
        guard let algorithm = registry.algorithm(named: sealingKey.algorithm) else {
            throw SenderError(.keyUnavailable, "\(recipient)'s primary key is for enc_alg \(sealingKey.algorithm), which this sealer does not know (known: \(registry.names.joined(separator: ", ")))")
        }
        let context: EnvelopeContext
        do {
            // The app id was checked when this sealer was made, the key id just above.
            context = try EnvelopeContext(checkedKeyID: sealingKey.keyID, appID: appID,
                                      headerValues: try algorithm.sealingHeaderValues(keyID: sealingKey.keyID, appID: appID))
        } catch let e as FormatError {
            throw SenderError(.sealFailed, "could not seal: \(e.code)")
        }
        let tail = PayloadTail(algorithmName: algorithm.name, headerFieldNames: algorithm.headerFieldNames)
        let tailByteCount = tail.byteCount(context)
        let fixedByteCount = prefix.count + tailByteCount
        func size(_ plaintextByteCount: Int) -> Int {
            fixedByteCount + WireBase64.encodedByteCount(algorithm.boxByteCount(plaintextByteCount: plaintextByteCount))
        }
        // The wire module seals into a temporary buffer and hands over the box, which is
        // base64-encoded straight from there into the payload (no box array).
        func assemble(_ box: RawSpan) -> [UInt8] {
            Self.payload(prefix: prefix, box: box, tail: tail, tailByteCount: tailByteCount, context: context)
        }
        // The common case with one temporary buffer: the plaintext, padded, and its box side by
        // side; of 1 KiB (on the stack) when the estimate fits, else sized by the estimate (at
        // most the budget: a plaintext that fits the payload is far smaller). One that does not
        // fit after all takes the slow path below.
        let estimate = n.estimatedByteCount()
        let plaintextCapacity = estimate <= Self.smallPlaintextByteCount ? Self.smallPlaintextByteCount
            : min(SealOptions.maxPayloadByteCount, (estimate + 63) & ~63)
        let quick: [UInt8]?
        do {
            quick = try WireFormat.sealInTemporary(n, plaintextCapacity: plaintextCapacity, padding: options.padding,
                                                   fits: { size($0) <= SealOptions.maxPayloadByteCount },
                                                   key: sealingKey.key, context: context, algorithm: algorithm, assemble)
        } catch {
            throw Self.senderError(error)
        }
        var changes: [FitChange] = []
        let payload: [UInt8]
        if let quick {
            payload = quick
        } else {
            var plain = try Self.encoded(n)  // taken over by fittedPlaintext (left empty)
            var fitted = try fittedPlaintext(&plain, n, clear: clear, size: size)
            defer { SecretBytes.wipe(&fitted.0) }
            changes = fitted.1
            do {
                payload = try WireFormat.seal(fitted.0, key: sealingKey.key, context: context, algorithm: algorithm, assemble)
            } catch {
                throw Self.senderError(error)
            }
        }
        // A retract: `background`, priority 5 (APNs refuses 10 for a background push).
        let headers = APNsHeaders(pushType: isRetract ? "background" : "alert", topic: appID, priority: isRetract ? 5 : options.priority,
                                  expiration: apnsExpiration, collapseID: clear.collapseID)
        return SealedNotification(payload: payload, headers: headers, keyID: sealingKey.keyID, changes: changes)
    }

    /// The plaintext capacity of a small notification: with its box (at most 48 bytes more)
    /// it fits the 1 KiB temporary the standard library puts on the stack
    /// (`withUnsafeTemporaryAllocation`; a larger one is a heap allocation).
    static let smallPlaintextByteCount = 480

    /// A fresh notification id: ``SealOptions/generatedIDByteCount`` random bytes as unpadded
    /// base64url (22 characters).
    static func generatedID() -> String {
        var s = WireBase64.encode(SecureRandom.bytes(SealOptions.generatedIDByteCount))
        s = s.replacing("+", with: "-").replacing("/", with: "_")
        while s.hasSuffix("=") { s.removeLast() }
        return s
    }

    /// The payload after the base64 box: `","key_id":"<keyID>","enc_alg":"<name>"`, then
    /// `,"<field>":"<value>"` for each of the algorithm's header fields, then `"}` — written
    /// through the JSON writer, and counted by writing it into a ``ByteCounter``. The key id
    /// and header values are read from the seal's context where they lie (not copied into the
    /// tail: each copy of a string is a retain and a release).
    struct PayloadTail {
        let algorithmName: String
        let headerFieldNames: [String]

        /// The tail's byte count for `context`, counted by writing it.
        func byteCount(_ context: borrowing EnvelopeContext) -> Int {
            var counter = JSONSinkWriter(into: ByteCounter())
            write(context, to: &counter)
            return counter.sink.count
        }

        /// Writes the tail for `context`: the clear part left the box's string open after
        /// `"encrypted_data":"`, so the tail closes it and continues the payload object.
        func write<S: ByteSink>(_ context: borrowing EnvelopeContext, to w: inout JSONSinkWriter<S>) {
            w.raw("\"")
            w.continueAfterValue()
            // Names and values need no escaping: the registry and the seal entry point check
            // their characters (key ids A-Z a-z 0-9 _ -, base64 header values).
            w.key(static: "key_id")
            w.string(plain: context.keyID)
            w.key(static: "enc_alg")
            w.string(plain: algorithmName)
            for (name, value) in zip(headerFieldNames, context.headerValues) {
                w.key(plain: name)
                w.string(plain: value)
            }
            w.endObject()
        }
    }

    /// `prefix` ‖ base64(`box`) ‖ `tail` (of `tailByteCount` bytes for `context`), written into
    /// one allocation of exactly the payload's size.
    static func payload(prefix: [UInt8], box: RawSpan, tail: PayloadTail, tailByteCount: Int,
                        context: borrowing EnvelopeContext) -> [UInt8] {
        let byteCount = prefix.count + WireBase64.encodedByteCount(box.byteCount) + tailByteCount
        let bytes = JSONSinkWriter.bytes(capacity: byteCount) { w in
            w.sink.append(array: prefix)
            WireBase64.encode(box, appendingTo: &w.sink)
            tail.write(context, to: &w)
        }
        precondition(bytes.count == byteCount, "the payload's bytes differ from the count measured by writing them")
        return bytes
    }

    /// The sender's error for what the wire module's seal entries throw: the encoder's
    /// `nonFiniteNumber` (a NaN in `data` built in code, refused earlier by validation) is
    /// `.invalidNotification`, a wrong key `.keyUnavailable`, any other failure `.sealFailed`.
    private static func senderError(_ error: any Error) -> any Error {
        switch error {
        case let e as FormatError where e.code == .nonFiniteNumber: SenderError(.invalidNotification, e.reason)
        case let e as FormatError: SenderError(e.code == .invalidKey ? .keyUnavailable : .sealFailed, "could not seal: \(e.reason)")
        case let e as CryptoError: SenderError(.sealFailed, "could not seal: \(e.code)")
        default: error
        }
    }

    /// The plaintext bytes to seal (`written`, padded), or fitted down the ladder when asked.
    /// `written` is taken over (padded in place, without a copy).
    private func fittedPlaintext(_ written: inout [UInt8], _ n: PushNotification, clear: ClearPart, size: (Int) -> Int) throws -> ([UInt8], [FitChange]) {
        let limit = SealOptions.maxPayloadByteCount
        var plain: [UInt8] = []
        swap(&plain, &written)
        let paddedCount = options.padding ? Padme.paddedLength(plain.count) : plain.count
        if size(paddedCount) <= limit {
            plain.append(contentsOf: repeatElement(0x20, count: paddedCount - plain.count))
            return (plain, [])
        }
        let clearByteCount = size(0)
        guard clearByteCount <= limit else { throw clear.tooLarge(clearByteCount) }
        guard options.fit else {
            throw SenderError(.payloadTooLarge, "the payload is \(size(paddedCount)) bytes, APNs allows \(limit)",
                              payloadByteCount: size(paddedCount))
        }
        var changes: [FitChange] = []
        if paddedCount > plain.count { changes.append(.droppedPadding(byteCount: paddedCount - plain.count)) }
        if size(plain.count) <= limit { return (plain, changes) }
        func encode(body: String?, media: Bool) throws -> [UInt8] {
            var fitted = n
            fitted.body = body
            if !media { fitted.media = nil }
            return try Self.encoded(fitted)
        }
        if n.media != nil {
            changes.append(.droppedMedia)
            plain = try encode(body: n.body, media: false)
            if size(plain.count) <= limit { return (plain, changes) }
        }
        guard let body = n.body, !body.isEmpty else {
            throw SenderError(.cannotFit, "the payload is \(size(plain.count)) bytes without padding and media, APNs allows \(limit), and there is no body to shorten")
        }
        let characters = Array(body)
        // Largest k such that the first k Characters plus "…" fit; bytes grow with k.
        var low = 0
        var high = characters.count - 1
        var best: [UInt8]?
        var bestK = -1
        while low <= high {
            let k = (low + high) / 2
            let candidate = try encode(body: String(characters[0..<k]) + "…", media: false)
            if size(candidate.count) <= limit {
                best = candidate
                bestK = k
                low = k + 1
            } else {
                high = k - 1
            }
        }
        guard let best else {
            let minimal = try encode(body: "…", media: false)
            throw SenderError(.cannotFit, "the payload is \(size(minimal.count)) bytes even with the body cut to an ellipsis, APNs allows \(limit)")
        }
        changes.append(.shortenedBody(originalCharacters: characters.count, keptCharacters: bestK))
        return (best, changes)
    }

    /// `n`'s plaintext in a growable array (no padding); `nonFiniteNumber` (a NaN in `data`
    /// built in code, refused earlier by validation) becomes `.invalidNotification`.
    private static func encoded(_ n: borrowing PushNotification) throws -> [UInt8] {
        var e = PlaintextEncoder(into: [UInt8]())
        e.sink.reserveCapacity(3072)
        do {
            try e.encode(n)
        } catch let error as FormatError {
            throw SenderError(.invalidNotification, error.reason)
        }
        return e.sink
    }
}
