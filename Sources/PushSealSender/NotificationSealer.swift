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
/// to its Padmé length, sealed with AES-256-GCM under the recipient's primary key (fresh
/// random nonce, AAD `pushseal:v1|A256GCM|<key_id>|<app_id>`) and carried as
/// `encrypted_data`. The serialized payload is measured in bytes as written and must be at
/// most 4096 (``SealOptions/maxPayloadByteCount``).
///
/// Sendable and stateless per seal: one sealer may be used from many threads at once.
public struct NotificationSealer: Sendable {
    /// The app id (bundle identifier, APNs topic), bound into the AAD.
    public let appID: String
    /// The options shared by every payload.
    public let options: SealOptions
    /// Where the recipients' primary keys come from (``BatchSealer`` calls its `beginBatch()`).
    let keys: any SealingKeyProvider
    private let clock: @Sendable () -> Int64
    /// `{"aps":{…},"encrypted_data":"` — the same for every payload of this sealer.
    private let prefix: [UInt8]
    /// `pushseal:v1|A256GCM|` — the AAD before the key id.
    private let aadHead: [UInt8]
    /// `|<app_id>` — the AAD after the key id.
    private let aadTail: [UInt8]

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
    /// - Throws: `SenderError` `.emptyFallbackAlert`, `.invalidOption` (also for a default TTL
    ///   that takes `exp` past ``OutgoingNotification/maxTimeSeconds`` from now).
    public init(appID: String, keys: any SealingKeyProvider, options: SealOptions = SealOptions(),
                clock: @escaping @Sendable () -> Int64 = NotificationSealer.systemClock) throws {
        guard !appID.isEmpty else { throw SenderError(.invalidOption, "the app id must not be empty") }
        guard WireFormat.isValidAppID(appID) else {
            throw SenderError(.invalidOption, "app id \(OutgoingNotification.excerpt(appID)) is not 1-255 bytes of printable ASCII other than |")
        }
        guard !options.fallback.title.isEmpty, !options.fallback.body.isEmpty else {
            throw SenderError(.emptyFallbackAlert, "the fallback alert needs a non-empty title and body, or iOS never runs the extension")
        }
        guard options.priority == 10 || options.priority == 5 else {
            throw SenderError(.invalidOption, "apns-priority must be 10 or 5, got \(options.priority)")
        }
        if let c = options.collapseID {
            guard !c.isEmpty, c.utf8.count <= SealOptions.maxCollapseIDByteCount else {
                throw SenderError(.invalidOption, "apns-collapse-id must be 1 to \(SealOptions.maxCollapseIDByteCount) bytes, got \(c.utf8.count)")
            }
        }
        if let t = options.defaultTTLSeconds {
            guard t >= 0 else { throw SenderError(.invalidOption, "the ttl must not be negative") }
            guard OutgoingNotification.expiry(now: clock(), ttlSeconds: t) != nil else {
                throw SenderError(.invalidOption, OutgoingNotification.ttlTooLarge(t))
            }
        }
        let aps = options.aps
        if let b = aps.badge, b < 0 { throw SenderError(.invalidOption, "badge must be 0 or more, got \(b)") }
        if let l = aps.interruptionLevel, !APSFields.interruptionLevels.contains(l) {
            throw SenderError(.invalidOption, "interruption-level must be one of \(APSFields.interruptionLevels.joined(separator: ", ")), got '\(l)'")
        }
        if let r = aps.relevanceScore, !(r >= 0 && r <= 1) {
            throw SenderError(.invalidOption, "relevance-score must be between 0 and 1, got \(r)")
        }
        for (name, value) in [("sound", aps.sound), ("thread-id", aps.threadID), ("category", aps.category)] {
            if let value, value.isEmpty { throw SenderError(.invalidOption, "\(name) must not be empty") }
        }
        var w = PayloadWriter(capacity: 256)
        w.raw("{\"aps\":{\"alert\":{\"title\":")
        w.string(options.fallback.title)
        w.raw(",\"body\":")
        w.string(options.fallback.body)
        w.raw("},\"mutable-content\":1")
        if let s = aps.sound { w.raw(",\"sound\":"); w.string(s) }
        if let b = aps.badge { w.raw(",\"badge\":"); w.integer(b) }
        if let t = aps.threadID { w.raw(",\"thread-id\":"); w.string(t) }
        if let c = aps.category { w.raw(",\"category\":"); w.string(c) }
        if let l = aps.interruptionLevel { w.raw(",\"interruption-level\":"); w.string(l) }
        if let r = aps.relevanceScore { w.raw(",\"relevance-score\":"); try w.number(r) }
        w.raw("},\"encrypted_data\":\"")
        self.prefix = w.bytes
        let aadSample = Wire.aad(keyID: "", appID: appID)
        self.aadHead = Array(aadSample[0..<(aadSample.count - appID.utf8.count - 1)])
        self.aadTail = Array(aadSample[(aadSample.count - appID.utf8.count - 1)...])
        self.appID = appID
        self.options = options
        self.keys = keys
        self.clock = clock
    }

    /// Reads the JSON form of a notification (see ``OutgoingNotification/init(json:)``) and seals it.
    ///
    /// A well-formed notification takes the scan path: the input is checked by
    /// `JSONReader.Scanner` (the reader's rules) and its text members are copied into the
    /// plaintext without building a tree. Anything unusual (a wrong type, an unknown member, a
    /// fit needed) takes the tree path, which gives the same payload or the precise error.
    /// - Parameters:
    ///   - notificationJSON: UTF-8 JSON text of one notification object (at most 1 MiB).
    ///   - recipient: the recipient's name for the key provider.
    /// - Throws: `SenderError` `.invalidJSON` and everything ``seal(_:for:)`` throws.
    public func seal(notificationJSON: [UInt8], for recipient: String) throws -> SealedNotification {
        let scanned = try notificationJSON.withUnsafeBytes { input -> SealedNotification? in
            guard !input.isEmpty, input.count <= JSONReader.Limits.default.maxByteCount else { return nil }
            var s = try JSONReader.Scanner(input)
            var n = ScannedNotification()
            guard ScannedNotification.scan(&s, into: &n), (try? s.finish()) != nil else { return nil }
            return try seal(&n.fields, ttlSeconds: n.ttlSeconds, for: recipient, plaintextCapacity: input.count + input.count / 8 + 128) {
                try OutgoingNotification(jsonBytes: notificationJSON)
            }
        }
        if let scanned { return scanned }
        return try sealChecked(OutgoingNotification(jsonBytes: notificationJSON), for: recipient)
    }

    /// Seals `notification` for `recipient`.
    ///
    /// The notification is checked first by the rules of its JSON form
    /// (``OutgoingNotification/validate()``): a value built in code is refused exactly as the
    /// same notification in JSON would be.
    /// - Parameters:
    ///   - notification: what the user should see; `iat` defaults to now, `ttlSeconds` (or the
    ///     options' default TTL) becomes `exp`.
    ///   - recipient: the recipient's name for the key provider (non-empty).
    /// - Returns: the payload bytes (at most 4096), headers, key id, and the fit changes.
    /// - Throws: `SenderError` `.emptyNotification`, `.invalidNotification` (a member a receiver
    ///   would reject, a time out of range, `exp` before `iat`, a TTL past
    ///   ``OutgoingNotification/maxTimeSeconds``), `.payloadTooLarge` (actual and allowed
    ///   bytes; the actual size also in ``SenderError/payloadByteCount``), `.cannotFit`,
    ///   `.clearPartTooLarge`, `.unknownRecipient`, `.keyUnavailable`, `.keyStoreLocked`,
    ///   `.keyStoreUnreadable`, `.sealFailed`; a provider's own errors pass through.
    public func seal(_ notification: OutgoingNotification, for recipient: String) throws -> SealedNotification {
        try notification.validate()
        return try sealChecked(notification, for: recipient)
    }

    /// ``seal(_:for:)`` for a notification whose members were already checked (read by
    /// ``OutgoingNotification/init(json:)``, which runs the same readers).
    func sealChecked(_ notification: OutgoingNotification, for recipient: String) throws -> SealedNotification {
        var fields = notification.fields(body: notification.body, includeMedia: true)
        return try seal(&fields, ttlSeconds: notification.ttlSeconds, for: recipient, plaintextCapacity: 3072) { notification }
    }

    /// The seal job shared by both paths: checks, times, key, plaintext, budget, AES-GCM, payload.
    /// The times as given, then the times sealed (`iat` defaulted to now, `exp` from a TTL),
    /// are checked here for every path by ``OutgoingNotification/checkTimes(iat:exp:ttlSeconds:)``.
    /// `f` is the caller's, filled in place (`iat`, `exp` are set here; not copied, so its
    /// members are not retained again). `tree` gives the notification as a value when the fit
    /// ladder has to rewrite it.
    func seal(_ f: inout Wire.Fields, ttlSeconds: Int64?, for recipient: String, plaintextCapacity: Int,
              tree: () throws -> OutgoingNotification) throws -> SealedNotification {
        guard !recipient.isEmpty else { throw SenderError(.invalidOption, "the recipient must not be empty") }
        guard f.hasVisibleText else {
            throw SenderError(.emptyNotification, "the notification needs a non-empty title, subtitle or body")
        }
        try OutgoingNotification.checkTimes(iat: f.iat, exp: f.exp, ttlSeconds: ttlSeconds)
        let now = clock()
        if f.iat == nil { f.iat = now }
        if let ttl = ttlSeconds ?? (f.exp == nil ? options.defaultTTLSeconds : nil) {
            guard let e = OutgoingNotification.expiry(now: now, ttlSeconds: ttl) else {
                throw SenderError(.invalidNotification, OutgoingNotification.ttlTooLarge(ttl))
            }
            f.exp = e
        }
        try OutgoingNotification.checkTimes(iat: f.iat, exp: f.exp, ttlSeconds: nil)

        let sealingKey: SealingKey
        do {
            sealingKey = try keys.primaryKey(appID: appID, recipient: recipient)
        } catch let e as any SenderErrorConvertible {
            throw e.senderError
        }
        guard WireFormat.isValidKeyID(sealingKey.keyID) else {
            throw SenderError(.keyUnavailable, "the key id of \(recipient)'s primary key is not 1-64 characters of A-Z a-z 0-9 _ -")
        }
        // `","key_id":"<kid>","enc_alg":"A256GCM"}` (the key id needs no escaping).
        let suffixByteCount = 12 + sealingKey.keyID.utf8.count + 22
        let fixedByteCount = prefix.count + suffixByteCount
        // Seals into a stack buffer and base64-encodes straight from it into the payload (no
        // box array); the AAD is written on the stack too.
        func sealPayload(_ plaintext: UnsafeRawBufferPointer) throws -> [UInt8] {
            let boxByteCount = AES256GCM.nonceByteCount + plaintext.count + AES256GCM.tagByteCount
            do {
                return try withAAD(keyID: sealingKey.keyID) { aad in
                    try withUnsafeTemporaryAllocation(byteCount: boxByteCount, alignment: 16) { boxBuffer in
                        let written = try AES256GCM.seal(plaintext, with: sealingKey.key, authenticating: aad, into: boxBuffer)
                        return Self.payload(prefix: prefix, box: UnsafeRawBufferPointer(rebasing: boxBuffer[0..<written]), keyID: sealingKey.keyID)
                    }
                }
            } catch let e as CryptoError {
                throw SenderError(.sealFailed, "could not seal: \(e.code)")
            }
        }
        // The common case without allocating: the plaintext, padded, in a buffer of the
        // budget's size (a plaintext that fits the payload is far smaller).
        let quick = try withUnsafeTemporaryAllocation(byteCount: SealOptions.maxPayloadByteCount, alignment: 16) { buffer -> [UInt8]? in
            guard var w = BoundedWriter(buffer) else { return nil }
            try Wire.writePlaintext(f, to: &w)
            guard !w.overflowed else { return nil }
            let padded = options.padding ? Wire.padmeLength(w.count) : w.count
            guard Self.payloadByteCount(plaintextByteCount: padded, fixedByteCount: fixedByteCount) <= SealOptions.maxPayloadByteCount else { return nil }
            w.spaces(padded - w.count)
            guard !w.overflowed else { return nil }
            return try sealPayload(w.written)
        }
        var changes: [FitChange] = []
        let payload: [UInt8]
        if let quick {
            payload = quick
        } else {
            var plain = PayloadWriter(capacity: plaintextCapacity)
            try Wire.writePlaintext(f, to: &plain)
            let fitted = try fittedPlaintext(&plain.bytes, f, fixedByteCount: fixedByteCount, tree: tree)
            changes = fitted.1
            payload = try fitted.0.withUnsafeBytes { try sealPayload($0) }
        }
        let headers = APNsHeaders(pushType: "alert", topic: appID, priority: options.priority,
                                  expiration: f.exp, collapseID: options.collapseID)
        return SealedNotification(payload: payload, headers: headers, keyID: sealingKey.keyID, changes: changes)
    }

    /// `prefix` ‖ base64(`box`) ‖ `","key_id":"<keyID>","enc_alg":"A256GCM"}`, written into one
    /// allocation of exactly the payload's size.
    static func payload(prefix: [UInt8], box: UnsafeRawBufferPointer, keyID: String) -> [UInt8] {
        let tail1: StaticString = "\",\"key_id\":\""
        let tail2: StaticString = "\",\"enc_alg\":\"A256GCM\"}"
        var keyID = keyID
        return keyID.withUTF8 { kid in
            let encoded = WireBase64.encodedByteCount(box.count)
            let total = prefix.count + encoded + tail1.utf8CodeUnitCount + kid.count + tail2.utf8CodeUnitCount
            // Every byte is written below (prefix, base64, tail), so no zero fill first.
            let payload = [UInt8](unsafeUninitializedCapacity: total) { out, initialized in
                guard let o = UnsafeMutableRawPointer(out.baseAddress) else { return }
                var at = 0
                func put(_ bytes: UnsafeRawBufferPointer) {
                    if let b = bytes.baseAddress { (o + at).copyMemory(from: b, byteCount: bytes.count) }
                    at += bytes.count
                }
                prefix.withUnsafeBytes { put($0) }
                WireBase64.encode(box, into: o + at)
                at += encoded
                put(UnsafeRawBufferPointer(start: tail1.utf8Start, count: tail1.utf8CodeUnitCount))
                put(UnsafeRawBufferPointer(kid))
                put(UnsafeRawBufferPointer(start: tail2.utf8Start, count: tail2.utf8CodeUnitCount))
                initialized = at
            }
            return payload
        }
    }

    /// Calls `body` with the AAD `pushseal:v1|A256GCM|<keyID>|<appID>` (the bytes of
    /// `Wire.aad`) written into temporary stack memory, valid only during the call.
    private func withAAD<R>(keyID: String, _ body: (UnsafeRawBufferPointer) throws -> R) throws -> R {
        var keyID = keyID
        return try keyID.withUTF8 { kid in
            let count = aadHead.count + kid.count + aadTail.count
            return try withUnsafeTemporaryAllocation(byteCount: count, alignment: 1) { buffer in
                guard let o = buffer.baseAddress else { return try body(UnsafeRawBufferPointer(buffer)) }
                var at = 0
                func put(_ bytes: UnsafeRawBufferPointer) {
                    if let b = bytes.baseAddress { (o + at).copyMemory(from: b, byteCount: bytes.count) }
                    at += bytes.count
                }
                aadHead.withUnsafeBytes { put($0) }
                put(UnsafeRawBufferPointer(kid))
                aadTail.withUnsafeBytes { put($0) }
                return try body(UnsafeRawBufferPointer(buffer))
            }
        }
    }

    /// The payload size for a plaintext of `plaintextByteCount` bytes.
    static func payloadByteCount(plaintextByteCount: Int, fixedByteCount: Int) -> Int {
        fixedByteCount + WireBase64.encodedByteCount(AES256GCM.nonceByteCount + plaintextByteCount + AES256GCM.tagByteCount)
    }

    /// The plaintext bytes to seal (`written`, padded), or fitted down the ladder when asked.
    /// `written` is taken over (padded in place, without a copy).
    private func fittedPlaintext(_ written: inout [UInt8], _ f: Wire.Fields, fixedByteCount: Int,
                                 tree: () throws -> OutgoingNotification) throws -> ([UInt8], [FitChange]) {
        let limit = SealOptions.maxPayloadByteCount
        func size(_ count: Int) -> Int { Self.payloadByteCount(plaintextByteCount: count, fixedByteCount: fixedByteCount) }
        var plain: [UInt8] = []
        swap(&plain, &written)
        let paddedCount = options.padding ? Wire.padmeLength(plain.count) : plain.count
        if size(paddedCount) <= limit {
            plain.append(contentsOf: repeatElement(0x20, count: paddedCount - plain.count))
            return (plain, [])
        }
        let clearByteCount = size(0)
        guard clearByteCount <= limit else { throw clearPartTooLarge(clearByteCount) }
        guard options.fit else {
            throw SenderError(.payloadTooLarge, "the payload is \(size(paddedCount)) bytes, APNs allows \(limit)",
                              payloadByteCount: size(paddedCount))
        }
        var changes: [FitChange] = []
        if paddedCount > plain.count { changes.append(.droppedPadding(byteCount: paddedCount - plain.count)) }
        if size(plain.count) <= limit { return (plain, changes) }
        var n = try tree()
        n.iat = f.iat
        n.exp = f.exp
        n.ttlSeconds = nil
        func encode(body: String?, media: Bool) throws -> [UInt8] {
            var w = PayloadWriter(capacity: 3072)
            try Wire.writePlaintext(n, body: body, includeMedia: media, to: &w)
            return w.bytes
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

    /// The error for a payload whose clear part (`aps` with the fallback alert, the sealed
    /// fields' names, `key_id`, an empty box) is over the budget by itself: no sealed content
    /// fits, and no fitting helps. Names the largest clear member.
    private func clearPartTooLarge(_ clearByteCount: Int) -> SenderError {
        let aps = options.aps
        let members: [(name: String, value: String?)] = [
            ("the fallback title", options.fallback.title), ("the fallback body", options.fallback.body),
            ("aps.sound", aps.sound), ("aps.thread-id", aps.threadID), ("aps.category", aps.category),
        ]
        var reason = "the clear part of the payload (aps with the fallback alert, key_id and the sealed fields) is \(clearByteCount) bytes "
            + "before any sealed content, APNs allows \(SealOptions.maxPayloadByteCount)"
        if let largest = members.compactMap({ m in m.value.map { (name: m.name, byteCount: $0.utf8.count) } }).max(by: { $0.byteCount < $1.byteCount }) {
            reason += ": \(largest.name) alone is \(largest.byteCount) bytes"
        }
        return SenderError(.clearPartTooLarge, reason, payloadByteCount: clearByteCount)
    }
}
