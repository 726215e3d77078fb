import Foundation
import Testing
import PushSealTestSupport
@testable import PushSealCrypto

/// HPKE against independent implementations, both directions, seeded random inputs:
/// Python `pyhpke` (all four modes) and, where the installed `cryptography` has it,
/// `cryptography.hazmat.primitives.hpke` (base mode, empty AAD — all its API offers).
@Suite("HPKE interop (pyhpke, cryptography)")
struct HPKEInteropTests {
    /// One random case: keys derived from seeded IKM (RFC 9180 DeriveKeyPair), random info,
    /// AAD and plaintext.
    struct Case {
        let mode: HPKE.Mode
        let recipient: X25519.PrivateKey
        let sender: X25519.PrivateKey?
        let pskKey: [UInt8]
        let pskID: [UInt8]
        let info: [UInt8]
        let aad: [UInt8]
        let plaintext: [UInt8]
        var psk: HPKE.PresharedKey? { pskKey.isEmpty ? nil : try? HPKE.PresharedKey(key: SecretBytes(copying: pskKey), id: pskID) }

        init(_ rng: inout SeededGenerator, mode: HPKE.Mode, aad allowAAD: Bool = true) throws {
            self.mode = mode
            recipient = try HPKE.deriveKeyPair(inputKeyMaterial: SecretBytes(copying: rng.bytes(32)))
            let hasSender = mode == .auth || mode == .authPSK, hasPSK = mode == .psk || mode == .authPSK
            sender = hasSender ? try HPKE.deriveKeyPair(inputKeyMaterial: SecretBytes(copying: rng.bytes(32))) : nil
            pskKey = hasPSK ? rng.bytes(32) : []
            pskID = hasPSK ? rng.bytes(Int(rng.next() % 16) + 1) : []
            info = rng.bytes(Int(rng.next() % 90))
            aad = allowAAD ? rng.bytes(Int(rng.next() % 3 == 0 ? 0 : rng.next() % 40)) : []
            plaintext = rng.bytes(Int(rng.next() % 2100))
        }

        func fields() -> [String] {
            [String(mode.rawValue), hexString(recipient.rawRepresentation.copyBytes()), hexString(recipient.publicKey.rawRepresentation),
             hexString(sender?.rawRepresentation.copyBytes() ?? []), hexString(sender?.publicKey.rawRepresentation ?? []),
             hexString(pskKey), hexString(pskID), hexString(info), hexString(aad), hexString(plaintext)]
        }
    }

    /// Reads lines `mode skR pkR skS pkS psk psk_id info aad pt [sealed]` (hex, "-" for empty).
    /// `open`: opens `sealed` and prints "<lines> <mismatches>". `seal`: prints one sealed hex a line.
    static let pyhpkeScript = """
    import sys
    try:
        from cryptography.hazmat.primitives.asymmetric import x25519
        from pyhpke import AEADId, CipherSuite, KDFId, KEMId, KEMKey
    except ImportError:
        sys.exit(99)
    suite = CipherSuite.new(KEMId.DHKEM_X25519_HKDF_SHA256, KDFId.HKDF_SHA256, AEADId.AES256_GCM)
    def h(s): return b'' if s == '-' else bytes.fromhex(s)
    def priv(b): return KEMKey.from_pyca_cryptography_key(x25519.X25519PrivateKey.from_private_bytes(b))
    def pub(b): return KEMKey.from_pyca_cryptography_key(x25519.X25519PublicKey.from_public_bytes(b))
    n = bad = 0
    for line in open(sys.argv[2]):
        f = line.split()
        mode = int(f[0]); skR, pkR, skS, pkS, psk, pid, info, aad, pt = (h(x) for x in f[1:10])
        auth = mode in (2, 3)
        if sys.argv[1] == 'open':
            n += 1
            sealed = h(f[10])
            try:
                ctx = suite.create_recipient_context(sealed[:32], priv(skR), info, pub(pkS) if auth else None, psk, pid)
                if ctx.open(sealed[32:], aad) != pt:
                    bad += 1
            except Exception:
                bad += 1
        else:
            enc, ctx = suite.create_sender_context(pub(pkR), info, priv(skS) if auth else None, psk, pid)
            print((enc + ctx.seal(pt, aad)).hex())
    if sys.argv[1] == 'open':
        print(n, bad)
    """

    /// The same protocol with `cryptography`'s HPKE (base mode, empty AAD).
    static let cryptographyScript = """
    import sys
    try:
        from cryptography.hazmat.primitives import hpke
        from cryptography.hazmat.primitives.asymmetric import x25519
    except ImportError:
        sys.exit(99)
    suite = hpke.Suite(hpke.KEM.X25519, hpke.KDF.HKDF_SHA256, hpke.AEAD.AES_256_GCM)
    def h(s): return b'' if s == '-' else bytes.fromhex(s)
    n = bad = 0
    for line in open(sys.argv[2]):
        f = line.split()
        skR, pkR, info, pt = h(f[1]), h(f[2]), h(f[7]), h(f[9])
        if sys.argv[1] == 'open':
            n += 1
            try:
                if suite.decrypt(h(f[10]), x25519.X25519PrivateKey.from_private_bytes(skR), info=info) != pt:
                    bad += 1
            except Exception:
                bad += 1
        else:
            print(suite.encrypt(pt, x25519.X25519PublicKey.from_public_bytes(pkR), info=info).hex())
    if sys.argv[1] == 'open':
        print(n, bad)
    """

    static let hasPyhpke = runPythonOutput("import pyhpke") != nil
    static let hasCryptographyHPKE = runPythonOutput("from cryptography.hazmat.primitives import hpke; hpke.Suite") != nil

    static func write(_ lines: [[String]]) throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("pushseal-hpke-\(UInt64.random(in: 0...UInt64.max)).txt")
        let text = lines.map { $0.map { $0.isEmpty ? "-" : $0 }.joined(separator: " ") }.joined(separator: "\n") + "\n"
        try Data(text.utf8).write(to: url)
        return url
    }

    /// Swift seals `cases`, Python (`script`) opens every one; then Python seals, Swift opens.
    /// The auth modes go both ways twice: with the sender key (two DHs) and through an
    /// `HPKE.AuthPairCache` (the static-static DH computed once per pair of keys).
    static func bothDirections(_ cases: [Case], script: String, name: String) throws {
        // Swift → Python.
        var lines: [[String]] = []
        let sealingPairs = HPKE.AuthPairCache(), openingPairs = HPKE.AuthPairCache()
        for (i, c) in cases.enumerated() {
            let sealed = try HPKE.seal(c.plaintext, to: c.recipient.publicKey, info: c.info, authenticating: c.aad, sender: c.sender, psk: c.psk)
            lines.append(c.fields() + [hexString(sealed)])
            if let sender = c.sender {
                let pair = try c.recipient.publicKey.rawRepresentation.withUnsafeBytes {
                    try sealingPairs.pair(sender: sender, senderKeyID: "s\(i)", recipientPublicKey: $0, recipientKeyID: "r\(i)")
                }
                lines.append(c.fields() + [hexString(try HPKE.seal(c.plaintext, for: pair, info: c.info, authenticating: c.aad, psk: c.psk))])
            }
        }
        let sealedFile = try write(lines)
        defer { try? FileManager.default.removeItem(at: sealedFile) }
        let opened = try #require(runPythonOutput(script, ["open", sealedFile.path]), "\(name) failed to run")
        #expect(opened == "\(lines.count) 0", "\(name) opening Swift's messages: <count> <failures>")

        // Python → Swift.
        let jobs = try write(cases.map { $0.fields() })
        defer { try? FileManager.default.removeItem(at: jobs) }
        let output = try #require(runPythonOutput(script, ["seal", jobs.path]), "\(name) failed to run")
        let sealedByPython = output.split(separator: "\n").map(String.init)
        #expect(sealedByPython.count == cases.count)
        for (c, sealedHex) in zip(cases, sealedByPython) {
            let sealed = try hex(sealedHex)
            #expect(sealed.count == c.plaintext.count + HPKE.overheadByteCount)
            let plaintext = try HPKE.open(sealed, with: c.recipient, info: c.info, authenticating: c.aad, sender: c.sender?.publicKey, psk: c.psk)
            #expect(plaintext == c.plaintext, "mode \(c.mode)")
            if let sender = c.sender?.publicKey {
                let pair = try openingPairs.pair(recipient: c.recipient, recipientKeyID: "r", sender: sender, senderKeyID: "s")
                #expect(try HPKE.open(sealed, with: c.recipient, from: pair, info: c.info, authenticating: c.aad, psk: c.psk) == c.plaintext)
            }
        }
    }

    @Test("pyhpke: Swift seals → pyhpke opens, pyhpke seals → Swift opens; all four modes, 50 seeded cases each",
          arguments: HPKE.Mode.allCases)
    func pyhpke(mode: HPKE.Mode) throws {
        guard Self.hasPyhpke else {
            Issue.record("python3 with pyhpke is missing: run scripts/install-deps.sh (pip install pyhpke)")
            return
        }
        var rng = SeededGenerator(seed: 0x9180 + UInt64(mode.rawValue))
        let cases = try (0..<50).map { _ in try Case(&rng, mode: mode) }
        try Self.bothDirections(cases, script: Self.pyhpkeScript, name: "pyhpke")
    }

    @Test("cryptography's HPKE (base mode, empty AAD): both directions, 100 seeded cases",
          .enabled(if: hasCryptographyHPKE,
                   "the installed Python cryptography has no hazmat.primitives.hpke (it arrived in a later release): cross-check skipped"))
    func cryptographyHPKE() throws {
        var rng = SeededGenerator(seed: 0x5EA1)
        let cases = try (0..<100).map { _ in try Case(&rng, mode: .base, aad: false) }
        try Self.bothDirections(cases, script: Self.cryptographyScript, name: "cryptography hpke")
    }
}
