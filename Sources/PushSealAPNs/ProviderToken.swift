public import PushSealCrypto
import PushSealJSON
import PushSealSystem

/// An APNs provider key: the `.p8` signing key Apple issued, its 10-character key id and the
/// team id it belongs to.
public struct ProviderKey: Sendable {
    /// The key id (`kid`), 10 characters A-Z, 0-9.
    public let keyID: String
    /// The team id (`iss`), 10 characters A-Z, 0-9.
    public let teamID: String
    /// The P-256 signing key.
    public let signingKey: P256SigningKey

    /// A key from its parts.
    /// - Throws: `APNsError` `.badProviderKey` when `keyID` or `teamID` is not 10 characters of A-Z, 0-9.
    public init(keyID: String, teamID: String, signingKey: P256SigningKey) throws {
        for (name, value) in [("key id", keyID), ("team id", teamID)] {
            guard value.utf8.count == 10, value.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) }) else {
                throw APNsError(.badProviderKey, "the \(name) must be 10 characters A-Z and 0-9 (Apple's format), got \(value.utf8.count) characters")
            }
        }
        self.keyID = keyID
        self.teamID = teamID
        self.signingKey = signingKey
    }

    /// Reads an Apple `.p8` file (PKCS#8 PEM, P-256). The file's bytes are wiped after parsing.
    /// - Throws: `APNsError` `.badProviderKey` when the file cannot be read, or is not a
    ///   PKCS#8 P-256 private key, or the ids are malformed.
    public init(p8Path: String, keyID: String, teamID: String) throws {
        var bytes = try ProviderKey.readKeyFile(p8Path)
        defer { SecretBytes.wipe(&bytes) }
        let secret = SecretBytes(copying: bytes)
        do {
            try self.init(keyID: keyID, teamID: teamID, signingKey: try P256SigningKey(pkcs8: secret))
        } catch let error as CryptoError {
            throw APNsError(.badProviderKey, "'\(p8Path.suffix(120))' is not an APNs .p8 key: \(error.reason)")
        }
    }
}

extension ProviderKey {
    /// Why a `.p8` file could not be used, so that every tool answers it with the same exit
    /// code (sysexits).
    public enum FileFault: Sendable, Equatable {
        /// The file is missing or cannot be read (EX_NOINPUT, 66).
        case unreadable
        /// The file breaks the private-file rules: readable by group or others, not the user's,
        /// or a symbolic link (EX_NOPERM, 77).
        case notPrivate
        /// The file was read but is not a PKCS#8 P-256 key, or the key id or team id is
        /// malformed (EX_DATAERR, 65).
        case notAKey
    }

    /// The fault behind `error`, thrown by ``init(p8Path:keyID:teamID:)`` for the file at `path`.
    public static func fileFault(of error: APNsError, path: String) -> FileFault {
        let missing: Bool
        do { missing = try PrivateFile.status(followingLinks: path) == nil } catch { missing = false }
        if missing || error.reason.hasPrefix(unreadablePrefix) { return .unreadable }
        if error.reason.hasPrefix(notPrivatePrefix) { return .notPrivate }
        return .notAKey
    }

    /// How the reasons of ``readKeyFile(_:)``'s errors begin (``fileFault(of:path:)`` tells them apart).
    static let unreadablePrefix = "cannot read the .p8 key file "
    static let notPrivatePrefix = "the .p8 key file "

    /// Longest `.p8` file read, in bytes (Apple's are about 250).
    static let maxKeyFileByteCount = 16 * 1024

    /// The bytes of a key file (at most 16 KiB), held to the private-file rules like every
    /// secret file of the toolkit (``PrivateFile``): a regular file, not a symbolic link,
    /// owned by the user, mode 0600 (no group or other bits).
    /// - Throws: `APNsError` `.badProviderKey` naming the file and the system's reason, or
    ///   the rule it breaks (`… is accessible by group or others (mode 644)`).
    static func readKeyFile(_ path: String) throws -> [UInt8] {
        func failure(_ e: SystemError) -> APNsError {
            if e.errno == 0 { return APNsError(.badProviderKey, "\(notPrivatePrefix)\(e.reason)") }
            return APNsError(.badProviderKey, "\(unreadablePrefix)'\(path.suffix(120))': \(errnoText(e.errno).lowercased())")
        }
        let file: FileDescriptor
        do {
            file = try PrivateFile.open(path, .readOnly)
        } catch let e as SystemError {
            throw failure(e)
        }
        // One buffer, filled in place (no chunk copies of the key left behind), wiped by the caller.
        var out: [UInt8]
        do {
            out = try file.read(upToCount: maxKeyFileByteCount + 1)
        } catch let e as SystemError {
            throw failure(e)
        }
        if out.count > maxKeyFileByteCount {
            SecretBytes.wipe(&out)
            throw APNsError(.badProviderKey, "'\(path.suffix(120))' is over 16 KiB: not an APNs .p8 key")
        }
        return out
    }
}

/// One provider token: an ES256 JWT (RFC 7519, RFC 7518 §3.4) with header `{"alg":"ES256","kid"}`
/// and claims `{"iss","iat"}`, signed with the `.p8` key, signature raw `r‖s` in base64url.
public struct ProviderToken: Sendable, Hashable {
    /// The compact JWT `header.claims.signature`.
    public let jwt: String
    /// `iat`: seconds since 1970, UTC (from the wall clock at minting).
    public let issuedAt: Int64
    /// Counts the tokens a cache minted, from 1.
    public let generation: Int
    /// When it was minted, on the monotonic clock (nanoseconds).
    public let mintedAtNanoseconds: UInt64

    /// Signs a new token for `key` issued at `issuedAt`.
    /// - Throws: `CryptoError` `.internalFailure` if OpenSSL fails.
    public static func mint(key: ProviderKey, issuedAt: Int64, generation: Int = 1, mintedAtNanoseconds: UInt64 = 0) throws -> ProviderToken {
        let header = APNsText.base64url(Array("{\"alg\":\"ES256\",\"kid\":\"\(key.keyID)\"}".utf8))
        let claims = APNsText.base64url(Array("{\"iss\":\"\(key.teamID)\",\"iat\":\(issuedAt)}".utf8))
        let signingInput = header + "." + claims
        let signature = try key.signingKey.sign(Array(signingInput.utf8))
        return ProviderToken(jwt: signingInput + "." + APNsText.base64url(signature), issuedAt: issuedAt,
                             generation: generation, mintedAtNanoseconds: mintedAtNanoseconds)
    }

    /// What a verified token says.
    public struct Claims: Sendable, Hashable {
        /// `alg` (always `ES256` when verified).
        public let algorithm: String
        /// `kid`.
        public let keyID: String
        /// `iss`.
        public let teamID: String
        /// `iat`, seconds since 1970.
        public let issuedAt: Int64
    }

    /// Checks a JWT's ES256 signature with `publicKey` and returns its header and claims, or
    /// `nil` when it is not three base64url parts, not `ES256`, or the signature does not verify.
    public static func verify(_ jwt: String, publicKey: P256VerifyingKey) -> Claims? {
        let parts = jwt.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerBytes = APNsText.base64urlDecode(String(parts[0])),
              let claimBytes = APNsText.base64urlDecode(String(parts[1])),
              let signature = APNsText.base64urlDecode(String(parts[2])),
              case .object(let header)? = try? JSONReader.parse(headerBytes),
              case .object(let claims)? = try? JSONReader.parse(claimBytes),
              let alg = header["alg"]?.stringValue, alg == "ES256", let kid = header["kid"]?.stringValue,
              let iss = claims["iss"]?.stringValue, let iat = claims["iat"]?.integerValue,
              publicKey.isValidSignature(signature, for: Array((parts[0] + "." + parts[1]).utf8)) else { return nil }
        return Claims(algorithm: alg, keyID: kid, teamID: iss, issuedAt: iat)
    }
}

/// The one provider token of a (team, key), shared by every connection of a client.
///
/// Rules (Apple, "Establishing a token-based connection to APNs"): a new token at most once per
/// ``minimumRefreshSeconds`` (20 minutes; more often APNs answers 429
/// `TooManyProviderTokenUpdates`), and none used ``maximumAgeSeconds`` (60 minutes) after its
/// `iat` (APNs answers 403 `ExpiredProviderToken`). Ages are measured on the monotonic clock, so a
/// wall-clock step neither keeps a stale token nor mints early; `iat` is the wall clock at minting.
///
/// Thread-safe (one lock).
public final class ProviderTokenCache: Sendable {
    /// Shortest time between two minted tokens, in seconds (20 minutes).
    public static let minimumRefreshSeconds: Int64 = 20 * 60
    /// A token is never used this many seconds after its `iat` (60 minutes).
    public static let maximumAgeSeconds: Int64 = 60 * 60

    /// The key tokens are signed with.
    public let key: ProviderKey
    /// A token this old (seconds, on the monotonic clock) is replaced before use: 50 minutes by
    /// default, within 20…55 minutes.
    public let refreshAfterSeconds: Int64
    private let clock: any APNsClock
    private let state = Locked<(token: ProviderToken?, mints: Int)>((nil, 0))
    /// Where the fleet's token lives (several instances, one token per key); `nil`: this cache mints.
    let shared: (any SharedProviderTokens)?

    /// Creates an empty cache; the first ``current()`` mints.
    /// - Parameters:
    ///   - refreshAfterSeconds: clamped to 20…55 minutes.
    ///   - clock: the system clock unless a test injects one.
    ///   - shared: the fleet's token store (PushSealServer's outbox: a database row); `nil`: mint here.
    public init(key: ProviderKey, refreshAfterSeconds: Int64 = 50 * 60, clock: any APNsClock = SystemAPNsClock(),
                shared: (any SharedProviderTokens)? = nil) {
        self.key = key
        self.shared = shared
        self.refreshAfterSeconds = min(max(refreshAfterSeconds, Self.minimumRefreshSeconds), Self.maximumAgeSeconds - 5 * 60)
        self.clock = clock
    }

    /// How many tokens were minted so far.
    public var mintCount: Int { state.withLock { $0.mints } }

    /// The token to use now: the cached one while younger than ``refreshAfterSeconds``, else a
    /// new one.
    /// - Throws: `CryptoError` if signing fails.
    public func current() throws -> ProviderToken {
        try state.withLock { s in
            let now = clock.monotonicNanoseconds()
            if let t = s.token, age(t, now) < refreshAfterSeconds { return t }
            guard let t = try mint(&s, now, rejected: nil) else {
                throw APNsError(.badProviderKey, "the shared provider token store gave no token")
            }
            return t
        }
    }

    /// A fresh token after APNs answered `ExpiredProviderToken` to a request signed with
    /// generation `rejected`: the current token when it is newer than that one; a new one when
    /// the current token is at least 20 minutes old; else `nil` (minting again would break the
    /// 20-minute rule: the clock of this machine or of APNs is off, and the request fails).
    /// - Throws: `CryptoError` if signing fails.
    public func refresh(afterRejecting rejected: Int) throws -> ProviderToken? {
        try state.withLock { s in
            let now = clock.monotonicNanoseconds()
            if let t = s.token {
                if t.generation != rejected && age(t, now) < refreshAfterSeconds { return t }
                if shared == nil, age(t, now) < Self.minimumRefreshSeconds { return nil }
            }
            return try mint(&s, now, rejected: rejected)
        }
    }

    private func age(_ token: ProviderToken, _ now: UInt64) -> Int64 {
        Int64((now &- token.mintedAtNanoseconds) / 1_000_000_000)
    }

    private func mint(_ s: inout (token: ProviderToken?, mints: Int), _ now: UInt64, rejected: Int?) throws -> ProviderToken? {
        if let shared {
            let key = self.key
            var mintedHere = false
            guard let f = try shared.token(key: key, refreshAfterSeconds: refreshAfterSeconds, rejectedGeneration: rejected, mint: { iat in
                mintedHere = true
                return try ProviderToken.mint(key: key, issuedAt: iat).jwt
            }) else { return nil }
            let age = UInt64(max(0, clock.wallSeconds() - f.issuedAt)) * 1_000_000_000
            let t = ProviderToken(jwt: f.jwt, issuedAt: f.issuedAt, generation: f.generation, mintedAtNanoseconds: now > age ? now - age : 0)
            s.token = t
            if mintedHere { s.mints += 1 }
            return t
        }
        let t = try ProviderToken.mint(key: key, issuedAt: clock.wallSeconds(), generation: (s.token?.generation ?? 0) + 1, mintedAtNanoseconds: now)
        s.token = t
        s.mints += 1
        return t
    }
}
