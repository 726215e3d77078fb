import PushSealHTTP
import PushSealServer
public import PushSealRegistrationTokens
import PushSealSystem

/// How `POST /v1/devices` accepts registration tokens (docs/registration.md): HS256 JWTs
/// `{sub, aud, iat, exp, jti}` a customer's backend mints under a secret it shares with the
/// gateway (`push-gateway serve --registration-token-secret FILE`).
///
/// A verified token lets its bearer register recipient `sub` of app `aud` (the gateway's app)
/// and nothing else. It may be presented again until `exp`: a retry after a lost answer, or a
/// second upload of the same installation within the token's life, registers the same recipient
/// (idempotent for the same record); `jti` is not remembered. Mint tokens with the shortest
/// lifetime that covers the app's retries (docs/registration.md "Reuse").
public struct RegistrationTokenPolicy: Sendable {
    /// The shared secret.
    public let secret: RegistrationTokenSecret
    /// The app id tokens must name in `aud` (the gateway's `--app-id`).
    public let appID: String
    /// Clock difference tolerated on `iat` and `exp`, seconds.
    public let leewaySeconds: Int64

    /// A policy for `appID` under `secret`.
    /// - Parameters:
    ///   - secret: the secret loaded from the 0600 file (``RegistrationTokenSecret/load(path:)``).
    ///   - appID: the app id `aud` must hold.
    ///   - leewaySeconds: default 60.
    public init(secret: RegistrationTokenSecret, appID: String, leewaySeconds: Int64 = RegistrationToken.defaultLeewaySeconds) {
        self.secret = secret
        self.appID = appID
        self.leewaySeconds = leewaySeconds
    }

    /// `true` when a bearer credential has a JWT's form (three parts separated by `.`), not an API key's.
    static func looksLikeToken(_ text: String) -> Bool {
        !text.hasPrefix("psk_") && text.utf8.lazy.filter { $0 == UInt8(ascii: ".") }.count == 2
    }

    /// The verified claims of `text`, whose `sub` is a recipient name this gateway can register
    /// (`KeyID.validateRecipient`: the token format allows a `/`, a recipient name does not).
    /// - Throws: ``HTTPError`` 401 `invalidRegistrationToken` naming the library's reason
    ///   (`expired`, `wrongAudience`, `badSignature`, `unsupportedAlgorithm`, …, and
    ///   `invalidClaim` for a `sub` that is no recipient name); never the token.
    func verify(_ text: String, now: Int64) throws -> RegistrationToken {
        do {
            let token = try RegistrationToken.verify(text, appID: appID, secret: secret, now: now, leewaySeconds: leewaySeconds)
            guard (try? KeyID.validateRecipient(token.recipient)) != nil else {
                throw RegistrationTokenError(.invalidClaim, "the claim sub is not a recipient name (1 to 255 bytes without control characters or /)")
            }
            return token
        } catch let e as RegistrationTokenError {
            throw HTTPError(401, "invalidRegistrationToken", "the registration token is refused (\(e.code.name)): \(e.reason)",
                            headers: [("WWW-Authenticate", "Bearer realm=\"push-gateway\", error=\"invalid_token\"")])
        } catch {
            throw HTTPError(401, "invalidRegistrationToken", "the registration token is refused",
                            headers: [("WWW-Authenticate", "Bearer realm=\"push-gateway\", error=\"invalid_token\"")])
        }
    }
}
