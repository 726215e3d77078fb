import PushSealSystem
import PushSealTestSupport
import Foundation
import Testing
import COpenSSL
@testable import PushSealCrypto

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

/// Lowercase or uppercase hex → bytes; an empty string is zero bytes (``Hex/decode(_:)``).
func hex(_ text: String) throws -> [UInt8] {
    guard let bytes = Hex.decode(text) else { throw BadHex(text: text) }
    return bytes
}

func hexString(_ bytes: some Sequence<UInt8>, uppercase: Bool = false) -> String { Hex.encode(bytes, uppercase: uppercase) }

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
func cryptoErrorCode(_ body: () throws -> Void) -> CryptoError.Code? { thrownCode(CryptoError.self, body) }

/// Puts a real OpenSSL error on this thread's queue (a failed fetch of a cipher that does not
/// exist), so a following failing call can show that it drains the queue. Returns whether the
/// queue is now non-empty.
@discardableResult
func seedOpenSSLError() -> Bool {
    let cipher = EVP_CIPHER_fetch(nil, "PUSHSEAL-NO-SUCH-CIPHER", nil)
    if let cipher { EVP_CIPHER_free(cipher) }
    return ERR_peek_error() != 0
}
