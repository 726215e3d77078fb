internal import COpenSSL
#if canImport(Glibc)
internal import Glibc
#elseif canImport(Darwin)
internal import Darwin
#endif

/// AES-256-GCM authenticated encryption (NIST SP 800-38D) over OpenSSL's EVP interface.
///
/// Profile: 32-byte key, 12-byte (96-bit) nonce, 16-byte tag, optional AAD. Every seal draws a
/// fresh random nonce from ``SecureRandom``; no public entry point accepts a caller's nonce.
/// With random nonces a key may seal at most 2^32 messages (SP 800-38D §8.3); counting seals is
/// the key store's job.
///
/// Open checks sizes first, decrypts into a private buffer, and returns plaintext only after
/// the tag verifies. A wrong key, wrong AAD or any modified bit all fail the same way,
/// `CryptoError.Code.authenticationFailed`. OpenSSL's error queue is drained after every failure.
///
/// Thread-safe. For speed each thread keeps one reusable OpenSSL cipher context (see
/// `CipherContext`); after every operation it is re-keyed with zeros, so between calls it holds
/// no material derived from a caller's key.
public enum AES256GCM {
    /// Key length in bytes (AES-256).
    public static let keyByteCount = 32
    /// Nonce length in bytes (96 bits, the only size accepted).
    public static let nonceByteCount = 12
    /// Tag length in bytes (128 bits, the only size accepted).
    public static let tagByteCount = 16
    /// Smallest combined box: an empty plaintext still carries nonce and tag (28 bytes).
    public static let minimumCombinedByteCount = nonceByteCount + tagByteCount

    /// Seals `plaintext` under `key` with a fresh random nonce.
    /// - Parameters:
    ///   - plaintext: any bytes (may be empty).
    ///   - key: a 32-byte key.
    ///   - aad: additional authenticated data, bound to the box but not encrypted (may be empty).
    /// - Returns: the box; `combined` is nonce(12) ‖ ciphertext ‖ tag(16), CryptoKit's layout.
    /// - Throws: `CryptoError` `.invalidKeySize`, `.internalFailure`.
    public static func seal(_ plaintext: [UInt8], with key: SecretBytes, authenticating aad: [UInt8] = []) throws -> SealedBox {
        try plaintext.withUnsafeBytes { p in
            try aad.withUnsafeBytes { a in try seal(p, with: key, authenticating: a) }
        }
    }

    /// Seals the bytes at `plaintext` under `key` with a fresh random nonce (see
    /// ``seal(_:with:authenticating:)-(([UInt8],_,_))``); the pointer form avoids a copy.
    /// - Throws: `CryptoError` `.invalidKeySize`, `.internalFailure`.
    public static func seal(_ plaintext: UnsafeRawBufferPointer, with key: SecretBytes, authenticating aad: UnsafeRawBufferPointer) throws -> SealedBox {
        var nonce = (UInt64(0), UInt32(0))
        return try withUnsafeMutableBytes(of: &nonce) { n in
            SecureRandom.fill(n)
            return try seal(plaintext, with: key, nonce: UnsafeRawBufferPointer(n), authenticating: aad)
        }
    }

    /// Seals the bytes at `plaintext` under `key` with a fresh random nonce from
    /// ``SecureRandom``, writing the combined box into caller memory instead of allocating one.
    ///
    /// Layout written at the start of `output`: nonce(12) ‖ ciphertext(`plaintext.count`) ‖
    /// tag(16), the same bytes as ``SealedBox/combined``. Bytes of `output` past the returned
    /// count are left untouched. `plaintext` and `output` must not overlap. After a throw the
    /// first `plaintext.count + 28` bytes of `output` hold no usable box (never plaintext) and
    /// must not be sent.
    /// - Parameters:
    ///   - plaintext: any bytes (may be empty).
    ///   - key: a 32-byte key.
    ///   - aad: additional authenticated data, bound to the box but not encrypted (may be empty).
    ///   - output: room for at least `plaintext.count + 28` bytes
    ///     (``nonceByteCount`` + plaintext + ``tagByteCount``).
    /// - Returns: the number of bytes written, `plaintext.count + 28`.
    /// - Throws: `CryptoError` `.invalidKeySize`, `.invalidParameter` when `output` is smaller
    ///   than `plaintext.count + 28` bytes (the reason names both counts), `.internalFailure`.
    public static func seal(_ plaintext: UnsafeRawBufferPointer, with key: SecretBytes, authenticating aad: UnsafeRawBufferPointer,
                            into output: UnsafeMutableRawBufferPointer) throws -> Int {
        guard key.byteCount == keyByteCount else {
            throw CryptoError(.invalidKeySize, "an AES-256-GCM key is \(keyByteCount) bytes, got \(key.byteCount)")
        }
        let total = nonceByteCount + plaintext.count + tagByteCount
        guard output.count >= total, let base = output.baseAddress else {
            throw CryptoError(.invalidParameter, "sealing \(plaintext.count) bytes needs \(total) bytes of output, got \(output.count)")
        }
        let nonce = UnsafeMutableRawBufferPointer(start: base, count: nonceByteCount)
        SecureRandom.fill(nonce)
        let sealed = key.withUnsafeBytes { k in
            CipherContext.run(encrypt: true, key: k, nonce: UnsafeRawBufferPointer(nonce), aad: aad, input: plaintext,
                              output: base + nonceByteCount, tag: base + nonceByteCount + plaintext.count)
        }
        guard sealed else {
            ERR_clear_error()
            throw CryptoError(.internalFailure, "OpenSSL could not seal")
        }
        return total
    }

    /// Known-answer entry point for tests only: seals with a caller's nonce. Never public —
    /// a repeated nonce under one key breaks GCM's confidentiality and authenticity.
    static func seal(_ plaintext: UnsafeRawBufferPointer, with key: SecretBytes, nonce: UnsafeRawBufferPointer, authenticating aad: UnsafeRawBufferPointer) throws -> SealedBox {
        guard key.byteCount == keyByteCount else {
            throw CryptoError(.invalidKeySize, "an AES-256-GCM key is \(keyByteCount) bytes, got \(key.byteCount)")
        }
        guard nonce.count == nonceByteCount else {
            throw CryptoError(.invalidNonceSize, "an AES-256-GCM nonce is \(nonceByteCount) bytes, got \(nonce.count)")
        }
        let total = nonceByteCount + plaintext.count + tagByteCount
        var sealed = false
        let combined = [UInt8](unsafeUninitializedCapacity: total) { out, initialized in
            initialized = total
            guard let base = UnsafeMutableRawPointer(out.baseAddress), let n = nonce.baseAddress else { return }
            base.copyMemory(from: n, byteCount: nonceByteCount)
            sealed = key.withUnsafeBytes { k in
                CipherContext.run(encrypt: true, key: k, nonce: nonce, aad: aad, input: plaintext,
                                  output: base + nonceByteCount, tag: base + nonceByteCount + plaintext.count)
            }
        }
        guard sealed else {
            ERR_clear_error()
            throw CryptoError(.internalFailure, "OpenSSL could not seal")
        }
        return SealedBox(uncheckedCombined: combined)
    }

    /// Opens `box` under `key`, verifying the tag over nonce, ciphertext and `aad`.
    /// - Parameters:
    ///   - box: a sealed box (12-byte nonce, 16-byte tag).
    ///   - key: the 32-byte key it was sealed with.
    ///   - aad: the same AAD given at seal time.
    /// - Returns: the plaintext, only after the tag verified.
    /// - Throws: `CryptoError` `.authenticationFailed` (wrong key, wrong AAD, any modified bit),
    ///   `.invalidKeySize`.
    public static func open(_ box: SealedBox, with key: SecretBytes, authenticating aad: [UInt8] = []) throws -> [UInt8] {
        try box.combined.withUnsafeBytes { c in
            try aad.withUnsafeBytes { a in
                try open(nonce: UnsafeRawBufferPointer(rebasing: c[0..<nonceByteCount]),
                         ciphertext: UnsafeRawBufferPointer(rebasing: c[nonceByteCount..<(c.count - tagByteCount)]),
                         tag: UnsafeRawBufferPointer(rebasing: c[(c.count - tagByteCount)...]),
                         with: key, authenticating: a)
            }
        }
    }

    /// Opens a box given as separate parts. Rejects any nonce other than 12 bytes and any tag
    /// other than 16 bytes before decrypting.
    /// - Returns: the plaintext, only after the tag verified.
    /// - Throws: `CryptoError` `.invalidNonceSize`, `.invalidTagSize`, `.invalidKeySize`,
    ///   `.authenticationFailed`.
    public static func open(nonce: UnsafeRawBufferPointer, ciphertext: UnsafeRawBufferPointer, tag: UnsafeRawBufferPointer,
                            with key: SecretBytes, authenticating aad: UnsafeRawBufferPointer) throws -> [UInt8] {
        guard nonce.count == nonceByteCount else {
            throw CryptoError(.invalidNonceSize, "an AES-256-GCM nonce is \(nonceByteCount) bytes, got \(nonce.count)")
        }
        guard tag.count == tagByteCount else {
            throw CryptoError(.invalidTagSize, "an AES-256-GCM tag is \(tagByteCount) bytes, got \(tag.count)")
        }
        guard key.byteCount == keyByteCount else {
            throw CryptoError(.invalidKeySize, "an AES-256-GCM key is \(keyByteCount) bytes, got \(key.byteCount)")
        }
        var ok = false
        // Capacity of at least one byte so the buffer always has an address, even for an empty message.
        var plaintext = [UInt8](unsafeUninitializedCapacity: max(ciphertext.count, 1)) { out, initialized in
            initialized = ciphertext.count
            guard let base = UnsafeMutableRawPointer(out.baseAddress) else { return }
            ok = key.withUnsafeBytes { k in
                var tagCopy = (UInt64(0), UInt64(0))
                return withUnsafeMutableBytes(of: &tagCopy) { t in
                    t.copyMemory(from: tag)
                    guard let tagBase = t.baseAddress else { return false }
                    return CipherContext.run(encrypt: false, key: k, nonce: nonce, aad: aad, input: ciphertext,
                                             output: base, tag: tagBase)
                }
            }
        }
        guard ok else {
            SecretBytes.wipe(&plaintext)
            ERR_clear_error()
            throw CryptoError(.authenticationFailed, "the box did not authenticate (wrong key, wrong AAD or modified data)")
        }
        return plaintext
    }
}

/// One EVP_CIPHER_CTX run on this thread's reusable context.
///
/// Creating and freeing an `EVP_CIPHER_CTX` (OpenSSL 3 allocates and cleanses a provider
/// context each time) costs about as much as encrypting 1 KB, so each thread keeps one context,
/// bound once to AES-256-GCM, and re-keys it per operation with `EVP_CipherInit_ex2(ctx, NULL,
/// key, nonce, enc)`. The context never crosses threads (POSIX thread-specific data) and no
/// operation suspends while holding it. After any failure the context is freed (OpenSSL
/// cleanses it) and the next call starts from a fresh one.
///
/// Key hygiene: after every successful operation the context is re-keyed with 32 zero bytes
/// (`scrub`), and after a failure it is freed, so between calls it holds no key schedule or
/// GHASH key derived from a caller's key. At thread exit its destructor frees (and cleanses) it.
/// The `SecretBytes` key itself is unaffected.
enum CipherContext {
    /// The AES-256-GCM implementation, fetched once. `EVP_CIPHER` objects are reference-counted
    /// and immutable after fetch, so sharing one across threads is safe (OpenSSL 3 threading docs).
    nonisolated(unsafe) static let cipher: OpaquePointer? = EVP_CIPHER_fetch(nil, "AES-256-GCM", nil)

    /// The thread-specific slot; its destructor frees (and so cleanses) a thread's context at exit.
    static let slot = ThreadContextSlot(destructor: { pointer in
        #if canImport(Darwin)
        EVP_CIPHER_CTX_free(OpaquePointer(pointer))
        #else
        if let pointer { EVP_CIPHER_CTX_free(OpaquePointer(pointer)) }
        #endif
    }, make: {
        // Bound to AES-256-GCM once; later operations re-key it.
        guard let cipher, let ctx = EVP_CIPHER_CTX_new() else { return nil }
        guard EVP_CipherInit_ex2(ctx, cipher, nil, nil, 1, nil) == 1 else {
            EVP_CIPHER_CTX_free(ctx)
            return nil
        }
        return ctx
    }, free: { EVP_CIPHER_CTX_free($0) })

    /// This thread's context, created and bound to AES-256-GCM on first use; nil if OpenSSL failed.
    @inline(__always)
    static func threadContext() -> OpaquePointer? { slot.context() }

    /// Frees this thread's context (OpenSSL cleanses it); the next call creates a fresh one.
    static func discardThreadContext() { slot.discard() }

    /// Runs a whole GCM operation. For decryption `tag` is read and verified; for encryption it
    /// is written. Returns false on any failure (including a tag mismatch), after discarding
    /// the thread's context.
    static func run(encrypt: Bool, key: UnsafeRawBufferPointer, nonce: UnsafeRawBufferPointer, aad: UnsafeRawBufferPointer,
                    input: UnsafeRawBufferPointer, output: UnsafeMutableRawPointer, tag: UnsafeMutableRawPointer) -> Bool {
        guard input.count <= Int(Int32.max), aad.count <= Int(Int32.max) else { return false }
        guard let ctx = threadContext() else { return false }
        let ok = runSteps(ctx, encrypt: encrypt, key: key, nonce: nonce, aad: aad, input: input, output: output, tag: tag)
        if !ok {
            discardThreadContext()
        } else if !scrub(ctx) {
            discardThreadContext()
        }
        return ok
    }

    /// Overwrites the context's key schedule and GHASH key by re-keying it with 32 zero bytes,
    /// so no material derived from the caller's key outlives the call (the rule "zero key bytes
    /// when done"). Cheaper than freeing the context; returns false if OpenSSL refused.
    @inline(__always)
    private static func scrub(_ ctx: OpaquePointer) -> Bool {
        var zeroKey = (UInt64(0), UInt64(0), UInt64(0), UInt64(0))
        return withUnsafeBytes(of: &zeroKey) { z in
            EVP_CipherInit_ex2(ctx, nil, z.baseAddress?.assumingMemoryBound(to: UInt8.self), nil, -1, nil) == 1
        }
    }

    @inline(__always)
    private static func runSteps(_ ctx: OpaquePointer, encrypt: Bool, key: UnsafeRawBufferPointer, nonce: UnsafeRawBufferPointer,
                                 aad: UnsafeRawBufferPointer, input: UnsafeRawBufferPointer,
                                 output: UnsafeMutableRawPointer, tag: UnsafeMutableRawPointer) -> Bool {
        let k = key.baseAddress?.assumingMemoryBound(to: UInt8.self)
        let n = nonce.baseAddress?.assumingMemoryBound(to: UInt8.self)
        // A null cipher keeps the bound AES-256-GCM; key and nonce are always both set, so no
        // state of a previous operation survives into this one.
        guard k != nil, n != nil, EVP_CipherInit_ex2(ctx, nil, k, n, encrypt ? 1 : 0, nil) == 1 else { return false }
        var outLength: Int32 = 0
        if aad.count > 0, let a = aad.baseAddress?.assumingMemoryBound(to: UInt8.self) {
            guard EVP_CipherUpdate(ctx, nil, &outLength, a, Int32(aad.count)) == 1 else { return false }
        }
        let out = output.assumingMemoryBound(to: UInt8.self)
        var written = 0
        if input.count > 0, let i = input.baseAddress?.assumingMemoryBound(to: UInt8.self) {
            guard EVP_CipherUpdate(ctx, out, &outLength, i, Int32(input.count)) == 1 else { return false }
            written = Int(outLength)
        }
        if encrypt {
            guard EVP_CipherFinal_ex(ctx, out + written, &outLength) == 1 else { return false }
            return EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG, Int32(AES256GCM.tagByteCount), tag) == 1
        } else {
            guard EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_TAG, Int32(AES256GCM.tagByteCount), tag) == 1 else { return false }
            return EVP_CipherFinal_ex(ctx, out + written, &outLength) == 1
        }
    }
}
