#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif
public import PushSealJSON

/// The emulated device's notification center: what `UNUserNotificationCenter` holds as
/// delivered notifications, kept in the App Group container so every process of the emulated
/// app (the extension host, the app's background handler) sees the same list.
///
/// Every notification the extension delivers is recorded with its request identifier and its
/// `userInfo` (after a successful open: the delivered `aps`, the sealed `data` under `pushseal`
/// and the decrypted `id` under `pushseal-id`; after a fallback: the payload as delivered, with
/// no decrypted `id`). ``removeDelivered(ids:)`` is `removeDeliveredNotifications(withIdentifiers:)`
/// by sealed `id` (the app's retract handler, FORMAT.md §5.1).
///
/// Bounded: at most ``capacity`` notifications (the oldest dropped first, as iOS trims its list).
/// The store is `<container>/pushseal-delivered.json`:
/// `{"format":"pushseal-delivered","version":1,"delivered":[{"identifier","deliveredAt","userInfo"}, …]}`
/// (oldest first; `deliveredAt` in seconds since 1970 UTC), on the private-file rules (0600,
/// replaced atomically) under an exclusive `flock` of `pushseal-delivered.lock`.
public final class DeliveredNotificationCenter: Sendable {
    /// One delivered notification.
    public struct Delivered: Sendable, Equatable {
        /// The request identifier (on iOS the `apns-id`, or a UUID).
        public let identifier: String
        /// When it was delivered, seconds since 1970 UTC.
        public let deliveredAt: Int64
        /// Its `userInfo` as delivered to the app.
        public let userInfo: JSONObject

        /// The decrypted notification `id` (`userInfo["pushseal-id"]`), or `nil` (a fallback,
        /// or a notification sealed without one).
        public var id: String? { userInfo[UNMutableNotificationContent.sealedIDUserInfoKey]?.stringValue }

        /// Creates a record.
        public init(identifier: String, deliveredAt: Int64, userInfo: JSONObject) {
            self.identifier = identifier
            self.deliveredAt = deliveredAt
            self.userInfo = userInfo
        }

        /// The record as JSON: `{"identifier", "deliveredAt", "id" (or null), "userInfo"}`.
        public func jsonValue() -> JSONValue {
            .object(["identifier": .string(identifier), "deliveredAt": .integer(deliveredAt),
                     "id": id.map(JSONValue.string) ?? .null, "userInfo": .object(userInfo)])
        }
    }

    /// Most notifications kept (64).
    public static let defaultCapacity = 64
    /// The store's file name inside the container.
    public static let fileName = "pushseal-delivered.json"
    /// The lock file's name inside the container.
    public static let lockFileName = "pushseal-delivered.lock"
    /// The largest store read (4 MiB).
    static let maxStoreByteCount = 4 << 20

    /// The store file.
    public var fileURL: URL { file.fileURL }
    private let file: ContainerStoreFile
    /// Most notifications kept.
    public let capacity: Int

    /// A center over `<containerDirectory>/pushseal-delivered.json`.
    /// - Parameters:
    ///   - containerDirectory: the App Group container (an existing directory).
    ///   - capacity: notifications kept, at least 1 (default 64).
    public init(containerDirectory: URL, capacity: Int = DeliveredNotificationCenter.defaultCapacity) {
        file = ContainerStoreFile(containerDirectory: containerDirectory, stem: "pushseal-delivered", code: .notificationCenterFailed,
                                  what: "the notification center")
        self.capacity = max(1, capacity)
    }

    /// The delivered notifications, oldest first.
    /// - Throws: `ExtensionError` `.notificationCenterFailed`.
    public func delivered() throws -> [Delivered] {
        try locked { try load() }
    }

    /// Records a delivered notification; one with the same request identifier is replaced (as
    /// iOS replaces a request with the same identifier), and past ``capacity`` the oldest go.
    /// - Throws: `ExtensionError` `.notificationCenterFailed`.
    public func record(_ notification: Delivered) throws {
        try locked {
            var list = try load().filter { $0.identifier != notification.identifier }
            list.append(notification)
            if list.count > capacity { list.removeFirst(list.count - capacity) }
            try save(list)
        }
    }

    /// Removes the delivered notifications whose decrypted `id` is one of `ids` (what
    /// `removeDeliveredNotifications(withIdentifiers:)` does for the requests the app found by
    /// `userInfo["pushseal-id"]`).
    /// - Returns: the removed notifications, oldest first; ids that match nothing are not an
    ///   error (already removed, or never delivered here).
    /// - Throws: `ExtensionError` `.notificationCenterFailed`.
    @discardableResult
    public func removeDelivered(ids: [String]) throws -> [Delivered] {
        let wanted = Set(ids)
        return try locked {
            let list = try load()
            let removed = list.filter { $0.id.map(wanted.contains) == true }
            guard !removed.isEmpty else { return [] }
            try save(list.filter { $0.id.map(wanted.contains) != true })
            return removed
        }
    }

    private func locked<T>(_ body: () throws -> T) throws -> T { try file.locked(body) }

    private func load() throws -> [Delivered] {
        guard let bytes = try file.read(maxByteCount: Self.maxStoreByteCount) else { return [] }
        guard let list = Self.parse(bytes) else { throw file.damaged() }
        return list
    }

    /// Reads the store's JSON, or `nil` when it is not exactly the documented shape.
    static func parse(_ bytes: [UInt8]) -> [Delivered]? {
        guard case .object(let o)? = try? JSONReader.parse(bytes),
              o["format"]?.stringValue == "pushseal-delivered", o["version"]?.integerValue == 1,
              case .array(let items)? = o["delivered"] else { return nil }
        var list: [Delivered] = []
        for item in items {
            guard case .object(let d) = item, let identifier = d["identifier"]?.stringValue,
                  let at = d["deliveredAt"]?.integerValue, case .object(let info)? = d["userInfo"] else { return nil }
            list.append(Delivered(identifier: identifier, deliveredAt: at, userInfo: info))
        }
        return list
    }

    private func save(_ list: [Delivered]) throws {
        var o = JSONObject()
        o["format"] = .string("pushseal-delivered")
        o["version"] = .integer(1)
        o["delivered"] = .array(list.map { .object(["identifier": .string($0.identifier), "deliveredAt": .integer($0.deliveredAt),
                                                    "userInfo": .object($0.userInfo)]) })
        let bytes: [UInt8]
        do {
            bytes = try JSONWriter.serialize(.object(o)) + [0x0A]
        } catch {
            throw ExtensionError(.notificationCenterFailed, "cannot write the notification center: \(error)")
        }
        try file.replace(with: bytes)
    }
}
