/// One notification on its way: what is sent, the attempts so far, and what the current attempt
/// got back. Used on the client's transfer thread only (``APNsEngine`` and the
/// ``APNsConnection`` the attempt is on).
final class APNsRequest {
    /// Longest response body kept, in bytes (APNs' error bodies are well under).
    static let maxBodyByteCount = 4096

    let notification: APNsNotification
    let tag: Int
    /// `apns-id`, the same on every attempt.
    let apnsID: String
    /// When ``APNsClient/send(_:tag:)`` queued it (monotonic nanoseconds).
    let submittedAt: UInt64
    /// Attempts counted so far (a refused stream or a request never sent does not count).
    var attempt = 0
    var tokenGeneration = 0
    /// The `authorization` header value of the current attempt (`bearer <JWT>`, shared bytes).
    var authorization: [UInt8] = []
    /// The connection of the current attempt, `nil` between attempts.
    var connection: APNsConnection?
    var tokenRefreshed = false
    /// The retry must go on a connection opened after the one of the last attempt.
    var newConnection = false
    /// The serial number of the connection of the last attempt (0: none yet).
    var lastConnectionSerial = 0
    /// The local TCP port of that connection, for the outcome.
    var lastConnectionPort: Int?
    /// Times a refused stream was resent without counting an attempt in a row (bounded by
    /// ``APNsEngine/maxRefusedResends``).
    var refusedResends = 0

    // The current attempt, on one connection.
    /// When the current attempt times out (monotonic nanoseconds).
    var deadline: UInt64 = 0
    /// The HTTP/2 stream id, 0 until submitted.
    var streamID: Int32 = 0
    /// Bytes of the payload handed to nghttp2 so far.
    var bodyOffset = 0
    /// nghttp2 sent the request's last frame (END_STREAM): APNs may act on it from now on.
    var endStreamSent = false
    /// The answer's END_STREAM arrived.
    var responseEnded = false
    var status = 0
    var body: [UInt8] = []
    var apnsUniqueID: String?
    /// The answer's `retry-after` value as sent (at most 64 bytes; read by ``APNsRetryAfter``).
    var retryAfterValue: [UInt8]?
    /// Its intent was handed to the client's `beforeSending` handler (once per notification).
    var intentRecorded = false
    /// Times in a row the request went back unsent (its connection went away before it
    /// left); bounded like refused streams, then counted as a failed attempt.
    var unsentResends = 0

    init(_ notification: APNsNotification, tag: Int, apnsID: String, submittedAt: UInt64) {
        self.notification = notification
        self.tag = tag
        self.apnsID = apnsID
        self.submittedAt = submittedAt
    }

    /// Clears what the last attempt got back (a new attempt, or a resend of a refused stream).
    func resetAttempt() {
        streamID = 0
        bodyOffset = 0
        endStreamSent = false
        responseEnded = false
        status = 0
        body.removeAll(keepingCapacity: true)
        apnsUniqueID = nil
        retryAfterValue = nil
    }
}
