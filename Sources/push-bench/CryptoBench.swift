import COpenSSL
import CSodium
import PushSealCrypto

/// Crypto core: `AES256GCM.seal`/`open` against a raw OpenSSL EVP loop in the same process.
///
/// The raw reference is the loop a C programmer would write: ONE `EVP_CIPHER_CTX` created up
/// front and reused for every operation (a second one for open), cipher bound once (`EVP_aes_256_gcm()`), then per
/// operation: a 12-byte nonce, `EVP_EncryptInit_ex(ctx, NULL, NULL, key, nonce)` (key schedule
/// per call, as our API takes the key per call), AAD, encrypt into a preallocated buffer, final,
/// get tag. Nonce variants: `openssl-raw` = `RAND_bytes`, `openssl-raw-sodiumrand` = libsodium
/// `randombytes_buf` (what PushSeal uses), `openssl-raw-nonce-fixed` = no nonce generation.
/// PushSeal allocates its result array each call; the raw loop writes into a reused buffer.
struct CryptoBench: BenchSection {
    let title = "crypto core (AES-256-GCM, 40-byte AAD)"
    static let sizes = [256, 1024, 2048]
    static let aad = Array("pushseal:v1|A256GCM|key-1|com.example.app".utf8)

    func cases() throws -> [BenchCase] {
        let key = SecretBytes(randomByteCount: AES256GCM.keyByteCount)
        let keyBytes = key.copyBytes()
        let aad = Self.aad
        var all: [BenchCase] = []
        for size in Self.sizes {
            let plaintext = SecureRandom.bytes(size)
            let box = try AES256GCM.seal(plaintext, with: key, authenticating: aad)
            let raw = try RawGCM(key: keyBytes, size: size, aad: aad)
            guard try raw.open(box.combined) == plaintext else {
                throw BenchError("raw OpenSSL open disagrees with PushSeal seal at \(size) bytes")
            }
            all += [
                BenchCase(impl: "pushseal", op: "seal", size: size) {
                    consume(try AES256GCM.seal(plaintext, with: key, authenticating: aad))
                },
                BenchCase(impl: "openssl-raw", op: "seal", size: size) { try raw.seal(plaintext, nonce: .opensslRandBytes) },
                BenchCase(impl: "openssl-raw-sodiumrand", op: "seal", size: size) { try raw.seal(plaintext, nonce: .sodiumRandombytes) },
                BenchCase(impl: "openssl-raw-nonce-fixed", op: "seal", size: size) { try raw.seal(plaintext, nonce: .fixed) },
                BenchCase(impl: "pushseal", op: "open", size: size) {
                    consume(try AES256GCM.open(box, with: key, authenticating: aad))
                },
                BenchCase(impl: "openssl-raw", op: "open", size: size) { try raw.openInPlace(box.combined) },
            ]
        }
        return all
    }

    func comparisons() -> [Comparison] {
        var list: [Comparison] = []
        for size in Self.sizes {
            let ours = SeriesKey(impl: "pushseal", op: "seal", size: size)
            for raw in ["openssl-raw", "openssl-raw-sodiumrand", "openssl-raw-nonce-fixed"] {
                list.append(Comparison(label: "seal \(size) B \(raw) / pushseal", numerator: SeriesKey(impl: raw, op: "seal", size: size),
                                       denominator: ours))
            }
            list.append(Comparison(label: "open \(size) B openssl-raw / pushseal",
                                   numerator: SeriesKey(impl: "openssl-raw", op: "open", size: size),
                                   denominator: SeriesKey(impl: "pushseal", op: "open", size: size)))
        }
        return list
    }
}

struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// The reference loop's state: one context, one key, reused buffers.
/// Not thread-safe; the benchmark is single-threaded.
final class RawGCM {
    enum NonceSource { case opensslRandBytes, sodiumRandombytes, fixed }

    let ctx: OpaquePointer
    let openCtx: OpaquePointer
    let key: [UInt8]
    let aad: [UInt8]
    var nonce = [UInt8](repeating: 0, count: 12)
    var output: [UInt8]
    var tag = [UInt8](repeating: 0, count: 16)

    init(key: [UInt8], size: Int, aad: [UInt8]) throws {
        guard sodium_init() >= 0, let ctx = EVP_CIPHER_CTX_new(), let openCtx = EVP_CIPHER_CTX_new() else {
            throw BenchError("cannot set up OpenSSL/libsodium")
        }
        self.ctx = ctx
        self.openCtx = openCtx
        self.key = key
        self.aad = aad
        output = [UInt8](repeating: 0, count: size)
        guard EVP_EncryptInit_ex(ctx, EVP_aes_256_gcm(), nil, nil, nil) == 1,
              EVP_DecryptInit_ex(openCtx, EVP_aes_256_gcm(), nil, nil, nil) == 1 else { throw BenchError("EVP init failed") }
    }

    deinit {
        EVP_CIPHER_CTX_free(ctx)
        EVP_CIPHER_CTX_free(openCtx)
    }

    /// One seal: nonce, init with key and nonce, AAD, encrypt, final, tag.
    @inline(__always)
    func seal(_ plaintext: [UInt8], nonce source: NonceSource) throws {
        switch source {
        case .opensslRandBytes:
            guard RAND_bytes(&nonce, 12) == 1 else { throw BenchError("RAND_bytes failed") }
        case .sodiumRandombytes:
            randombytes_buf(&nonce, 12)
        case .fixed:
            break
        }
        var outLength: Int32 = 0
        let ok = EVP_EncryptInit_ex(ctx, nil, nil, key, nonce) == 1
            && EVP_EncryptUpdate(ctx, nil, &outLength, aad, Int32(aad.count)) == 1
            && output.withUnsafeMutableBufferPointer { out in
                EVP_EncryptUpdate(ctx, out.baseAddress, &outLength, plaintext, Int32(plaintext.count)) == 1
                    && EVP_EncryptFinal_ex(ctx, out.baseAddress.map { $0 + Int(outLength) }, &outLength) == 1
            }
            && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, 16, &tag) == 1
        guard ok else { throw BenchError("raw seal failed") }
    }

    /// One open of nonce ‖ ciphertext ‖ tag into the reused buffer; throws if the tag fails.
    @inline(__always)
    func openInPlace(_ combined: [UInt8]) throws {
        let ok = combined.withUnsafeBufferPointer { c -> Bool in
            guard let base = c.baseAddress else { return false }
            let ctLength = c.count - 28
            var outLength: Int32 = 0
            tag.withUnsafeMutableBufferPointer { t in
                t.baseAddress?.update(from: base + (c.count - 16), count: 16)
            }
            return EVP_DecryptInit_ex(openCtx, nil, nil, key, base) == 1
                && EVP_DecryptUpdate(openCtx, nil, &outLength, aad, Int32(aad.count)) == 1
                && output.withUnsafeMutableBufferPointer { out in
                    EVP_DecryptUpdate(openCtx, out.baseAddress, &outLength, base + 12, Int32(ctLength)) == 1
                        && EVP_CIPHER_CTX_ctrl(openCtx, EVP_CTRL_GCM_SET_TAG, 16, &tag) == 1
                        && EVP_DecryptFinal_ex(openCtx, out.baseAddress.map { $0 + Int(outLength) }, &outLength) == 1
                }
        }
        guard ok else {
            ERR_clear_error()
            throw BenchError("raw open failed")
        }
    }

    /// Opens and returns the plaintext (used once, to check agreement with PushSeal).
    func open(_ combined: [UInt8]) throws -> [UInt8] {
        try openInPlace(combined)
        return Array(output.prefix(combined.count - 28))
    }
}
