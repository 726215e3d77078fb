public import PushSealRegistry
import PushSealCrypto
import PushSealSystem

/// Where the gateway looks API keys up (the registry in production).
public protocol APIKeyLookup: Sendable {
    /// The record of the unrevoked key whose secret's SHA-256 is `keySHA256`, or `nil`.
    func gatewayAPIKey(sha256 keySHA256: [UInt8]) throws -> GatewayAPIKeyRecord?
}

extension PostgresKeyStore: APIKeyLookup {}

/// push-gateway API keys: `psk_<id>_<secret>`, `id` 16 hex digits (public, in logs and lists),
/// `secret` 64 hex digits (32 random bytes, shown once; the registry holds its SHA-256 only).
public enum APIKey {
    /// The scopes a key may have.
    public static let scopes = ["send", "register", "admin"]

    /// A new key: its text (show it once, then forget it) and its record.
    /// - Parameters:
    ///   - name: a name for people, 1–128 characters.
    ///   - scopes: any of ``scopes``, at least one.
    ///   - now: seconds since 1970.
    /// - Returns: the key's text, its record and the SHA-256 to store.
    public static func generate(name: String, scopes: [String], now: Int64) -> (text: String, record: GatewayAPIKeyRecord, sha256: [UInt8]) {
        let id = Hex.encode(SecureRandom.bytes(8))
        var secret = SecureRandom.bytes(32)
        defer { SecretBytes.wipe(&secret) }
        let text = "psk_\(id)_\(Hex.encode(secret))"
        let record = GatewayAPIKeyRecord(id: id, name: name, scopes: scopes, createdAt: now, revokedAt: nil)
        return (text, record, (try? SHA256Hasher.hash(secret)) ?? [])
    }

    /// The SHA-256 of a key's secret, `nil` when `text` is not a key's form.
    public static func sha256(of text: String) -> [UInt8]? { parse(text)?.sha256 }

    /// The id a key's text names (16 lower-case hex digits) and the SHA-256 of its secret,
    /// `nil` when `text` is not a key's form (`psk_<id>_<64 hex digits>`).
    public static func parse(_ text: String) -> (id: String, sha256: [UInt8])? {
        let parts = text.split(separator: "_", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0] == "psk", parts[1].utf8.count == 16, parts[2].utf8.count == 64,
              Hex.decode(String(parts[1])) != nil, var secret = Hex.decode(String(parts[2])) else { return nil }
        defer { SecretBytes.wipe(&secret) }
        guard let hash = try? SHA256Hasher.hash(secret) else { return nil }
        return (String(parts[1]), hash)
    }
}

/// Checks bearer keys against a ``APIKeyLookup``, caching each answer for a few seconds (a
/// revocation reaches every instance within ``cacheSeconds``). A key is found by its secret's
/// SHA-256 and must also name its own id: `psk_<another key's id>_<secret>` is refused, so the id
/// an operator reads in a leaked key is the key the gateway took it for.
///
/// Keys found and keys not found are cached apart: a flood of made-up keys (each one database
/// lookup, before any rate limit can apply) fills and clears only the second cache, never
/// evicting the keys in use.
public final class APIKeyAuthenticator: Sendable {
    /// How long an answer (found or not) is reused, seconds.
    public let cacheSeconds: Double
    private let lookup: any APIKeyLookup
    private struct Entry { var record: GatewayAPIKeyRecord?; var fetchedNanoseconds: UInt64 }
    private let found = Locked<[[UInt8]: Entry]>([:])
    private let notFound = Locked<[[UInt8]: Entry]>([:])
    /// Entries a cache holds before it is emptied (a deployment has a handful of keys).
    public static let maxCachedEntries = 10_000

    /// Creates an authenticator.
    /// - Parameters:
    ///   - lookup: the registry.
    ///   - cacheSeconds: how long an answer is reused (5 s default).
    public init(lookup: any APIKeyLookup, cacheSeconds: Double = 5) {
        self.lookup = lookup
        self.cacheSeconds = cacheSeconds
    }

    /// How long after its last successful lookup a key may still be accepted while the registry
    /// cannot be asked (``record(for:allowStale:)``): 10 minutes.
    public static let staleLimitSeconds: Double = 600

    /// The record of the key `text`, or `nil` for an unknown, revoked or malformed key, or one
    /// whose id is not the id of the key its secret belongs to.
    ///
    /// With `allowStale` (the `admin` scope: `/metrics` with `--metrics-key`), while the registry
    /// cannot be asked (`RegistryError` `.unavailable`) a key this instance found at its last
    /// lookup, at most ``staleLimitSeconds`` ago, is still accepted, so `/metrics` keeps
    /// answering through an outage and `pushseal_gateway_database_up 0` reaches the scraper. A
    /// key whose last lookup found it revoked, unknown or failing its tag is never accepted so,
    /// nor is one never found; other scopes never use it (their routes need the database anyway).
    /// - Throws: the lookup's error (the registry is down, and no stale record applies; a row
    ///   failing its tag: `.corrupt`).
    public func record(for text: String, allowStale: Bool = false) throws -> GatewayAPIKeyRecord? {
        guard let (id, hash) = APIKey.parse(text) else { return nil }
        let now = monotonicNanoseconds()
        func fresh(_ e: Entry?) -> Entry? {
            guard let e, Double(now &- e.fetchedNanoseconds) / 1e9 < cacheSeconds else { return nil }
            return e
        }
        let record: GatewayAPIKeyRecord?
        if let hit = fresh(found.withLock({ $0[hash] })) ?? fresh(notFound.withLock({ $0[hash] })) {
            record = hit.record
        } else {
            do {
                record = try lookup.gatewayAPIKey(sha256: hash)
            } catch let e as RegistryError where e.code == .unavailable {
                guard allowStale, let stale = found.withLock({ $0[hash] }), let r = stale.record, r.id == id,
                      Double(now &- stale.fetchedNanoseconds) / 1e9 < Self.staleLimitSeconds else { throw e }
                return r
            } catch {
                // A row failing its tag: whatever was found before is not kept.
                found.withLock { _ = $0.removeValue(forKey: hash) }
                throw error
            }
            let cache = record == nil ? notFound : found
            cache.withLock { all in
                if all.count >= Self.maxCachedEntries { all.removeAll() }
                all[hash] = Entry(record: record, fetchedNanoseconds: now)
            }
            if record != nil {
                notFound.withLock { _ = $0.removeValue(forKey: hash) }
            } else {
                found.withLock { _ = $0.removeValue(forKey: hash) }  // revoked: never accepted stale
            }
        }
        guard let record, record.id == id else { return nil }
        return record
    }
}
