import Foundation
import PushSealRegistrationTokens
import PushSealSystem
import PushSealTestSupport
import Testing

/// Registration tokens (docs/registration.md): the vectors made with Python's stdlib `hmac`
/// (Tests/Interop/registration_token_ref.py), minting byte for byte, the refusals, the secret file.
@Suite("Registration tokens (HS256)")
struct RegistrationTokenTests {
    struct VectorFile: Decodable {
        struct Case: Decodable { let name: String, token: String, expect: String }
        let secret: String, appId: String, now: Int64, cases: [Case]
    }

    static let reference = repositoryRoot.appendingPathComponent("Tests/Interop/registration_token_ref.py")

    static func vectors() throws -> VectorFile {
        let data = try Data(contentsOf: repositoryRoot.appendingPathComponent("Tests/Vectors/registration-tokens.json"))
        return try JSONDecoder().decode(VectorFile.self, from: data)
    }

    @Test("every vector verifies or is refused with its code")
    func vectorCases() throws {
        let file = try Self.vectors()
        let secret = try RegistrationTokenSecret(text: Array(file.secret.utf8))
        #expect(file.cases.count >= 20)
        for c in file.cases {
            do {
                let token = try RegistrationToken.verify(c.token, appID: file.appId, secret: secret, now: file.now)
                #expect(c.expect == "valid", "\(c.name) verified but expects \(c.expect)")
                #expect(token.recipient == "alice-iphone", "\(c.name)")
                #expect(token.appID == file.appId)
            } catch let e as RegistrationTokenError {
                #expect(e.code.name == c.expect, "\(c.name): \(e.code.name) (\(e.reason)), expected \(c.expect)")
            }
        }
    }

    @Test("minting gives the vector's token byte for byte")
    func mintMatchesVector() throws {
        let file = try Self.vectors()
        let secret = try RegistrationTokenSecret(text: Array(file.secret.utf8))
        let token = try RegistrationToken.mint(recipient: "alice-iphone", appID: file.appId, lifetimeSeconds: 3600,
                                               issuedAt: file.now, tokenID: "tok-0001", secret: secret)
        #expect(token == file.cases.first { $0.name == "ok" }?.token)
    }

    @Test("a minted token with a random jti verifies in Python's stdlib hmac, and Python's in Swift")
    func pythonRoundTrip() throws {
        let dir = try TemporaryDirectory("regtoken")
        defer { dir.remove() }
        let path = dir.appending("secret").path
        try RegistrationTokenSecret.create(at: path)
        let secret = try RegistrationTokenSecret.load(path: path)
        let now: Int64 = 1_800_000_000
        let token = try RegistrationToken.mint(recipient: "bob-ipad", appID: "com.example.app", issuedAt: now, secret: secret)
        guard let r = runPython(file: Self.reference, ["verify", "--secret-file", path, "--app-id", "com.example.app", "--now", "\(now + 10)"],
                                input: Data(token.utf8)) else { Issue.record("python3 is missing"); return }
        #expect(r.status == 0, "\(r.errors)")
        #expect(r.output.contains("\"sub\": \"bob-ipad\""))
        guard let m = runPython(file: Self.reference, ["mint", "--secret-file", path, "--recipient", "carol", "--app-id", "com.example.app",
                                                        "--iat", "\(now)", "--jti", "py-1"]) else { return }
        let minted = m.output.trimmingCharacters(in: .whitespacesAndNewlines)
        let claims = try RegistrationToken.verify(minted, appID: "com.example.app", secret: secret, now: now)
        #expect(claims == RegistrationToken(recipient: "carol", appID: "com.example.app", issuedAt: now, expiresAt: now + 3600, tokenID: "py-1"))
        // The same claims minted by both sides are the same bytes.
        #expect(try RegistrationToken.mint(recipient: "carol", appID: "com.example.app", issuedAt: now, tokenID: "py-1", secret: secret) == minted)
    }

    @Test("refusals: expiry with leeway, audience, lifetime on minting, one flipped signature bit")
    func refusals() throws {
        let secret = try RegistrationTokenSecret(text: Array("0123456789abcdefghijklmnopqrstuvwxyz".utf8))
        let token = try RegistrationToken.mint(recipient: "r", appID: "a.b", lifetimeSeconds: 100, issuedAt: 1000, secret: secret)
        _ = try RegistrationToken.verify(token, appID: "a.b", secret: secret, now: 1160)
        expectCode(RegistrationTokenError.Code.expired) { try RegistrationToken.verify(token, appID: "a.b", secret: secret, now: 1161) }
        expectCode(RegistrationTokenError.Code.wrongAudience) { try RegistrationToken.verify(token, appID: "a.c", secret: secret, now: 1000) }
        expectCode(RegistrationTokenError.Code.notYetValid) { try RegistrationToken.verify(token, appID: "a.b", secret: secret, now: 939) }
        expectCode(RegistrationTokenError.Code.lifetimeTooLong) {
            try RegistrationToken.mint(recipient: "r", appID: "a.b", lifetimeSeconds: 86_401, issuedAt: 0, secret: secret)
        }
        // A character inside the signature (the last one also holds padding bits base64url must keep zero).
        var chars = Array(token)
        let inside = chars.count - 10
        chars[inside] = chars[inside] == "A" ? "B" : "A"
        expectCode(RegistrationTokenError.Code.badSignature) { try RegistrationToken.verify(String(chars), appID: "a.b", secret: secret, now: 1000) }
    }

    @Test("the secret file: private, at least 32 printable characters, never replaced")
    func secretFile() throws {
        let dir = try TemporaryDirectory("regsecret")
        defer { dir.remove() }
        let path = dir.appending("secret").path
        expectCode(RegistrationTokenError.Code.invalidSecret) { try RegistrationTokenSecret.load(path: path) }
        try RegistrationTokenSecret.create(at: path)
        #expect(throws: SystemError.self) { try RegistrationTokenSecret.create(at: path) }
        let text = try String(contentsOfFile: path, encoding: .utf8)
        #expect(text.count == 44 && text.hasSuffix("\n"))
        chmod(path, 0o644)
        expectCode(RegistrationTokenError.Code.invalidSecret) { try RegistrationTokenSecret.load(path: path) }
        expectCode(RegistrationTokenError.Code.invalidSecret) { try RegistrationTokenSecret(text: Array("short".utf8)) }
        expectCode(RegistrationTokenError.Code.invalidSecret) { try RegistrationTokenSecret(text: Array("0123456789 abcdefghijklmnopqrstuvwxyz".utf8)) }
    }
}
