import PushSealHTTP
public import PushSealJSON
import PushSealServer

/// The body of `POST /v1/notifications` read strictly: one submission object, or
/// `{"notifications": [ … ]}` with 1 to ``maxCount`` of them; any unknown member, wrong type
/// or value out of range refuses the whole request (400 `invalidRequest`, `field` names it),
/// so nothing is stored.
public enum NotificationRequest {
    /// Submissions per request at most.
    public static let maxCount = 1000
    /// Members a submission may have.
    static let members: Set<String> = ["recipient", "notification", "ttl", "collapseId", "priority", "pushType", "aps"]
    /// APNs push types (`apns-push-type`).
    public static let pushTypes: Set<String> = ["alert", "background", "location", "voip", "complication", "fileprovider", "mdm", "liveactivity", "pushtotalk", "widgets"]

    /// Reads the submissions of `body`.
    /// - Throws: ``HTTPError`` 400 `invalidRequest` naming the field.
    public static func parse(_ body: JSONValue) throws -> [NotificationSubmission] {
        guard case .object(let object) = body else { throw HTTPError.invalid("the body must be a JSON object", field: "") }
        if let list = object["notifications"] {
            guard object.count == 1 else {
                throw HTTPError.invalid("a batch is {\"notifications\": [...]} with no other member", field: object.members.first { $0.key != "notifications" }?.key)
            }
            guard case .array(let items) = list else { throw HTTPError.invalid("notifications must be an array", field: "notifications") }
            guard (1...maxCount).contains(items.count) else {
                throw HTTPError.invalid("notifications must hold 1 to \(maxCount) items, not \(items.count)", field: "notifications")
            }
            return try items.enumerated().map { try submission($0.element, at: "notifications[\($0.offset)]") }
        }
        return [try submission(body, at: "")]
    }

    private static func submission(_ value: JSONValue, at path: String) throws -> NotificationSubmission {
        func field(_ name: String) -> String { path.isEmpty ? name : "\(path).\(name)" }
        guard case .object(let o) = value else { throw HTTPError.invalid("each notification must be an object", field: path) }
        if let unknown = o.members.first(where: { !members.contains($0.key) }) {
            throw HTTPError.invalid("unknown member \(unknown.key.debugDescription)", field: field(unknown.key))
        }
        // The registry's rule for a recipient (POST /v1/devices keeps the same).
        guard case .string(let recipient)? = o["recipient"], (try? KeyID.validateRecipient(recipient)) != nil else {
            throw HTTPError.invalid("recipient must be a string of 1 to 255 bytes without control characters or /", field: field("recipient"))
        }
        guard case .object(let notification)? = o["notification"] else {
            throw HTTPError.invalid("notification must be an object (the notification JSON push-seal takes)", field: field("notification"))
        }
        // A retract names notifications the gateway accepted: POST /v1/notifications/{id}/retract
        // checks them (404, 409) and counts it; it is never a notification of this route.
        if let member = ["kind", "ids"].first(where: { notification[$0] != nil }) {
            throw HTTPError.invalid("notification.\(member) is not taken here: retract through POST /v1/notifications/{id}/retract or POST /v1/notifications/retract",
                                    field: field("notification.\(member)"))
        }
        // The id the phone records and a retract names: 1 to 256 bytes, as a retract's ids are (FORMAT.md §5.1).
        if let v = notification["id"], v != .null {
            guard case .string(let id) = v, (1...256).contains(id.utf8.count) else {
                throw HTTPError.invalid("notification.id must be a string of 1 to 256 bytes (or absent: the gateway's id is used)", field: field("notification.id"))
            }
        }
        var s = NotificationSubmission(recipient: recipient, notification: notification)
        s.item = value
        if let v = o["ttl"] {
            guard case .integer(let ttl) = v, (0...2_592_000).contains(ttl) else {
                throw HTTPError.invalid("ttl must be an integer number of seconds from 0 to 2592000 (30 days)", field: field("ttl"))
            }
            s.ttlSeconds = ttl
        }
        if let v = o["collapseId"], v != .null {
            guard case .string(let id) = v, !id.isEmpty, id.utf8.count <= 64 else {
                throw HTTPError.invalid("collapseId must be a string of 1 to 64 bytes (or null for none)", field: field("collapseId"))
            }
            s.collapseID = id
        }
        if let v = o["priority"] {
            guard case .integer(let p) = v, [10, 5, 1].contains(p) else {
                throw HTTPError.invalid("priority must be 10, 5 or 1", field: field("priority"))
            }
            s.priority = Int(p)
        }
        if let v = o["pushType"] {
            guard case .string(let t) = v, pushTypes.contains(t) else {
                throw HTTPError.invalid("pushType must be one of \(pushTypes.sorted().joined(separator: ", "))", field: field("pushType"))
            }
            s.pushType = t
        }
        if let v = o["aps"] {
            guard case .object(let aps) = v else { throw HTTPError.invalid("aps must be an object", field: field("aps")) }
            s.aps = aps
        }
        return s
    }

    /// The response body for `results` (in request order).
    public static func answer(_ submissions: [NotificationSubmission], _ results: [SubmissionResult]) -> JSONValue {
        .object(["notifications": .array(zip(submissions, results).map { s, r in
            switch r {
            case .queued(let id):
                return .object(JSONObject([("id", .string(id)), ("recipient", .string(s.recipient)), ("status", .string("queued"))]))
            case .refused(let code, let message):
                return .object(JSONObject([("recipient", .string(s.recipient)),
                                           ("error", .object(JSONObject([("code", .string(code)), ("message", .string(message))])))]))
            }
        })])
    }
}
