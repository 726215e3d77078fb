import PushSealTestSupport
import Testing
@testable import PushSealCrypto

@Suite("SHA-256 and Argon2id")
struct HashTests {
    /// FIPS 180-2 Appendix B.1 ("abc"), B.2 (448-bit message), B.3 (one million "a"), and the
    /// empty message (NIST CSRC SHA-256 examples).
    static let published: [(message: [UInt8], digest: String)] = [
        (Array("abc".utf8), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
        (Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8),
         "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"),
        ([UInt8](repeating: UInt8(ascii: "a"), count: 1_000_000),
         "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"),
        ([], "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
    ]

    @Test("SHA-256 one-shot matches the FIPS 180-2 examples")
    func sha256Published() throws {
        for (message, digest) in Self.published {
            #expect(hexString(try SHA256Hasher.hash(message)) == digest, "message of \(message.count) bytes")
        }
    }

    @Test("SHA-256 streaming in uneven pieces equals one-shot")
    func sha256Streaming() throws {
        let message = [UInt8](repeating: UInt8(ascii: "a"), count: 1_000_000)
        let hasher = SHA256Hasher()
        var index = 0, step = 1
        while index < message.count {
            let end = min(index + step, message.count)
            hasher.update(Array(message[index..<end]))
            index = end
            step = step * 3 % 1021 + 1
        }
        #expect(hexString(try hasher.finalize()) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
        let empty = SHA256Hasher()
        empty.update([])
        #expect(hexString(try empty.finalize()) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    }

    // Small parameters keep the test fast: 2 passes, 64 KiB.
    static let opsLimit: UInt64 = 2
    static let memLimitBytes = 64 * 1024
    static let salt: [UInt8] = Array("0123456789abcdef".utf8)
    static let password = Array("correct horse battery staple".utf8)

    @Test("Argon2id: deterministic; salt and password change the output; parameter checks")
    func argon2idBehaviour() throws {
        let a = try Argon2id.deriveKey(password: Self.password, salt: Self.salt, opsLimit: Self.opsLimit, memLimitBytes: Self.memLimitBytes)
        let b = try Argon2id.deriveKey(password: Self.password, salt: Self.salt, opsLimit: Self.opsLimit, memLimitBytes: Self.memLimitBytes)
        #expect(a.byteCount == 32)
        #expect(a == b)
        var otherSalt = Self.salt
        otherSalt[0] ^= 1
        let c = try Argon2id.deriveKey(password: Self.password, salt: otherSalt, opsLimit: Self.opsLimit, memLimitBytes: Self.memLimitBytes)
        #expect(a != c)
        let d = try Argon2id.deriveKey(password: Self.password + [0], salt: Self.salt, opsLimit: Self.opsLimit, memLimitBytes: Self.memLimitBytes)
        #expect(a != d)
        let e = try Argon2id.deriveKey(password: Self.password, salt: Self.salt, opsLimit: Self.opsLimit + 1, memLimitBytes: Self.memLimitBytes)
        #expect(a != e)
        let empty = try Argon2id.deriveKey(password: [], salt: Self.salt, opsLimit: Self.opsLimit, memLimitBytes: Self.memLimitBytes, outputByteCount: 16)
        #expect(empty.byteCount == 16)
        #expect(cryptoErrorCode { _ = try Argon2id.deriveKey(password: Self.password, salt: Array(Self.salt.dropLast()), opsLimit: 2, memLimitBytes: Self.memLimitBytes) } == .invalidParameter)
        #expect(cryptoErrorCode { _ = try Argon2id.deriveKey(password: Self.password, salt: Self.salt, opsLimit: 0, memLimitBytes: Self.memLimitBytes) } == .invalidParameter)
        #expect(cryptoErrorCode { _ = try Argon2id.deriveKey(password: Self.password, salt: Self.salt, opsLimit: 2, memLimitBytes: 1024) } == .invalidParameter)
        #expect(cryptoErrorCode { _ = try Argon2id.deriveKey(password: Self.password, salt: Self.salt, opsLimit: 2, memLimitBytes: Self.memLimitBytes, outputByteCount: 15) } == .invalidParameter)
    }

    /// libsodium's `crypto_pwhash` Argon2id: one lane, memory in KiB = bytes / 1024, version 0x13.
    static let pythonArgon2id = """
        import sys
        from cryptography.hazmat.primitives.kdf.argon2 import Argon2id
        pw, salt, t, m, n = bytes.fromhex(sys.argv[1]), bytes.fromhex(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
        print(Argon2id(salt=salt, length=n, iterations=t, lanes=1, memory_cost=m).derive(pw).hex())
        """

    static let pythonHasArgon2id = runPythonOutput(pythonArgon2id, ["00", "00000000000000000000000000000000", "1", "8", "16"]) != nil

    @Test("Argon2id matches Python cryptography's Argon2id (independent implementation)",
          .enabled(if: pythonHasArgon2id, "python3 with cryptography >= 44 (Argon2id) is not available: the cross-check is skipped"))
    func argon2idMatchesPython() throws {
        let ours = try Argon2id.deriveKey(password: Self.password, salt: Self.salt, opsLimit: Self.opsLimit, memLimitBytes: Self.memLimitBytes)
        let theirs = try #require(runPythonOutput(Self.pythonArgon2id, [hexString(Self.password), hexString(Self.salt),
                                                                   String(Self.opsLimit), String(Self.memLimitBytes / 1024), "32"]))
        #expect(hexString(ours.copyBytes()) == theirs)
    }

    static let pythonSHA256 = "import hashlib, sys; print(hashlib.sha256(bytes.fromhex(sys.argv[1])).hexdigest())"
    static let pythonHasHashlib = runPythonOutput(pythonSHA256, [""]) != nil

    @Test("SHA-256 matches Python's hashlib on random inputs",
          .enabled(if: pythonHasHashlib, "python3 is not available: the hashlib cross-check is skipped"))
    func sha256MatchesPython() throws {
        for length in [1, 63, 64, 65, 1000] {
            let message = SecureRandom.bytes(length)
            let theirs = try #require(runPythonOutput(Self.pythonSHA256, [hexString(message)]))
            #expect(hexString(try SHA256Hasher.hash(message)) == theirs, "length \(length)")
        }
    }
}
