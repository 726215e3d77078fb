import PushSealCrypto
import PushSealJSON
import PushSealSystem
import PushSealWire

/// A registration token: an HS256 JSON Web Token (RFC 7519, RFC 7515 compact form) a
/// customer's backend mints, after its own login, for one recipient (one app installation) of
/// one app, and the app presents once to register its device key and APNs token
/// (`POST /v1/devices`). docs/registration.md is the normative description; any JWT library
/// mints it.
///
/// Header `{"alg":"HS256","typ":"JWT"}` (`typ` optional; any `alg` but `HS256` is refused).
/// Claims (all required): `sub` the recipient, `aud` the app id (a string, or an array holding
/// it), `iat` and `exp` in seconds since 1970 UTC with `exp - iat` in 1...86400 (24 h),
/// `jti` a unique token id (1–128 characters). Other claims are ignored.
public struct RegistrationToken: Sendable, Equatable {
    /// The longest lifetime accepted (`exp - iat`): 86,400 s (24 hours).
    public static let maximumLifetimeSeconds: Int64 = 86_400
    /// The lifetime ``mint(recipient:appID:lifetimeSeconds:issuedAt:tokenID:secret:)`` uses by default: 3,600 s.
    public static let defaultLifetimeSeconds: Int64 = 3_600
    /// Clock difference tolerated between minter and verifier on `iat` and `exp`: 60 s.
    public static let defaultLeewaySeconds: Int64 = 60
    /// The longest token read: 4,096 characters.
    public static let maximumByteCount = 4_096
    /// The longest `sub`, `aud` or `jti`: 128 UTF-8 bytes (recipients and app ids are shorter).
    public static let maximumClaimByteCount = 128

    /// `sub`: the recipient (one app installation) the token registers, chosen by the backend.
    public let recipient: String
    /// `aud`: the app id (bundle id) the token is for.
    public let appID: String
    /// `iat`: when it was minted, seconds since 1970 UTC.
    public let issuedAt: Int64
    /// `exp`: when it stops being accepted, seconds since 1970 UTC.
    public let expiresAt: Int64
    /// `jti`: a unique token id (the gateway may remember it to refuse a second use).
    public let tokenID: String

    /// The claims as they are, unchecked.
    public init(recipient: String, appID: String, issuedAt: Int64, expiresAt: Int64, tokenID: String) {
        self.recipient = recipient
        self.appID = appID
        self.issuedAt = issuedAt
        self.expiresAt = expiresAt
        self.tokenID = tokenID
    }

    /// Mints a token for `recipient` of `appID`.
    /// - Parameters:
    ///   - recipient: `sub`, 1–128 UTF-8 bytes without control characters.
    ///   - appID: `aud`, same rules.
    ///   - lifetimeSeconds: `exp - iat`, 1...86,400 (default 3,600).
    ///   - issuedAt: `iat` in seconds since 1970 UTC.
    ///   - tokenID: `jti`; default 22 characters of base64url from 16 random bytes.
    ///   - secret: the shared secret.
    /// - Returns: the compact JWT `header.claims.signature`.
    /// - Throws: ``RegistrationTokenError`` `.invalidClaim`, `.lifetimeTooLong`; `CryptoError` from HMAC.
    public static func mint(recipient: String, appID: String, lifetimeSeconds: Int64 = defaultLifetimeSeconds, issuedAt: Int64,
                            tokenID: String? = nil, secret: RegistrationTokenSecret) throws -> String {
        let jti = tokenID ?? newTokenID()
        let token = RegistrationToken(recipient: recipient, appID: appID, issuedAt: issuedAt,
                                      expiresAt: issuedAt &+ lifetimeSeconds, tokenID: jti)
        try token.checkClaims()
        guard lifetimeSeconds > 0, lifetimeSeconds <= maximumLifetimeSeconds else {
            throw RegistrationTokenError(.lifetimeTooLong, "a registration token lives 1 to \(maximumLifetimeSeconds) seconds (24 h), asked for \(lifetimeSeconds)")
        }
        let header = try JSONWriter.serialize(.object(JSONObject([("alg", .string("HS256")), ("typ", .string("JWT"))])))
        let claims = try JSONWriter.serialize(.object(JSONObject([
            ("sub", .string(recipient)), ("aud", .string(appID)), ("iat", .integer(issuedAt)),
            ("exp", .integer(token.expiresAt)), ("jti", .string(jti)),
        ])))
        let signingInput = base64url(header) + "." + base64url(claims)
        let signature = try HMACSHA256.authenticate(Array(signingInput.utf8), key: secret.key)
        return signingInput + "." + base64url(signature)
    }

    /// Verifies a token for `appID` and returns its claims.
    ///
    /// In order: three base64url parts; the header a JSON object with `alg` `HS256`; the
    /// signature (HMAC-SHA256 of `header.claims` under the secret, compared in constant time);
    /// then the claims: types, `aud`, lifetime, `iat` and `exp` against `now` ± `leewaySeconds`.
    /// Stateless: remembering `jti` to refuse a second use is the caller's choice.
    /// - Parameters:
    ///   - token: the compact JWT (at most 4,096 characters).
    ///   - appID: the app id the caller serves; `aud` must be it.
    ///   - secret: the shared secret.
    ///   - now: seconds since 1970 UTC.
    ///   - leewaySeconds: clock difference tolerated (default 60).
    /// - Returns: the verified claims.
    /// - Throws: ``RegistrationTokenError`` `.malformedToken`, `.unsupportedAlgorithm`,
    ///   `.badSignature`, `.wrongAudience`, `.lifetimeTooLong`, `.expired`, `.notYetValid`,
    ///   `.invalidClaim`; `CryptoError` from HMAC.
    public static func verify(_ token: String, appID: String, secret: RegistrationTokenSecret, now: Int64,
                              leewaySeconds: Int64 = defaultLeewaySeconds) throws -> RegistrationToken {
        guard token.utf8.count <= maximumByteCount else { throw malformed("the token is longer than \(maximumByteCount) characters") }
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else { throw malformed("a token is three base64url parts separated by '.', got \(parts.count)") }
        let header = try object(parts[0], "header")
        guard header["alg"]?.stringValue == "HS256" else {
            let alg = header["alg"]?.stringValue.map { "\"\($0.prefix(32))\"" } ?? "missing"
            throw RegistrationTokenError(.unsupportedAlgorithm, "the token's alg is \(alg): only HS256 is accepted")
        }
        if let typ = header["typ"], typ.stringValue?.uppercased() != "JWT" {
            throw malformed("the token's typ is not JWT")
        }
        guard let signature = decode(parts[2]) else { throw malformed("the signature is not base64url") }
        let signingInput = Array(token.utf8.prefix(parts[0].utf8.count + 1 + parts[1].utf8.count))
        var expected = try HMACSHA256.authenticate(signingInput, key: secret.key)
        defer { SecretBytes.wipe(&expected) }
        guard ConstantTime.equals(expected, signature) else {
            throw RegistrationTokenError(.badSignature, "the token's signature does not verify under the registration token secret")
        }
        let claims = try object(parts[1], "claims")
        guard let sub = claims["sub"]?.stringValue else { throw malformed("the claim sub is missing or not a string") }
        guard let iat = claims["iat"]?.integerValue else { throw malformed("the claim iat is missing or not an integer") }
        guard let exp = claims["exp"]?.integerValue else { throw malformed("the claim exp is missing or not an integer") }
        guard let jti = claims["jti"]?.stringValue else { throw malformed("the claim jti is missing or not a string") }
        let audiences: [String]
        switch claims["aud"] {
        case .string(let a)?: audiences = [a]
        case .array(let list)?:
            audiences = list.compactMap(\.stringValue)
            guard audiences.count == list.count else { throw malformed("the claim aud holds a value that is not a string") }
        default: throw malformed("the claim aud is missing or not a string")
        }
        guard audiences.contains(appID) else {
            throw RegistrationTokenError(.wrongAudience, "the token is for \(audiences.map { "\"\($0.prefix(64))\"" }.joined(separator: ", ")), not \(appID)")
        }
        let verified = RegistrationToken(recipient: sub, appID: appID, issuedAt: iat, expiresAt: exp, tokenID: jti)
        try verified.checkClaims()
        guard exp > iat, exp - iat <= maximumLifetimeSeconds else {
            throw RegistrationTokenError(.lifetimeTooLong, "the token lives \(exp &- iat) s (exp - iat): 1 to \(maximumLifetimeSeconds) s are accepted")
        }
        guard now <= exp &+ leewaySeconds else {
            throw RegistrationTokenError(.expired, "the token expired at \(exp) (now \(now))", suggestion: "ask the backend for a new registration token")
        }
        guard iat <= now &+ leewaySeconds else {
            throw RegistrationTokenError(.notYetValid, "the token is issued at \(iat), in the future (now \(now)): check the clocks")
        }
        return verified
    }

    /// A fresh `jti`: 22 characters of unpadded base64url from 16 random bytes (libsodium).
    public static func newTokenID() -> String { base64url(SecureRandom.bytes(16)) }

    /// Checks `sub`, `aud` and `jti`: 1–128 UTF-8 bytes, no control characters.
    /// - Throws: ``RegistrationTokenError`` `.invalidClaim`.
    public func checkClaims() throws {
        for (name, value) in [("sub", recipient), ("aud", appID), ("jti", tokenID)] {
            let count = value.utf8.count
            guard count > 0, count <= Self.maximumClaimByteCount, !value.unicodeScalars.contains(where: { $0.value < 32 || $0.value == 127 }) else {
                throw RegistrationTokenError(.invalidClaim, "the claim \(name) must be 1 to \(Self.maximumClaimByteCount) bytes without control characters")
            }
        }
    }

    private static func malformed(_ reason: String) -> RegistrationTokenError {
        RegistrationTokenError(.malformedToken, reason)
    }

    /// A base64url part decoded and parsed as a JSON object.
    private static func object(_ part: Substring, _ what: String) throws -> JSONValue {
        guard let bytes = decode(part) else { throw malformed("the \(what) is not base64url") }
        guard let value = try? JSONReader.parse(bytes, limits: .init(maxByteCount: maximumByteCount, maxDepth: 8)),
              value.objectValue != nil else { throw malformed("the \(what) is not a JSON object") }
        return value
    }

    /// Unpadded base64url (RFC 4648 §5, RFC 7515 §2) of public bytes.
    static func base64url(_ bytes: [UInt8]) -> String {
        String(decoding: urlSafe(Array(WireBase64.encode(bytes).utf8)), as: UTF8.self)
    }

    /// Standard padded base64 text turned into unpadded base64url: `+` → `-`, `/` → `_`, `=` dropped.
    static func urlSafe(_ standard: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(standard.count)
        for c in standard where c != UInt8(ascii: "=") {
            out.append(c == UInt8(ascii: "+") ? UInt8(ascii: "-") : c == UInt8(ascii: "/") ? UInt8(ascii: "_") : c)
        }
        return out
    }

    /// Strict unpadded base64url: only `A–Z a–z 0–9 - _`, decoded by ``WireBase64``; nil otherwise.
    static func decode(_ part: Substring) -> [UInt8]? {
        let allowed = part.utf8.allSatisfy { c in
            (c >= UInt8(ascii: "A") && c <= UInt8(ascii: "Z")) || (c >= UInt8(ascii: "a") && c <= UInt8(ascii: "z"))
                || (c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9")) || c == UInt8(ascii: "-") || c == UInt8(ascii: "_")
        }
        guard allowed, !part.isEmpty else { return nil }
        // Translated to the standard alphabet so WireBase64 reads it whatever characters occur.
        let standard = String(decoding: part.utf8.map { $0 == UInt8(ascii: "-") ? UInt8(ascii: "+") : $0 == UInt8(ascii: "_") ? UInt8(ascii: "/") : $0 }, as: UTF8.self)
        return try? WireBase64.decode(standard)
    }
}
