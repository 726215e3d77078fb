import Foundation
import Testing
import PushSealGateway
import PushSealRegistrationTokens
import PushSealSystem
import PushSealTestSupport

/// Unpadded base64url of `bytes` (RFC 7515 §2), to forge tokens the library would not mint.
func base64url(_ bytes: [UInt8]) -> String {
    Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        .replacingOccurrences(of: "=", with: "")
}

/// `POST /v1/devices` with a registration token (docs/registration.md): the token's `sub` is the
/// only recipient it registers, for the app in `aud`; every refusal is a JSON 401/403 and
/// reaches no backend.
@Suite struct GatewayRegistrationTokenTests {
    static func secret() throws -> RegistrationTokenSecret {
        try RegistrationTokenSecret(text: Array("registration-secret-for-the-gateway-tests-0123".utf8))
    }
    static let upload = #"{"registration":{"format":"pushseal-device-key","appId":"com.example.app"},"apnsDeviceToken":"ab01","apnsEnvironment":"development"}"#

    static func fixture(tokens: Bool = true) throws -> Fixture {
        let policy = tokens ? RegistrationTokenPolicy(secret: try secret(), appID: "com.example.app") : nil
        return try Fixture { $0.registrationTokens = policy }
    }

    static func mint(_ recipient: String = "phone-7", app: String = "com.example.app", issuedAt: Int64 = unixTimeSeconds(),
                     lifetime: Int64 = 3600, secret: RegistrationTokenSecret? = nil) throws -> String {
        try RegistrationToken.mint(recipient: recipient, appID: app, lifetimeSeconds: lifetime, issuedAt: issuedAt, secret: try secret ?? Self.secret())
    }

    /// A token with header `header`, signed with HMAC-SHA256 under the test secret anyway.
    static func forged(header: String) throws -> String {
        let now = unixTimeSeconds()
        let claims = #"{"sub":"phone-7","aud":"com.example.app","iat":\#(now),"exp":\#(now + 600),"jti":"forged"}"#
        let input = base64url(Array(header.utf8)) + "." + base64url(Array(claims.utf8))
        let valid = try mint()
        // The signature of a valid token over another input: any bytes serve, the alg check comes first.
        return input + "." + String(valid.split(separator: ".")[2])
    }

    @Test("a token registers its sub (201, then 200 for the same record until exp), with or without ?recipient= naming it")
    func tokenRegistersItsSubject() throws {
        let f = try Self.fixture()
        defer { f.gateway.stop() }
        let token = try Self.mint()
        let first = try f.post("/v1/devices", key: token, json: Self.upload)
        #expect(first.status == 201, "\(first.text)")
        #expect(first.json?["recipient"] as? String == "phone-7")
        let again = try f.post("/v1/devices?recipient=phone-7", key: token, json: Self.upload)
        #expect(again.status == 200, "reused until exp: idempotent for the same record")
        #expect(f.backend.registeredRecipients == ["phone-7"])
    }

    @Test("refused: expired, wrong aud, another secret, alg none/HS512/RS256, garbage, a sub with /, tokens not enabled → 401; another recipient or app → 403; nothing stored")
    func everyRefusalStoresNothing() throws {
        let f = try Self.fixture()
        defer { f.gateway.stop() }
        let now = unixTimeSeconds()
        let other = try RegistrationTokenSecret(text: Array("another-secret-another-secret-another-secret".utf8))
        let unauthorized: [(String, String)] = [
            ("expired", try Self.mint(issuedAt: now - 7200, lifetime: 3600)),
            ("wrongAudience", try Self.mint(app: "com.example.other")),
            ("badSignature", try Self.mint(secret: other)),
            ("unsupportedAlgorithm", try Self.forged(header: #"{"alg":"none","typ":"JWT"}"#)),
            ("unsupportedAlgorithm", try Self.forged(header: #"{"alg":"HS512","typ":"JWT"}"#)),
            ("unsupportedAlgorithm", try Self.forged(header: #"{"alg":"RS256","typ":"JWT"}"#)),
            ("malformedToken", "eyJhbGciOiJIUzI1NiJ9.e30.!!!"),
            ("notYetValid", try Self.mint(issuedAt: now + 3600)),
            // A well-signed token whose sub the token format allows but a recipient name does not.
            ("invalidClaim", try Self.mint("a/b")),
        ]
        for (reason, token) in unauthorized {
            let r = try f.post("/v1/devices", key: token, json: Self.upload)
            #expect(r.status == 401 && r.errorCode == "invalidRegistrationToken", "\(reason): \(r.status) \(r.text)")
            #expect(r.text.contains(reason), "\(reason): \(r.text)")
            #expect(!r.text.contains(token), "the token is never echoed")
            #expect(r.header("www-authenticate")?.contains("invalid_token") == true)
        }
        let token = try Self.mint()
        let elsewhere = try f.post("/v1/devices?recipient=phone-8", key: token, json: Self.upload)
        #expect(elsewhere.status == 403 && elsewhere.errorCode == "forbidden", "\(elsewhere.text)")
        let otherApp = #"{"registration":{"format":"pushseal-device-key","appId":"com.example.other"},"apnsDeviceToken":"ab01"}"#
        let app = try f.post("/v1/devices", key: token, json: otherApp)
        #expect(app.status == 403 && app.errorCode == "forbidden", "\(app.text)")
        let noApp = try f.post("/v1/devices", key: token, json: #"{"registration":{},"apnsDeviceToken":"ab01"}"#)
        #expect(noApp.status == 403)
        // A registration token is not an API key: it sends nothing.
        #expect(try f.post("/v1/notifications", key: token, json: oneNotification).status == 401)
        #expect(f.backend.registeredRecipients.isEmpty)
        #expect(f.backend.enqueueCalls == 0)

        let off = try Self.fixture(tokens: false)
        defer { off.gateway.stop() }
        let r = try off.post("/v1/devices", key: token, json: Self.upload)
        #expect(r.status == 401 && r.errorCode == "invalidRegistrationToken" && r.text.contains("--registration-token-secret"))
        #expect(off.backend.registeredRecipients.isEmpty)
    }
}
