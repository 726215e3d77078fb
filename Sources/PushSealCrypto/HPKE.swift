internal import COpenSSL
internal import CSodium

/// HPKE (RFC 9180) single-shot seal/open and secret export for one ciphersuite:
/// DHKEM(X25519, HKDF-SHA256) / HKDF-SHA256 / AES-256-GCM (KEM 0x0020, KDF 0x0001, AEAD 0x0002),
/// the suite of wire format v2 and of CryptoKit's
/// `HPKE.Ciphersuite(kem: .Curve25519_HKDF_SHA256, kdf: .HKDF_SHA256, aead: .AES_GCM_256)`.
///
/// The mode follows from the arguments (RFC 9180 §5): no sender key and no PSK is mode_base
/// (0x00), a PSK alone mode_psk (0x01), a sender key alone mode_auth (0x02), both mode_auth_psk
/// (0x03). Single-shot means sequence number 0 (RFC 9180 §6.1): the AEAD nonce is the key
/// schedule's `base_nonce` and never travels.
///
/// Sealed message layout: enc(32) ‖ ciphertext(plaintext count) ‖ tag(16) — 48 bytes more than
/// the plaintext. `enc` is the sender's fresh ephemeral X25519 public key; every seal makes a
/// new one (OpenSSL's DRBG), so no entry point takes a caller's ephemeral key.
///
/// Composed from OpenSSL 3.0 primitives only — X25519 (``X25519``, `EVP_PKEY_derive`),
/// HMAC-SHA256 for HKDF extract/expand (`EVP_MAC`, see `MACContext`) and AES-256-GCM
/// (``AES256GCM``'s per-thread cipher context); proved by all RFC 9180 test vectors of the suite
/// in all four modes. Open refuses a wrong-length `enc` (`.invalidPublicKey`) and an `enc` whose
/// shared secret is all zero (`.zeroSharedSecret`, RFC 9180 §7.1.4) before anything else; every
/// other mismatch (wrong info, AAD, key, sender key, PSK, `enc`, or any modified bit) fails one
/// way, `.authenticationFailed`.
///
/// Thread-safe; all intermediate secrets live in one stack scratch area zeroed before return.
public enum HPKE {
    /// `enc`, the encapsulated key (X25519 public key, Nenc): 32 bytes.
    public static let encByteCount = 32
    /// AEAD tag (Nt): 16 bytes.
    public static let tagByteCount = 16
    /// What seal adds to the plaintext: enc(32) + tag(16) = 48 bytes.
    public static let overheadByteCount = encByteCount + tagByteCount
    /// Largest exported secret: 255 × 32 = 8160 bytes (RFC 9180 §5.3, HKDF-SHA256).
    public static let maxExportByteCount = 255 * 32
    /// Smallest pre-shared key accepted: 32 bytes (RFC 9180 §5.1.2: at least 32 bytes of entropy).
    public static let minimumPSKByteCount = 32

    /// The RFC 9180 mode identifiers (§5, Table 1).
    public enum Mode: UInt8, Sendable, CaseIterable {
        /// mode_base 0x00: sealed to the recipient key alone.
        case base = 0x00
        /// mode_psk 0x01: also bound to a pre-shared key.
        case psk = 0x01
        /// mode_auth 0x02: also authenticated by the sender's static X25519 key.
        case auth = 0x02
        /// mode_auth_psk 0x03: sender key and pre-shared key.
        case authPSK = 0x03

        /// The mode the given optional inputs select.
        public init(hasSenderKey: Bool, hasPSK: Bool) {
            switch (hasSenderKey, hasPSK) {
            case (false, false): self = .base
            case (false, true): self = .psk
            case (true, false): self = .auth
            case (true, true): self = .authPSK
            }
        }
    }

    /// A pre-shared key and its identifier for the psk modes (RFC 9180 §5.1, `psk`, `psk_id`).
    public struct PresharedKey: Sendable {
        /// The secret, at least 32 bytes.
        public let key: SecretBytes
        /// The identifier (not secret), at least one byte.
        public let id: [UInt8]

        /// - Parameters:
        ///   - key: at least ``HPKE/minimumPSKByteCount`` (32) bytes.
        ///   - id: a non-empty identifier (RFC 9180 §5.1.1 `VerifyPSKInputs`: both or neither).
        /// - Throws: `CryptoError` `.invalidParameter`.
        public init(key: SecretBytes, id: [UInt8]) throws {
            guard key.byteCount >= HPKE.minimumPSKByteCount else {
                throw CryptoError(.invalidParameter, "an HPKE pre-shared key is at least \(HPKE.minimumPSKByteCount) bytes, got \(key.byteCount)")
            }
            guard !id.isEmpty else { throw CryptoError(.invalidParameter, "an HPKE pre-shared key needs a non-empty id") }
            self.key = key
            self.id = id
        }
    }

    // MARK: Seal

    /// Seals `plaintext` to `recipient` (RFC 9180 §6.1 `Seal<MODE>`; `SetupBaseS`/`SetupAuthS`/
    /// `SetupPSKS`/`SetupAuthPSKS` then one `Seal` at sequence number 0).
    /// - Parameters:
    ///   - plaintext: any bytes (may be empty).
    ///   - recipient: the recipient's X25519 public key (`pkR`).
    ///   - info: the application info bound into the key schedule (may be empty).
    ///   - aad: AEAD additional data (may be empty; wire format v2 uses none).
    ///   - sender: the sender's static private key (`skS`) for the auth modes, else nil.
    ///   - psk: a pre-shared key for the psk modes, else nil.
    /// - Returns: enc(32) ‖ ciphertext ‖ tag(16), `plaintext.count + 48` bytes.
    /// - Throws: `CryptoError` `.zeroSharedSecret` (a low-order `recipient`), `.internalFailure`.
    public static func seal(_ plaintext: [UInt8], to recipient: X25519.PublicKey, info: [UInt8], authenticating aad: [UInt8] = [],
                            sender: X25519.PrivateKey? = nil, psk: PresharedKey? = nil) throws -> [UInt8] {
        try seal(plaintext, to: recipient, info: info, authenticating: aad, sender: sender, psk: psk, ephemeral: nil)
    }

    /// As ``seal(_:to:info:authenticating:sender:psk:)-(([UInt8],_,_,_,_,_))`` on caller
    /// memory: writes enc(32) ‖ ciphertext ‖ tag(16) at the start of `output`, no allocation.
    ///
    /// Bytes of `output` past the returned count are untouched. `plaintext` and `output` must
    /// not overlap. After a throw the first `plaintext.count + 48` bytes of `output` hold no
    /// usable message (never plaintext) and must not be sent.
    /// - Parameters:
    ///   - output: room for at least `plaintext.count + 48` bytes.
    /// - Returns: the number of bytes written, `plaintext.count + 48`.
    /// - Throws: `CryptoError` `.invalidParameter` when `output` is too small, `.zeroSharedSecret`,
    ///   `.internalFailure`.
    public static func seal(_ plaintext: UnsafeRawBufferPointer, to recipient: X25519.PublicKey, info: UnsafeRawBufferPointer,
                            authenticating aad: UnsafeRawBufferPointer = UnsafeRawBufferPointer(start: nil, count: 0),
                            sender: X25519.PrivateKey? = nil, psk: PresharedKey? = nil,
                            into output: UnsafeMutableRawBufferPointer) throws -> Int {
        try seal(plaintext, to: recipient, info: info, authenticating: aad, sender: sender, psk: psk, ephemeral: nil, into: output)
    }

    /// Seal with a caller's ephemeral key: known-answer tests only (the RFC 9180 vectors fix
    /// `skEm`). Never public — reusing an ephemeral key reuses the AEAD key and nonce.
    static func seal(_ plaintext: [UInt8], to recipient: X25519.PublicKey, info: [UInt8], authenticating aad: [UInt8],
                     sender: X25519.PrivateKey?, pair: AuthPair? = nil, psk: PresharedKey?, ephemeral: X25519.PrivateKey?) throws -> [UInt8] {
        let total = plaintext.count + overheadByteCount
        var failure: (any Error)?
        let message = [UInt8](unsafeUninitializedCapacity: total) { out, initialized in
            initialized = total
            do {
                _ = try plaintext.withUnsafeBytes { p in
                    try info.withUnsafeBytes { i in
                        try aad.withUnsafeBytes { a in
                            try seal(p, to: recipient, info: i, authenticating: a, sender: sender, pair: pair, psk: psk, ephemeral: ephemeral,
                                     into: UnsafeMutableRawBufferPointer(out))
                        }
                    }
                }
            } catch {
                failure = error
            }
        }
        if let failure { throw failure }
        return message
    }

    /// The one seal every entry point runs: `pair` (auth modes with the static secret computed
    /// once) takes the place of `sender`, and `recipient` is then the pair's recipient.
    static func seal(_ plaintext: UnsafeRawBufferPointer, to recipient: X25519.PublicKey, info: UnsafeRawBufferPointer,
                     authenticating aad: UnsafeRawBufferPointer, sender: X25519.PrivateKey?, pair: AuthPair? = nil, psk: PresharedKey?,
                     ephemeral: X25519.PrivateKey?, into output: UnsafeMutableRawBufferPointer) throws -> Int {
        let total = plaintext.count + overheadByteCount
        guard output.count >= total, let base = output.baseAddress else {
            throw CryptoError(.invalidParameter, "sealing \(plaintext.count) bytes needs \(total) bytes of output, got \(output.count)")
        }
        return try Scratch.with { scratch in
            try setupSender(recipient: recipient, info: info, sender: sender, pair: pair, psk: psk, ephemeral: ephemeral,
                            enc: base, scratch: scratch, exporter: false)
            let sealed = CipherContext.run(encrypt: true, key: scratch.key, nonce: scratch.baseNonce, aad: aad, input: plaintext,
                                           output: base + encByteCount, tag: base + encByteCount + plaintext.count)
            guard sealed else {
                ERR_clear_error()
                throw CryptoError(.internalFailure, "OpenSSL could not seal")
            }
            return total
        }
    }

    // MARK: Open

    /// Opens a sealed message (RFC 9180 §6.1 `Open<MODE>`: `Setup<MODE>R` from `enc`, then one
    /// `Open` at sequence number 0).
    /// - Parameters:
    ///   - message: enc(32) ‖ ciphertext ‖ tag(16), at least 48 bytes.
    ///   - recipient: the recipient's private key (`skR`).
    ///   - info: the info given at seal time.
    ///   - aad: the AAD given at seal time.
    ///   - sender: the sender's public key (`pkS`) for the auth modes, else nil.
    ///   - psk: the pre-shared key for the psk modes, else nil.
    /// - Returns: the plaintext, only after the tag verified.
    /// - Throws: `CryptoError`, in this order: `.invalidPublicKey` (fewer than 32 bytes: a
    ///   truncated `enc`), `.truncatedBox` (fewer than 48), `.zeroSharedSecret` (a low-order
    ///   `enc` or sender key), `.authenticationFailed` (wrong key, info, AAD, sender, PSK, `enc`,
    ///   mode, or any modified bit), `.internalFailure`.
    public static func open(_ message: [UInt8], with recipient: X25519.PrivateKey, info: [UInt8], authenticating aad: [UInt8] = [],
                            sender: X25519.PublicKey? = nil, psk: PresharedKey? = nil) throws -> [UInt8] {
        try message.withUnsafeBytes { m in
            try info.withUnsafeBytes { i in
                try aad.withUnsafeBytes { a in try open(m, with: recipient, info: i, authenticating: a, sender: sender, psk: psk) }
            }
        }
    }

    /// As ``open(_:with:info:authenticating:sender:psk:)-(([UInt8],_,_,_,_,_))`` on bytes in
    /// caller memory (e.g. a decoded `encrypted_data`).
    /// - Throws: as the array form.
    public static func open(_ message: UnsafeRawBufferPointer, with recipient: X25519.PrivateKey, info: UnsafeRawBufferPointer,
                            authenticating aad: UnsafeRawBufferPointer = UnsafeRawBufferPointer(start: nil, count: 0),
                            sender: X25519.PublicKey? = nil, psk: PresharedKey? = nil) throws -> [UInt8] {
        try open(message, with: recipient, info: info, authenticating: aad, sender: sender, pair: nil, psk: psk)
    }

    /// The one open every entry point runs: `pair` (auth modes with the static secret computed
    /// once, for `recipient`'s public key: checked by the caller) takes the place of `sender`.
    static func open(_ message: UnsafeRawBufferPointer, with recipient: X25519.PrivateKey, info: UnsafeRawBufferPointer,
                     authenticating aad: UnsafeRawBufferPointer, sender: X25519.PublicKey?, pair: AuthPair?,
                     psk: PresharedKey?) throws -> [UInt8] {
        guard message.count >= encByteCount, let base = message.baseAddress else {
            throw CryptoError(.invalidPublicKey, "an HPKE message starts with a \(encByteCount)-byte enc, got \(message.count) bytes")
        }
        guard message.count >= overheadByteCount else {
            throw CryptoError(.truncatedBox, "an HPKE message is at least \(overheadByteCount) bytes (32-byte enc, 16-byte tag), got \(message.count)")
        }
        let ciphertextCount = message.count - overheadByteCount
        return try Scratch.with { scratch in
            try setupRecipient(enc: UnsafeRawBufferPointer(start: base, count: encByteCount), recipient: recipient, info: info,
                               sender: sender, pair: pair, psk: psk, scratch: scratch, exporter: false)
            var ok = false
            // Capacity of at least one byte so the buffer always has an address, even for an empty message.
            var plaintext = [UInt8](unsafeUninitializedCapacity: max(ciphertextCount, 1)) { out, initialized in
                initialized = ciphertextCount
                guard let outBase = UnsafeMutableRawPointer(out.baseAddress) else { return }
                // The tag is copied out: OpenSSL's set-tag takes a mutable pointer.
                let tag = scratch.tagCopy
                tag.copyMemory(from: UnsafeRawBufferPointer(start: base + encByteCount + ciphertextCount, count: tagByteCount))
                ok = CipherContext.run(encrypt: false, key: scratch.key, nonce: scratch.baseNonce, aad: aad,
                                       input: UnsafeRawBufferPointer(start: base + encByteCount, count: ciphertextCount),
                                       output: outBase, tag: tag.baseAddress ?? outBase)
            }
            guard ok else {
                SecretBytes.wipe(&plaintext)
                ERR_clear_error()
                throw CryptoError(.authenticationFailed, "the HPKE message did not authenticate (wrong key, info, AAD, sender or modified data)")
            }
            return plaintext
        }
    }

    // MARK: Secret export

    /// Single-shot secret export, sender side (RFC 9180 §6.2 `SendExport`, §5.3 `Export`).
    /// - Parameters:
    ///   - recipient: `pkR`.
    ///   - info: application info (may be empty).
    ///   - exporterContext: the export's context (may be empty).
    ///   - outputByteCount: L, 0...8160 bytes.
    ///   - sender, psk: as for seal (select the mode).
    /// - Returns: the 32-byte `enc` to send, and L bytes of exported secret.
    /// - Throws: `CryptoError` `.invalidParameter` (L out of range), `.zeroSharedSecret`, `.internalFailure`.
    public static func sendExport(to recipient: X25519.PublicKey, info: [UInt8], exporterContext: [UInt8], outputByteCount: Int,
                                  sender: X25519.PrivateKey? = nil, psk: PresharedKey? = nil) throws -> (enc: [UInt8], secret: SecretBytes) {
        let context = try setupSender(recipient: recipient, info: info, sender: sender, psk: psk, ephemeral: nil)
        return (context.enc, try context.context.export(exporterContext, outputByteCount: outputByteCount))
    }

    /// Single-shot secret export, recipient side (RFC 9180 §6.2 `ReceiveExport`).
    /// - Parameters:
    ///   - enc: the 32-byte `enc` from ``sendExport(to:info:exporterContext:outputByteCount:sender:psk:)``.
    ///   - recipient: `skR`.
    ///   - info, exporterContext, outputByteCount, sender, psk: as on the sender side.
    /// - Returns: L bytes, equal to the sender's when every input matches.
    /// - Throws: `CryptoError` `.invalidPublicKey` (enc not 32 bytes), `.zeroSharedSecret`,
    ///   `.invalidParameter`, `.internalFailure`.
    public static func receiveExport(enc: [UInt8], with recipient: X25519.PrivateKey, info: [UInt8], exporterContext: [UInt8],
                                     outputByteCount: Int, sender: X25519.PublicKey? = nil, psk: PresharedKey? = nil) throws -> SecretBytes {
        let context = try setupRecipient(enc: enc, recipient: recipient, info: info, sender: sender, psk: psk)
        return try context.export(exporterContext, outputByteCount: outputByteCount)
    }

    // MARK: Keys

    /// `DeriveKeyPair(ikm)` for DHKEM(X25519, HKDF-SHA256) (RFC 9180 §7.1.3): a deterministic
    /// key pair from input keying material, e.g. for test fixtures.
    /// - Parameter ikm: at least 32 bytes of secret input.
    /// - Returns: the derived private key (its ``X25519/PrivateKey/publicKey`` is `pk`).
    /// - Throws: `CryptoError` `.invalidParameter` when `ikm` is shorter than 32 bytes, `.internalFailure`.
    public static func deriveKeyPair(inputKeyMaterial ikm: SecretBytes) throws -> X25519.PrivateKey {
        guard ikm.byteCount >= X25519.privateKeyByteCount else {
            throw CryptoError(.invalidParameter, "DeriveKeyPair needs at least \(X25519.privateKeyByteCount) bytes of input, got \(ikm.byteCount)")
        }
        var prk = [UInt8](repeating: 0, count: MACContext.hashByteCount)
        var sk = [UInt8](repeating: 0, count: X25519.privateKeyByteCount)
        defer {
            SecretBytes.wipe(&prk)
            SecretBytes.wipe(&sk)
            MACContext.scrub()
        }
        let ok = ikm.withUnsafeBytes { i in
            prk.withUnsafeMutableBytes { p in
                sk.withUnsafeMutableBytes { s in
                    guard let pBase = p.baseAddress, let sBase = s.baseAddress else { return false }
                    return labeledExtract(salt: Self.empty, suite: kemSuiteID, label: "dkp_prk", ikm: i, into: pBase)
                        && labeledExpand(prk: UnsafeRawBufferPointer(p), suite: kemSuiteID, label: "sk", info: Self.empty,
                                         byteCount: X25519.privateKeyByteCount, into: sBase)
                }
            }
        }
        guard ok else { throw CryptoError(.internalFailure, "OpenSSL HMAC failed") }
        return try X25519.PrivateKey(rawRepresentation: SecretBytes(copying: sk))
    }
}
