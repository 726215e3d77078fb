// PushSeal wire helpers of module PushSealDevice, shared by the app and the Notification Service
// Extension (docs/FORMAT.md §3, §3.2, §4, §V.3, §V.6). Foundation and CryptoKit only; checked on
// Linux by LinuxCheck/check.sh (against stubs) and Tests/PushSealWireTests/IOSExampleDriftTests.swift.
import CryptoKit
import Foundation

/// Names and small checks of the wire format, versions 1 and 2.
public enum PushSealWire {
    /// `enc_alg` of version 1 (FORMAT.md §3).
    public static let algorithmV1 = "A256GCM"
    /// `enc_alg` of version 2, base mode (FORMAT.md §V.2).
    public static let algorithmV2Base = "HPKE-BASE-X25519-A256GCM"
    /// `enc_alg` of version 2, auth mode (FORMAT.md §V.2).
    public static let algorithmV2Auth = "HPKE-AUTH-X25519-A256GCM"
    /// Version 1 box: nonce(12) ‖ ciphertext ‖ tag(16) (FORMAT.md §3.1).
    public static let nonceByteCount = 12
    public static let tagByteCount = 16
    /// Version 2 box: enc(32) ‖ ciphertext ‖ tag(16) (FORMAT.md §V.3.1).
    public static let encByteCount = 32
    /// X25519 keys and the AES-256 key: 32 bytes.
    public static let keyByteCount = 32

    /// The HPKE suite of version 2: DHKEM(X25519, HKDF-SHA256), HKDF-SHA256, AES-256-GCM
    /// (FORMAT.md §V.2; RFC 9180 §7). `HPKE` needs iOS 17.
    @available(iOS 17.0, macOS 14.0, *)
    public static var ciphersuite: HPKE.Ciphersuite {
        HPKE.Ciphersuite(kem: .Curve25519_HKDF_SHA256, kdf: .HKDF_SHA256, aead: .AES_GCM_256)
    }

    /// The version 1 AAD, FORMAT.md §3.2: `pushseal:v1|<enc_alg>|<key_id>|<app_id>`.
    public static func aadV1(algorithm: String, keyID: String, appID: String) -> Data {
        Data("pushseal:v1|\(algorithm)|\(keyID)|\(appID)".utf8)
    }

    /// The version 2 HPKE `info`, FORMAT.md §V.3.2 (the HPKE `aad` is empty):
    /// base `pushseal:v2|<enc_alg>|<key_id>|<app_id>`, auth the same plus `|<sender_key_id>`.
    public static func infoV2(algorithm: String, keyID: String, appID: String, senderKeyID: String?) -> Data {
        if let senderKeyID {
            return Data("pushseal:v2|\(algorithm)|\(keyID)|\(appID)|\(senderKeyID)".utf8)
        }
        return Data("pushseal:v2|\(algorithm)|\(keyID)|\(appID)".utf8)
    }

    /// §3: 1–64 characters of A–Z a–z 0–9 _ -.
    public static func isValidKeyID(_ s: String) -> Bool {
        (1...64).contains(s.utf8.count) && s.utf8.allSatisfy { isAlphanumeric($0) || $0 == 0x5F || $0 == 0x2D }
    }

    /// §3.2: 1–255 bytes of printable ASCII other than `|`.
    public static func isValidAppID(_ s: String) -> Bool {
        (1...255).contains(s.utf8.count) && s.utf8.allSatisfy { (0x21...0x7E).contains($0) && $0 != 0x7C }
    }

    /// §5: 1–35 of A–Z a–z 0–9 - _.
    public static func isValidLocaleTag(_ s: String) -> Bool {
        (1...35).contains(s.utf8.count) && s.utf8.allSatisfy { isAlphanumeric($0) || $0 == 0x5F || $0 == 0x2D }
    }

    public static func isAlphanumeric(_ c: UInt8) -> Bool {
        (0x41...0x5A).contains(c) || (0x61...0x7A).contains(c) || (0x30...0x39).contains(c)
    }

    /// The text of §4 with the whitespace of step 1 removed (empty text is `emptyField`).
    public static func strippingWhitespace(_ text: String) -> [UInt8] {
        text.utf8.filter { ![0x20, 0x09, 0x0D, 0x0A].contains($0) }
    }

    /// §4 reading rules: whitespace removed; standard or URL-safe alphabet (never both);
    /// padding optional but exact when present; canonical last character.
    public static func decodeBase64(_ text: String) -> Data? {
        let stripped = strippingWhitespace(text)
        let standard = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
        let hasStandard = stripped.contains { $0 == 0x2B || $0 == 0x2F }
        let hasURLSafe = stripped.contains { $0 == 0x2D || $0 == 0x5F }
        guard !stripped.isEmpty, !(hasStandard && hasURLSafe) else { return nil }
        let mapped = stripped.map { $0 == 0x2D ? 0x2B : $0 == 0x5F ? 0x2F : $0 }
        let body = Array(mapped.prefix { $0 != 0x3D })
        let padCount = mapped.count - body.count
        if padCount > 0 {
            guard mapped.count % 4 == 0, padCount <= 2, mapped.suffix(padCount).allSatisfy({ $0 == 0x3D }) else { return nil }
        }
        guard body.count % 4 != 1, let last = body.last, let value = standard.firstIndex(of: last),
              body.allSatisfy({ standard.contains($0) }) else { return nil }
        let unusedBits = [0: 0, 2: 0x0F, 3: 0x03][body.count % 4] ?? 0
        guard value & unusedBits == 0 else { return nil }
        let padded = body + Array(repeating: 0x3D, count: (4 - body.count % 4) % 4)
        return Data(base64Encoded: Data(padded))
    }

    /// Standard padded base64 (what records and senders write, §4 "Writing", §V.6).
    public static func encodeBase64(_ bytes: Data) -> String { bytes.base64EncodedString() }

    /// The key id PushSeal's generators give a version 2 public key (FORMAT.md §V.6): the first
    /// 16 characters of the unpadded base64url of SHA-256(public key), 96 bits. Receivers treat
    /// key ids as opaque labels; this is only how new ones are made.
    public static func keyID(forPublicKey publicKey: Data) -> String {
        let digest = Data(SHA256.hash(data: publicKey)).base64EncodedString()
        let urlSafe = digest.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
        return String(urlSafe.prefix(16))
    }

    public static func hexBytes(_ s: String) -> Data? {
        let digits = Array(s.utf8)
        guard digits.count % 2 == 0 else { return nil }
        var out = Data()
        for i in stride(from: 0, to: digits.count, by: 2) {
            guard let byte = UInt8(String(decoding: digits[i..<i + 2], as: UTF8.self), radix: 16) else { return nil }
            out.append(byte)
        }
        return out
    }

    public static func hexString(_ bytes: Data) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    /// `true` when every byte is zero, without an early exit (RFC 9180 §7.1.4 check).
    public static func isAllZero<Bytes: ContiguousBytes>(_ bytes: Bytes) -> Bool {
        bytes.withUnsafeBytes { raw in raw.reduce(UInt8(0)) { $0 | $1 } == 0 }
    }

    /// By content first (iOS checks it), then by the declared MIME type.
    public static func fileExtension(for bytes: Data, declaredType: String?) -> String? {
        let head = [UInt8](bytes.prefix(12))
        if head.starts(with: [0x89, 0x50, 0x4E, 0x47]) { return "png" }
        if head.starts(with: [0xFF, 0xD8, 0xFF]) { return "jpg" }
        if head.starts(with: Array("GIF8".utf8)) { return "gif" }
        let byType = ["image/jpeg": "jpg", "image/png": "png", "image/gif": "gif", "video/mp4": "mp4",
                      "video/mpeg": "mpg", "video/x-msvideo": "avi", "audio/mpeg": "mp3", "audio/mp4": "m4a",
                      "audio/x-m4a": "m4a", "audio/aiff": "aiff", "audio/wav": "wav", "audio/x-wav": "wav"]
        return declaredType.flatMap { byType[$0.lowercased()] }
    }
}
