import Foundation
import Testing
import COpenSSL
@testable import PushSealCrypto

/// The shared test data at `relative` (e.g. `vectors/hkdf/x.json`) inside `$PUSHSEAL_SHARED`,
/// else `<repo>/../shared`: its URL when it exists, and the message a test gives when it does not
/// (the resolved path it looked in, and how to point at the data).
func sharedData(_ relative: String) -> (url: URL?, missing: String) {
    let env = ProcessInfo.processInfo.environment["PUSHSEAL_SHARED"] ?? ""
    let root = env.isEmpty
        ? URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("shared")
        : URL(fileURLWithPath: env)
    let url = root.appendingPathComponent(relative).standardized
    let found = FileManager.default.fileExists(atPath: url.path)
    return (found ? url : nil, "shared test data not found at \(url.path) (\(env.isEmpty ? "default <repo>/../shared" : "from PUSHSEAL_SHARED")): "
        + "run `make test SHARED=/path/to/shared`, or set PUSHSEAL_SHARED=/path/to/shared")
}

/// Reading the public test vectors (see ``sharedData(_:)``).
enum SharedData {
    /// Reads `vectors/<relativePath>`; throws a `MissingData` naming the path looked at.
    static func vectors(_ relativePath: String) throws -> Data {
        let (url, missing) = sharedData("vectors/" + relativePath)
        guard let url, let data = FileManager.default.contents(atPath: url.path) else { throw MissingData(description: missing) }
        return data
    }

    static func decode<T: Decodable>(_ type: T.Type, vectors relativePath: String) throws -> T {
        try JSONDecoder().decode(type, from: vectors(relativePath))
    }
}

/// Thrown (so the test fails, never silently passes) when the public test vectors are absent.
struct MissingData: Error, CustomStringConvertible {
    let description: String
}

struct BadHex: Error, CustomStringConvertible {
    let text: String
    var description: String { "not a hex string: \(text.prefix(40))" }
}

/// Lowercase or uppercase hex → bytes; an empty string is zero bytes.
func hex(_ text: String) throws -> [UInt8] {
    let chars = Array(text.utf8)
    guard chars.count % 2 == 0 else { throw BadHex(text: text) }
    func nibble(_ c: UInt8) throws -> UInt8 {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
        default: throw BadHex(text: text)
        }
    }
    var out: [UInt8] = []
    out.reserveCapacity(chars.count / 2)
    var i = 0
    while i < chars.count {
        out.append(try nibble(chars[i]) << 4 | nibble(chars[i + 1]))
        i += 2
    }
    return out
}

func hexString(_ bytes: some Sequence<UInt8>, uppercase: Bool = false) -> String {
    let digits = Array((uppercase ? "0123456789ABCDEF" : "0123456789abcdef").utf8)
    var out: [UInt8] = []
    for b in bytes {
        out.append(digits[Int(b >> 4)])
        out.append(digits[Int(b & 0x0f)])
    }
    return String(decoding: out, as: UTF8.self)
}

/// True when the calling thread's OpenSSL error queue is empty. The queue is thread-local:
/// call it from the same synchronous test body that made the failing call.
func openSSLErrorQueueIsEmpty() -> Bool { ERR_peek_error() == 0 }

/// Known-answer seal through the internal, test-only entry point (caller's nonce).
func sealKAT(_ plaintext: [UInt8], key: SecretBytes, nonce: [UInt8], aad: [UInt8]) throws -> SealedBox {
    try plaintext.withUnsafeBytes { p in
        try nonce.withUnsafeBytes { n in
            try aad.withUnsafeBytes { a in try AES256GCM.seal(p, with: key, nonce: n, authenticating: a) }
        }
    }
}

/// Opens separate parts through the public pointer form.
func openParts(nonce: [UInt8], ciphertext: [UInt8], tag: [UInt8], key: SecretBytes, aad: [UInt8]) throws -> [UInt8] {
    try nonce.withUnsafeBytes { n in
        try ciphertext.withUnsafeBytes { c in
            try tag.withUnsafeBytes { t in
                try aad.withUnsafeBytes { a in
                    try AES256GCM.open(nonce: n, ciphertext: c, tag: t, with: key, authenticating: a)
                }
            }
        }
    }
}

/// The code of the `CryptoError` thrown by `body`; nil if it returned normally or threw
/// something else.
func cryptoErrorCode(_ body: () throws -> Void) -> CryptoError.Code? {
    do {
        try body()
        return nil
    } catch let error as CryptoError {
        return error.code
    } catch {
        return nil
    }
}

/// Runs `python3 -c script args…`; returns trimmed stdout, or nil when python3 or the
/// script failed (e.g. `cryptography` not installed).
func runPython(_ script: String, _ arguments: [String] = []) -> String? {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["python3", "-c", script] + arguments
    let out = Pipe()
    process.standardOutput = out
    process.standardError = FileHandle.nullDevice
    do { try process.run() } catch { return nil }
    let data = out.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else { return nil }
    return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
}

/// Puts a real OpenSSL error on this thread's queue (a failed fetch of a cipher that does not
/// exist), so a following failing call can show that it drains the queue. Returns whether the
/// queue is now non-empty.
@discardableResult
func seedOpenSSLError() -> Bool {
    let cipher = EVP_CIPHER_fetch(nil, "PUSHSEAL-NO-SUCH-CIPHER", nil)
    if let cipher { EVP_CIPHER_free(cipher) }
    return ERR_peek_error() != 0
}
