internal import COpenSSL

extension AES256GCM {
    /// Incremental AES-256-GCM for large media files, so a 10 MB attachment never has to be
    /// held in memory at once. Same profile as one-shot seal/open: 32-byte key, 12-byte nonce,
    /// 16-byte tag.
    ///
    /// **Opening streams out plaintext before the tag is checked.** A caller must treat every
    /// byte from ``update(_:into:)`` as unverified: write it to a private temporary file and
    /// release it (rename, attach) only after ``finish(tag:)`` succeeded; on any failure delete
    /// it. The media path of the extension does exactly that.
    ///
    /// Not thread-safe: one instance per file, used by one thread at a time.
    public final class Stream {
        private var ctx: OpaquePointer?
        private let encrypting: Bool
        /// The 12-byte nonce: freshly random when sealing, the caller's when opening.
        public let nonce: [UInt8]

        /// Starts sealing with a fresh random nonce (read ``nonce`` and write it first).
        /// - Parameters:
        ///   - key: a 32-byte key.
        ///   - aad: additional authenticated data (may be empty).
        /// - Throws: `CryptoError` `.invalidKeySize`, `.internalFailure`.
        public static func sealing(with key: SecretBytes, authenticating aad: [UInt8] = []) throws -> Stream {
            try Stream(encrypting: true, key: key, nonce: SecureRandom.bytes(nonceByteCount), aad: aad)
        }

        /// Starts opening a box whose 12-byte nonce is `nonce` (the box's first 12 bytes).
        /// - Throws: `CryptoError` `.invalidKeySize`, `.invalidNonceSize`, `.internalFailure`.
        public static func opening(with key: SecretBytes, nonce: [UInt8], authenticating aad: [UInt8] = []) throws -> Stream {
            try Stream(encrypting: false, key: key, nonce: nonce, aad: aad)
        }

        private init(encrypting: Bool, key: SecretBytes, nonce: [UInt8], aad: [UInt8]) throws {
            guard key.byteCount == keyByteCount else {
                throw CryptoError(.invalidKeySize, "an AES-256-GCM key is \(keyByteCount) bytes, got \(key.byteCount)")
            }
            guard nonce.count == nonceByteCount else {
                throw CryptoError(.invalidNonceSize, "an AES-256-GCM nonce is \(nonceByteCount) bytes, got \(nonce.count)")
            }
            self.encrypting = encrypting
            self.nonce = nonce
            guard let cipher = CipherContext.cipher, let ctx = EVP_CIPHER_CTX_new() else {
                throw CryptoError(.internalFailure, "OpenSSL could not create a cipher context")
            }
            self.ctx = ctx
            let ok = key.withUnsafeBytes { k in
                EVP_CipherInit_ex2(ctx, cipher, k.baseAddress?.assumingMemoryBound(to: UInt8.self), nonce, encrypting ? 1 : 0, nil) == 1
            }
            var aadOK = true
            if ok, !aad.isEmpty {
                var outLength: Int32 = 0
                aadOK = EVP_CipherUpdate(ctx, nil, &outLength, aad, Int32(aad.count)) == 1
            }
            guard ok, aadOK else {
                ERR_clear_error()
                throw CryptoError(.internalFailure, "OpenSSL could not start AES-256-GCM")
            }
        }

        deinit { EVP_CIPHER_CTX_free(ctx) }

        /// Processes one chunk; returns the output bytes of the same length (ciphertext when
        /// sealing; **unverified** plaintext when opening).
        /// - Parameter chunk: at most 2^31 − 1 bytes.
        /// - Throws: `CryptoError` `.internalFailure` (also after ``finish(tag:)``/``finish()``).
        public func update(_ chunk: UnsafeRawBufferPointer) throws -> [UInt8] {
            guard let ctx, chunk.count <= Int(Int32.max) else {
                throw CryptoError(.internalFailure, "stream already finished or chunk too large")
            }
            if chunk.isEmpty { return [] }
            var ok = false
            let out = [UInt8](unsafeUninitializedCapacity: chunk.count) { buffer, initialized in
                var outLength: Int32 = 0
                ok = EVP_CipherUpdate(ctx, buffer.baseAddress, &outLength,
                                      chunk.baseAddress?.assumingMemoryBound(to: UInt8.self), Int32(chunk.count)) == 1
                    && Int(outLength) == chunk.count
                initialized = ok ? chunk.count : 0
            }
            guard ok else {
                ERR_clear_error()
                throw CryptoError(.internalFailure, "OpenSSL AES-256-GCM update failed")
            }
            return out
        }

        /// Finishes sealing and returns the 16-byte tag to append after the ciphertext.
        /// - Throws: `CryptoError` `.internalFailure`.
        public func finish() throws -> [UInt8] {
            guard encrypting, let ctx else { throw CryptoError(.internalFailure, "not a sealing stream, or already finished") }
            defer { release() }
            var tag = [UInt8](repeating: 0, count: tagByteCount)
            var outLength: Int32 = 0
            var scratch = [UInt8](repeating: 0, count: 16)
            guard EVP_CipherFinal_ex(ctx, &scratch, &outLength) == 1,
                  EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG, Int32(tagByteCount), &tag) == 1 else {
                ERR_clear_error()
                throw CryptoError(.internalFailure, "OpenSSL could not finish sealing")
            }
            return tag
        }

        /// Finishes opening: verifies the 16-byte `tag` over everything processed.
        /// Only after this returns may the plaintext be released.
        /// - Throws: `CryptoError` `.invalidTagSize`, `.authenticationFailed`.
        public func finish(tag: [UInt8]) throws {
            guard !encrypting, let ctx else { throw CryptoError(.internalFailure, "not an opening stream, or already finished") }
            defer { release() }
            guard tag.count == tagByteCount else {
                throw CryptoError(.invalidTagSize, "an AES-256-GCM tag is \(tagByteCount) bytes, got \(tag.count)")
            }
            var tagCopy = tag
            var outLength: Int32 = 0
            var scratch = [UInt8](repeating: 0, count: 16)
            guard EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_TAG, Int32(tagByteCount), &tagCopy) == 1,
                  EVP_CipherFinal_ex(ctx, &scratch, &outLength) == 1 else {
                ERR_clear_error()
                throw CryptoError(.authenticationFailed, "the box did not authenticate (wrong key, wrong AAD or modified data)")
            }
        }

        /// Frees the context now (OpenSSL cleanses the key schedule when it frees it).
        private func release() {
            EVP_CIPHER_CTX_free(ctx)
            ctx = nil
        }
    }
}
