// The span entries (issue 27, step 4): the seal and open calls of the wire module's envelopes
// take `RawSpan` and `MutableRawSpan` (lifetime-checked by the compiler), and the raw buffers
// the OpenSSL and libsodium calls need are made here, each only for the length of one call.
// Each entry is the pointer form of the same name with the spans' memory: same bytes, same
// errors.

extension AES256GCM {
    /// Seals `plaintext` under `key` with a fresh random nonce into `output` (see
    /// ``seal(_:with:authenticating:into:)-(UnsafeRawBufferPointer,_,_,_)``): nonce(12) ‖
    /// ciphertext ‖ tag(16) at the start of `output`, nothing allocated.
    /// - Parameters:
    ///   - plaintext: any bytes (may be empty).
    ///   - key: a 32-byte key.
    ///   - aad: additional authenticated data (may be empty).
    ///   - output: room for at least `plaintext.byteCount + 28` bytes; must not overlap `plaintext`.
    /// - Returns: the number of bytes written, `plaintext.byteCount + 28`.
    /// - Throws: `CryptoError` `.invalidKeySize`, `.invalidParameter` (`output` too small), `.internalFailure`.
    @inlinable
    public static func seal(_ plaintext: RawSpan, with key: SecretBytes, authenticating aad: RawSpan,
                            into output: inout MutableRawSpan) throws -> Int {
        // Safe: each buffer is the memory of a span the caller lends for this call (the output
        // exclusively); the pointer form reads and writes inside them and keeps none.
        try plaintext.withUnsafeBytes { p in
            try aad.withUnsafeBytes { a in
                try output.withUnsafeMutableBytes { o in try seal(p, with: key, authenticating: a, into: o) }
            }
        }
    }

    /// Opens a combined box nonce(12) ‖ ciphertext ‖ tag(16) under `key`, verifying the tag over
    /// nonce, ciphertext and `aad` (the span form of ``open(_:with:authenticating:)``, no copy
    /// of the box).
    /// - Parameters:
    ///   - box: the combined box, at least 28 bytes.
    ///   - key: the 32-byte key it was sealed with.
    ///   - aad: the same AAD given at seal time.
    /// - Returns: the plaintext, only after the tag verified.
    /// - Throws: `CryptoError` `.truncatedBox` (shorter than 28 bytes), `.invalidKeySize`,
    ///   `.authenticationFailed`.
    public static func open(combined box: RawSpan, with key: SecretBytes, authenticating aad: RawSpan) throws -> [UInt8] {
        guard box.byteCount >= minimumCombinedByteCount else {
            throw CryptoError(.truncatedBox, "a sealed box is at least \(minimumCombinedByteCount) bytes (12-byte nonce, 16-byte tag), got \(box.byteCount)")
        }
        // Safe: the buffers are the memory of spans the caller lends for this call; the three
        // parts lie inside the box (its length checked just above) and only the call reads them.
        return try box.withUnsafeBytes { c in
            try aad.withUnsafeBytes { a in
                let t = c.count - tagByteCount
                return try open(nonce: UnsafeRawBufferPointer(rebasing: c[0..<nonceByteCount]),
                                ciphertext: UnsafeRawBufferPointer(rebasing: c[nonceByteCount..<t]),
                                tag: UnsafeRawBufferPointer(rebasing: c[t...]), with: key, authenticating: a)
            }
        }
    }
}

extension HPKE {
    /// `SealBase` (no `sender`) or `SealAuth` (RFC 9180 §6.1) of `plaintext` into `output`: the
    /// span form of ``seal(_:to:info:authenticating:sender:psk:into:)``, empty AAD, no PSK.
    /// - Parameters:
    ///   - plaintext: any bytes (may be empty).
    ///   - recipient: the recipient's X25519 public key (`pkR`).
    ///   - info: the application info (may be empty).
    ///   - sender: the sender's static private key for auth mode, else nil.
    ///   - output: room for at least `plaintext.byteCount + 48` bytes; must not overlap `plaintext`.
    /// - Returns: the number of bytes written, `plaintext.byteCount + 48`.
    /// - Throws: `CryptoError` `.invalidParameter` (`output` too small), `.zeroSharedSecret`, `.internalFailure`.
    @inlinable
    public static func seal(_ plaintext: RawSpan, to recipient: X25519.PublicKey, info: RawSpan, sender: X25519.PrivateKey? = nil,
                            into output: inout MutableRawSpan) throws -> Int {
        // Safe: each buffer is the memory of a span the caller lends for this call (the output
        // exclusively); the pointer form reads and writes inside them and keeps none.
        try plaintext.withUnsafeBytes { p in
            try info.withUnsafeBytes { i in
                try output.withUnsafeMutableBytes { o in try seal(p, to: recipient, info: i, sender: sender, into: o) }
            }
        }
    }

    /// `SealAuth` with the static secret of `pair` into `output`: the span form of
    /// ``seal(_:for:info:authenticating:psk:into:)``, empty AAD, no PSK.
    /// - Returns: the number of bytes written, `plaintext.byteCount + 48`.
    /// - Throws: `CryptoError` `.invalidParameter` (`output` too small), `.zeroSharedSecret`, `.internalFailure`.
    @inlinable
    public static func seal(_ plaintext: RawSpan, for pair: AuthPair, info: RawSpan, into output: inout MutableRawSpan) throws -> Int {
        // Safe: as the sender-key form above.
        try plaintext.withUnsafeBytes { p in
            try info.withUnsafeBytes { i in
                try output.withUnsafeMutableBytes { o in try seal(p, for: pair, info: i, into: o) }
            }
        }
    }

    /// `OpenBase` (no `sender`) or `OpenAuth` of `message`: the span form of
    /// ``open(_:with:info:authenticating:sender:psk:)-(UnsafeRawBufferPointer,_,_,_,_,_)``,
    /// empty AAD, no PSK.
    /// - Parameters:
    ///   - message: enc(32) ‖ ciphertext ‖ tag(16), at least 48 bytes.
    ///   - recipient: the recipient's private key (`skR`).
    ///   - info: the info given at seal time.
    ///   - sender: the sender's public key for auth mode, else nil.
    /// - Returns: the plaintext, only after the tag verified.
    /// - Throws: as the pointer form: `.invalidPublicKey`, `.truncatedBox`, `.zeroSharedSecret`,
    ///   `.authenticationFailed`, `.internalFailure`.
    public static func open(_ message: RawSpan, with recipient: X25519.PrivateKey, info: RawSpan,
                            sender: X25519.PublicKey? = nil) throws -> [UInt8] {
        // Safe: the buffers are the memory of spans the caller lends for this call, only read.
        try message.withUnsafeBytes { m in
            try info.withUnsafeBytes { i in try open(m, with: recipient, info: i, sender: sender) }
        }
    }

    /// `OpenAuth` with the static secret of `pair`: the span form of
    /// ``open(_:with:from:info:authenticating:psk:)-(UnsafeRawBufferPointer,_,_,_,_,_)``, empty AAD, no PSK.
    /// - Returns: the plaintext, only after the tag verified.
    /// - Throws: `CryptoError` `.invalidParameter` (the pair is for another recipient key), then
    ///   as the sender-key form.
    public static func open(_ message: RawSpan, with recipient: X25519.PrivateKey, from pair: AuthPair, info: RawSpan) throws -> [UInt8] {
        // Safe: the buffers are the memory of spans the caller lends for this call, only read.
        try message.withUnsafeBytes { m in
            try info.withUnsafeBytes { i in try open(m, with: recipient, from: pair, info: i) }
        }
    }
}

extension HPKE.AuthPairCache {
    /// The sender side of ``pair(sender:senderKeyID:recipientPublicKey:recipientKeyID:)-(_,_,UnsafeRawBufferPointer,_)``
    /// with the recipient public key held as a sealing key (`SealingKey.key`, 32 bytes).
    /// - Throws: `CryptoError` `.invalidPublicKey` (not 32 bytes), `.zeroSharedSecret`, `.internalFailure`.
    public func pair(sender: X25519.PrivateKey, senderKeyID: String, recipientPublicKey: SecretBytes,
                     recipientKeyID: String) throws -> HPKE.AuthPair {
        // Safe: the key's bytes are read during the call only (compared, imported), never kept.
        try recipientPublicKey.withUnsafeBytes {
            try pair(sender: sender, senderKeyID: senderKeyID, recipientPublicKey: $0, recipientKeyID: recipientKeyID)
        }
    }
}

extension X25519.PublicKeyCache {
    /// ``publicKey(for:rawBytes:)`` with the 32 raw public-key bytes held as a sealing key.
    /// - Throws: `CryptoError` `.invalidPublicKey`, `.internalFailure`.
    public func publicKey(for keyID: String, rawRepresentation key: SecretBytes) throws -> X25519.PublicKey {
        // Safe: the key's bytes are read during the call only (compared, imported), never kept.
        try key.withUnsafeBytes { try publicKey(for: keyID, rawBytes: $0) }
    }
}

extension X25519.PublicKey {
    /// Imports the 32 raw public-key bytes held as a sealing key (``init(rawBytes:)`` on them).
    /// - Throws: `CryptoError` `.invalidPublicKey`, `.internalFailure`.
    public static func imported(from key: SecretBytes) throws -> X25519.PublicKey {
        // Safe: the key's bytes are read during the import only, never kept.
        try key.withUnsafeBytes { try X25519.PublicKey(rawBytes: $0) }
    }
}

extension SecretBytes {
    /// Overwrites the bytes of `bytes` with zeros (`sodium_memzero`, which the optimizer cannot
    /// drop), e.g. a plaintext in a temporary buffer once it is sealed.
    public static func wipe(_ bytes: inout MutableRawSpan) {
        // Safe: the buffer is the span's memory, lent exclusively for this call.
        bytes.withUnsafeMutableBytes { wipe($0) }
    }
}
