#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif
import PushSealCrypto
import PushSealJSON
import PushSealSystem

/// Remembers notification `id`s until their time is up and refuses a repeated id and any
/// message older than the oldest moment the guard can vouch for (security review F2; the same
/// rules as `PushSealReplayGuard` in Examples/iOS/Sources/PushSealNotificationExtension/NotificationService.swift).
///
/// - An id is kept until the message's `exp`, else `iat` + ``maxAgeSeconds`` (30 days, the
///   keys' grace window), else now + ``maxAgeSeconds``. A message whose keep-until time is not
///   after now is ``Verdict/tooOld`` (`replayTooOld`): the guard may already have forgotten it.
///   Ids are stored as the first 16 bytes of their SHA-256, in hex, never as sent.
/// - At most ``capacity`` ids are kept. When more arrive before others run out, the ones that run
///   out first are dropped early and `evictedUntil` rises to their keep-until time; every message
///   whose keep-until time is not after `evictedUntil` is then refused (``Verdict/tooOld``), so
///   a flood of new ids never makes an old one acceptable again.
/// - `vouchedSince`: after ``reset(now:)`` messages with an `iat` before it, or without `iat`,
///   are refused. A store that does not exist yet vouches from the beginning (0).
/// - Fails closed: a store that cannot be read, parsed or written throws (the extension shows
///   the original content, `replayGuardUnavailable`).
/// - Messages without `id` are not recorded (``Verdict/unchecked``); `push-seal` gives every
///   notification an `id` and an `exp`.
///
/// The store is `<container>/pushseal-replay-guard.json`:
/// `{"format":"pushseal-replay-guard","version":1,"vouchedSince":0,"evictedUntil":0,"ids":{"<32 hex digits>":<keep-until>}}`
/// (times in seconds since 1970 UTC), on PushSealSystem's private-file rules (``PrivateFile``:
/// 0600, owned by this user, read without following a link, replaced atomically with a
/// temporary file, fsync and rename), under an exclusive `flock` of `pushseal-replay-guard.lock`,
/// so two extension processes never lose an id.
public final class ReplayGuard: Sendable {
    /// What the guard says about one message.
    public enum Verdict: Sendable, Equatable {
        /// A new id, now recorded: show the message.
        case fresh
        /// No id: nothing to compare, show the message.
        case unchecked
        /// The id was recorded before (`replayed`).
        case replayed
        /// Older than the oldest moment the guard vouches for (`replayTooOld`).
        case tooOld
    }

    /// Most ids kept (5,000; about 250 KB of store).
    public static let defaultCapacity = 5000
    /// How long the id of a message without `exp` is kept after its `iat`: 30 days, in seconds.
    public static let maxAgeSeconds: Int64 = 30 * 24 * 60 * 60
    /// The store's file name inside the container.
    public static let fileName = "pushseal-replay-guard.json"
    /// The lock file's name inside the container.
    public static let lockFileName = "pushseal-replay-guard.lock"
    /// The largest store read (1 MiB).
    static let maxStoreByteCount = 1 << 20

    /// The store file.
    public var fileURL: URL { file.fileURL }
    private let file: ContainerStoreFile
    /// Most ids kept.
    public let capacity: Int

    /// Creates a guard over `<containerDirectory>/pushseal-replay-guard.json`.
    /// - Parameters:
    ///   - containerDirectory: the App Group container (an existing directory).
    ///   - capacity: ids kept, at least 1 (default 5,000).
    public init(containerDirectory: URL, capacity: Int = ReplayGuard.defaultCapacity) {
        file = ContainerStoreFile(containerDirectory: containerDirectory, stem: "pushseal-replay-guard", code: .replayCacheFailed,
                                  what: "the replay guard")
        self.capacity = max(1, capacity)
    }

    /// Checks a message and records its id when it may be shown.
    /// - Parameters:
    ///   - id: the sealed `id`, or `nil`.
    ///   - iat: the sealed `iat` (seconds since 1970 UTC), or `nil`.
    ///   - exp: the sealed `exp` (seconds since 1970 UTC), or `nil`.
    ///   - now: the device clock, seconds since 1970 UTC.
    /// - Returns: the verdict; only ``Verdict/fresh`` changes the store.
    /// - Throws: `ExtensionError` `.replayCacheFailed` when the store or its lock cannot be
    ///   opened, read, parsed or written (fail closed).
    public func check(id: String?, iat: Int64?, exp: Int64?, now: Int64) throws -> Verdict {
        guard let id else { return .unchecked }
        let keepUntil = exp ?? (iat ?? now).addingReportingOverflow(Self.maxAgeSeconds).partialValue
        guard keepUntil > now else { return .tooOld }
        let digest = try Self.digest(id)
        return try locked {
            var store = try load()
            store.ids = store.ids.filter { $0.value > now }
            if store.vouchedSince > 0, (iat ?? Int64.min) < store.vouchedSince { return .tooOld }
            guard keepUntil > store.evictedUntil else { return .tooOld }
            guard store.ids[digest] == nil else { return .replayed }
            store.ids[digest] = keepUntil
            if store.ids.count > capacity {
                let dropped = store.ids.sorted { $0.value != $1.value ? $0.value < $1.value : $0.key < $1.key }.prefix(store.ids.count - capacity)
                for (old, until) in dropped {
                    store.ids[old] = nil
                    store.evictedUntil = max(store.evictedUntil, until)
                }
            }
            try save(store)
            return .fresh
        }
    }

    /// Starts a new store that vouches only from `now` (the recovery when the store is damaged):
    /// messages with an earlier `iat`, or none, are refused from then on.
    /// - Throws: `ExtensionError` `.replayCacheFailed`.
    public func reset(now: Int64) throws {
        try locked { try save(Store(vouchedSince: now)) }
    }

    /// How many ids the store holds (expired ones included until the next check).
    /// - Throws: `ExtensionError` `.replayCacheFailed`.
    public func rememberedCount() throws -> Int {
        try locked { try load().ids.count }
    }

    /// The store's contents: times in seconds since 1970 UTC, ids by digest.
    struct Store: Equatable {
        var vouchedSince: Int64 = 0
        var evictedUntil: Int64 = 0
        var ids: [String: Int64] = [:]
    }

    /// The first 16 bytes of SHA-256 of the id's UTF-8, as 32 lower-case hex digits.
    static func digest(_ id: String) throws -> String {
        let hash: [UInt8]
        do {
            hash = try SHA256Hasher.hash(Array(id.utf8))
        } catch {
            throw ExtensionError(.replayCacheFailed, "cannot hash the notification id")
        }
        return Hex.encode(hash.prefix(16))
    }

    private func locked<T>(_ body: () throws -> T) throws -> T { try file.locked(body) }

    private func load() throws -> Store {
        guard let bytes = try file.read(maxByteCount: Self.maxStoreByteCount) else { return Store() }
        guard let store = Self.parse(bytes) else { throw file.damaged() }
        return store
    }

    /// Reads the store's JSON, or `nil` when it is not exactly the documented shape.
    static func parse(_ bytes: [UInt8]) -> Store? {
        guard case .object(let o)? = try? JSONReader.parse(bytes),
              o["format"]?.stringValue == "pushseal-replay-guard", o["version"]?.integerValue == 1,
              let vouched = o["vouchedSince"]?.integerValue, let evicted = o["evictedUntil"]?.integerValue,
              case .object(let ids)? = o["ids"] else { return nil }
        var store = Store(vouchedSince: vouched, evictedUntil: evicted)
        store.ids.reserveCapacity(ids.count)
        for m in ids {
            guard m.key.utf8.count == 32, m.key.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }),
                  let until = m.value.integerValue else { return nil }
            store.ids[m.key] = until
        }
        return store
    }

    /// The store's JSON (ids sorted, so equal stores give equal bytes).
    static func serialize(_ store: Store) -> [UInt8] {
        var text = "{\"format\":\"pushseal-replay-guard\",\"version\":1,\"vouchedSince\":\(store.vouchedSince),\"evictedUntil\":\(store.evictedUntil),\"ids\":{"
        for (i, entry) in store.ids.sorted(by: { $0.key < $1.key }).enumerated() {
            if i > 0 { text += "," }
            text += "\"\(entry.key)\":\(entry.value)"
        }
        text += "}}\n"
        return Array(text.utf8)
    }

    private func save(_ store: Store) throws {
        try file.replace(with: Self.serialize(store))
    }
}
