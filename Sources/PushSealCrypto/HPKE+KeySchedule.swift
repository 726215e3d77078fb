internal import COpenSSL
internal import CSodium

// The DHKEM and the key schedule of RFC 9180 (§4, §4.1, §5.1, §5.2, §5.3) for
// DHKEM(X25519, HKDF-SHA256) / HKDF-SHA256 / AES-256-GCM. Both the single-shot seal/open and
// the sequence-numbered `Context` (vectors, exports) run through `setupSender` /
// `setupRecipient` below, so the vectors test the production path.

extension HPKE {
    /// `suite_id` of the KEM: "KEM" ‖ I2OSP(0x0020, 2) (RFC 9180 §4.1).
    static let kemSuiteID: StaticString = "KEM\u{0}\u{20}"
    /// `suite_id` of the HPKE suite: "HPKE" ‖ 0x0020 ‖ 0x0001 ‖ 0x0002 (RFC 9180 §5.1).
    static let suiteID: StaticString = "HPKE\u{0}\u{20}\u{0}\u{1}\u{0}\u{2}"
    /// The label prefix "HPKE-v1" (RFC 9180 §4).
    static let versionLabel: StaticString = "HPKE-v1"
    /// Nk, Nn, Nh of the suite (RFC 9180 §7.2, §7.3): 32, 12, 32 bytes.
    static let keyByteCount = 32, nonceByteCount = 12, exporterSecretByteCount = 32
    /// Zero bytes.
    static var empty: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: nil, count: 0) }

    /// `LabeledExtract(salt, label, ikm)` = HKDF-Extract(salt, "HPKE-v1" ‖ suite_id ‖ label ‖ ikm)
    /// into 32 bytes at `out` (RFC 9180 §4).
    static func labeledExtract(salt: UnsafeRawBufferPointer, suite: StaticString, label: StaticString, ikm: UnsafeRawBufferPointer,
                               into out: UnsafeMutableRawPointer) -> Bool {
        versionLabel.withUTF8Buffer { v in
            suite.withUTF8Buffer { s in
                label.withUTF8Buffer { l in
                    MACContext.extract(salt: salt, into: out) { ctx in
                        MACContext.feed(ctx, UnsafeRawBufferPointer(v)) && MACContext.feed(ctx, UnsafeRawBufferPointer(s))
                            && MACContext.feed(ctx, UnsafeRawBufferPointer(l)) && MACContext.feed(ctx, ikm)
                    }
                }
            }
        }
    }

    /// `LabeledExpand(prk, label, info, L)` = HKDF-Expand(prk, I2OSP(L, 2) ‖ "HPKE-v1" ‖ suite_id ‖
    /// label ‖ info, L) into L bytes at `out` (RFC 9180 §4). L is 0...8160.
    static func labeledExpand(prk: UnsafeRawBufferPointer, suite: StaticString, label: StaticString, info: UnsafeRawBufferPointer,
                              byteCount: Int, into out: UnsafeMutableRawPointer) -> Bool {
        guard byteCount >= 0, byteCount <= maxExportByteCount else { return false }
        var length = (UInt8(truncatingIfNeeded: byteCount >> 8), UInt8(truncatingIfNeeded: byteCount))
        return withUnsafeBytes(of: &length) { n in
            versionLabel.withUTF8Buffer { v in
                suite.withUTF8Buffer { s in
                    label.withUTF8Buffer { l in
                        MACContext.expand(prk: prk, byteCount: byteCount, into: out) { ctx in
                            MACContext.feed(ctx, n) && MACContext.feed(ctx, UnsafeRawBufferPointer(v)) && MACContext.feed(ctx, UnsafeRawBufferPointer(s))
                                && MACContext.feed(ctx, UnsafeRawBufferPointer(l)) && MACContext.feed(ctx, info)
                        }
                    }
                }
            }
        }
    }

    /// `psk_id_hash` for the empty `psk_id` of modes base and auth: a constant of the suite,
    /// computed once (nil only if OpenSSL failed then; it is recomputed per call in that case).
    static let emptyPSKIDHash: [UInt8]? = {
        var out = [UInt8](repeating: 0, count: MACContext.hashByteCount)
        let ok = out.withUnsafeMutableBytes { o in
            o.baseAddress.map { labeledExtract(salt: empty, suite: suiteID, label: "psk_id_hash", ikm: empty, into: $0) } ?? false
        }
        MACContext.scrub()
        return ok ? out : nil
    }()

    /// The stack area one setup works in; every intermediate secret lives here and is zeroed
    /// (with `sodium_memzero`) when ``with(_:)`` returns or throws.
    struct Scratch {
        static let byteCount = 448
        let base: UnsafeMutableRawPointer

        /// DH output: 32 bytes (base, psk) or 64 (auth: DH(skE, pkR) ‖ DH(skS, pkR)).
        var dh: UnsafeMutableRawPointer { base }
        /// kem_context: enc ‖ pkRm (64 bytes), ‖ pkSm in the auth modes (96).
        var kemContext: UnsafeMutableRawPointer { base + 64 }
        var eaePRK: UnsafeMutableRawPointer { base + 160 }
        var sharedSecret: UnsafeMutableRawPointer { base + 192 }
        /// key_schedule_context: mode ‖ psk_id_hash ‖ info_hash, 65 bytes.
        var keyScheduleContext: UnsafeMutableRawPointer { base + 224 }
        var secret: UnsafeMutableRawPointer { base + 296 }
        var keyPointer: UnsafeMutableRawPointer { base + 328 }
        var baseNoncePointer: UnsafeMutableRawPointer { base + 360 }
        var exporterPointer: UnsafeMutableRawPointer { base + 372 }
        /// Room for a copy of a 16-byte tag (OpenSSL's set-tag takes a mutable pointer).
        var tagCopy: UnsafeMutableRawBufferPointer { UnsafeMutableRawBufferPointer(start: base + 404, count: HPKE.tagByteCount) }

        var key: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: keyPointer, count: HPKE.keyByteCount) }
        var baseNonce: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: baseNoncePointer, count: HPKE.nonceByteCount) }
        var exporterSecret: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: exporterPointer, count: HPKE.exporterSecretByteCount) }

        /// Runs `body` on a fresh zeroed scratch area, then zeroes it and scrubs the HMAC context.
        static func with<R>(_ body: (Scratch) throws -> R) throws -> R {
            try withUnsafeTemporaryAllocation(byteCount: byteCount, alignment: 16) { buffer in
                guard let base = buffer.baseAddress else { throw CryptoError(.internalFailure, "no scratch memory") }
                sodium_memzero(base, byteCount)
                defer {
                    sodium_memzero(base, byteCount)
                    MACContext.scrub()
                }
                return try body(Scratch(base: base))
            }
        }
    }

    /// `Encap` / `AuthEncap` (RFC 9180 §4.1) then `KeySchedule<ROLE>` (§5.1): writes the 32-byte
    /// enc to `enc` and the schedule's secrets into `scratch`. The ephemeral key is `ephemeral`
    /// (vectors) or a fresh one that lives only inside OpenSSL (freed, and so cleansed, here).
    ///
    /// The auth modes take either `sender` (the second DH, DH(skS, pkR), is computed here) or
    /// `pair` (its ``AuthPair/staticSecret`` is that DH, computed once; `recipient` must be
    /// the pair's recipient): the bytes that result are the same.
    static func setupSender(recipient: X25519.PublicKey, info: UnsafeRawBufferPointer, sender: X25519.PrivateKey?, pair: AuthPair? = nil,
                            psk: PresharedKey?, ephemeral: X25519.PrivateKey?, enc: UnsafeMutableRawPointer, scratch: Scratch,
                            exporter: Bool) throws {
        let generated: OpaquePointer? = ephemeral == nil ? X25519.generate() : nil
        defer { if let generated { EVP_PKEY_free(generated) } }
        guard let skE = ephemeral?.pkey ?? generated else {
            ERR_clear_error()
            throw CryptoError(.internalFailure, "OpenSSL could not generate an X25519 key")
        }
        var encLength = encByteCount
        guard EVP_PKEY_get_raw_public_key(skE, enc.assumingMemoryBound(to: UInt8.self), &encLength) == 1, encLength == encByteCount else {
            ERR_clear_error()
            throw CryptoError(.internalFailure, "OpenSSL could not export an X25519 public key")
        }
        try X25519.derive(skE, peer: recipient.pkey, into: scratch.dh)
        let senderPublic: X25519.PublicKey?
        if let pair {
            pair.copyStaticSecret(into: scratch.dh + X25519.sharedSecretByteCount)
            senderPublic = pair.senderPublicKey
        } else if let sender {
            try X25519.derive(sender.pkey, peer: recipient.pkey, into: scratch.dh + X25519.sharedSecretByteCount)
            senderPublic = sender.publicKey
        } else {
            senderPublic = nil
        }
        scratch.kemContext.copyMemory(from: enc, byteCount: encByteCount)
        recipient.rawRepresentation.withUnsafeBytes { (scratch.kemContext + encByteCount).copyMemory(from: $0.baseAddress ?? UnsafeRawPointer(enc), byteCount: $0.count) }
        if let senderPublic {
            senderPublic.rawRepresentation.withUnsafeBytes {
                (scratch.kemContext + 2 * encByteCount).copyMemory(from: $0.baseAddress ?? UnsafeRawPointer(enc), byteCount: $0.count)
            }
        }
        try schedule(hasSender: senderPublic != nil, info: info, psk: psk, scratch: scratch, exporter: exporter)
    }

    /// `Decap` / `AuthDecap` (RFC 9180 §4.1) then `KeySchedule<ROLE>` (§5.1), secrets into `scratch`.
    /// The auth modes take either `sender` (DH(skR, pkS) is computed here) or `pair` (its
    /// static secret, for `recipient`'s public key: checked by the caller).
    /// - Throws: `.invalidPublicKey` (enc not 32 bytes), `.zeroSharedSecret`, `.internalFailure`.
    static func setupRecipient(enc: UnsafeRawBufferPointer, recipient: X25519.PrivateKey, info: UnsafeRawBufferPointer,
                               sender: X25519.PublicKey?, pair: AuthPair? = nil, psk: PresharedKey?, scratch: Scratch, exporter: Bool) throws {
        guard enc.count == encByteCount, let encBase = enc.baseAddress else {
            throw CryptoError(.invalidPublicKey, "an HPKE enc is \(encByteCount) bytes, got \(enc.count)")
        }
        // DH(skR, pkE) on one of skR's kept derive contexts: enc is not imported as a new key.
        try recipient.derive(rawPeer: enc, into: scratch.dh)
        let senderPublic = pair?.senderPublicKey ?? sender
        if let pair {
            pair.copyStaticSecret(into: scratch.dh + X25519.sharedSecretByteCount)
        } else if let sender {
            try X25519.derive(recipient.pkey, peer: sender.pkey, into: scratch.dh + X25519.sharedSecretByteCount)
        }
        scratch.kemContext.copyMemory(from: encBase, byteCount: encByteCount)
        recipient.publicKey.rawRepresentation.withUnsafeBytes {
            (scratch.kemContext + encByteCount).copyMemory(from: $0.baseAddress ?? encBase, byteCount: $0.count)
        }
        if let senderPublic {
            senderPublic.rawRepresentation.withUnsafeBytes {
                (scratch.kemContext + 2 * encByteCount).copyMemory(from: $0.baseAddress ?? encBase, byteCount: $0.count)
            }
        }
        try schedule(hasSender: senderPublic != nil, info: info, psk: psk, scratch: scratch, exporter: exporter)
    }

    /// `ExtractAndExpand(dh, kem_context)` (RFC 9180 §4.1) and `KeySchedule` (§5.1) on the DH
    /// output and kem_context already in `scratch`. `exporter: false` skips `exporter_secret`
    /// (single-shot seal/open never export).
    private static func schedule(hasSender: Bool, info: UnsafeRawBufferPointer, psk: PresharedKey?, scratch: Scratch, exporter: Bool) throws {
        let mode = Mode(hasSenderKey: hasSender, hasPSK: psk != nil)
        let dh = UnsafeRawBufferPointer(start: scratch.dh, count: hasSender ? 64 : 32)
        let kemContext = UnsafeRawBufferPointer(start: scratch.kemContext, count: hasSender ? 96 : 64)
        let ksc = scratch.keyScheduleContext
        ksc.storeBytes(of: mode.rawValue, as: UInt8.self)
        var ok = labeledExtract(salt: empty, suite: kemSuiteID, label: "eae_prk", ikm: dh, into: scratch.eaePRK)
            && labeledExpand(prk: UnsafeRawBufferPointer(start: scratch.eaePRK, count: 32), suite: kemSuiteID, label: "shared_secret",
                             info: kemContext, byteCount: X25519.sharedSecretByteCount, into: scratch.sharedSecret)
        guard ok else { throw CryptoError(.internalFailure, "OpenSSL HMAC failed") }
        if let psk {
            ok = psk.id.withUnsafeBytes { labeledExtract(salt: empty, suite: suiteID, label: "psk_id_hash", ikm: $0, into: ksc + 1) }
        } else if let constant = emptyPSKIDHash {
            constant.withUnsafeBytes { (ksc + 1).copyMemory(from: $0.baseAddress ?? UnsafeRawPointer(ksc), byteCount: $0.count) }
        } else {
            ok = labeledExtract(salt: empty, suite: suiteID, label: "psk_id_hash", ikm: empty, into: ksc + 1)
        }
        let secretPRK = UnsafeRawBufferPointer(start: scratch.secret, count: 32)
        let context = UnsafeRawBufferPointer(start: ksc, count: 65)
        ok = ok
            && labeledExtract(salt: empty, suite: suiteID, label: "info_hash", ikm: info, into: ksc + 33)
            && (psk?.key.withUnsafeBytes { labeledExtract(salt: UnsafeRawBufferPointer(start: scratch.sharedSecret, count: 32), suite: suiteID,
                                                          label: "secret", ikm: $0, into: scratch.secret) }
                ?? labeledExtract(salt: UnsafeRawBufferPointer(start: scratch.sharedSecret, count: 32), suite: suiteID,
                                  label: "secret", ikm: empty, into: scratch.secret))
            && labeledExpand(prk: secretPRK, suite: suiteID, label: "key", info: context, byteCount: keyByteCount, into: scratch.keyPointer)
            && labeledExpand(prk: secretPRK, suite: suiteID, label: "base_nonce", info: context, byteCount: nonceByteCount,
                             into: scratch.baseNoncePointer)
            && (!exporter || labeledExpand(prk: secretPRK, suite: suiteID, label: "exp", info: context,
                                           byteCount: exporterSecretByteCount, into: scratch.exporterPointer))
        guard ok else { throw CryptoError(.internalFailure, "OpenSSL HMAC failed") }
    }

    // MARK: Context (RFC 9180 §5.2, §5.3)

    /// A set-up encryption context with sequence numbers (RFC 9180 §5.2) and the secret
    /// export interface (§5.3). Internal: the public API is single-shot; the vectors seal and
    /// open sequence numbers 0...256 and export through it.
    struct Context {
        let mode: Mode
        let key: SecretBytes
        let baseNonce: SecretBytes
        let exporterSecret: SecretBytes

        init(mode: Mode, scratch: Scratch) {
            self.mode = mode
            key = SecretBytes(copying: scratch.key)
            baseNonce = SecretBytes(copying: scratch.baseNonce)
            exporterSecret = SecretBytes(copying: scratch.exporterSecret)
        }

        /// `ComputeNonce(seq)`: base_nonce XOR I2OSP(seq, 12).
        func nonce(_ sequenceNumber: UInt64) -> [UInt8] {
            var nonce = baseNonce.copyBytes()
            for i in 0..<8 { nonce[HPKE.nonceByteCount - 1 - i] ^= UInt8(truncatingIfNeeded: sequenceNumber >> (8 * UInt64(i))) }
            return nonce
        }

        /// `ContextS.Seal(aad, pt)` at `sequenceNumber`: ciphertext ‖ tag(16).
        func seal(_ plaintext: [UInt8], authenticating aad: [UInt8], sequenceNumber: UInt64) throws -> [UInt8] {
            let nonce = nonce(sequenceNumber)
            let box = try plaintext.withUnsafeBytes { p in
                try nonce.withUnsafeBytes { n in try aad.withUnsafeBytes { a in try AES256GCM.seal(p, with: key, nonce: n, authenticating: a) } }
            }
            return Array(box.combined.dropFirst(AES256GCM.nonceByteCount))
        }

        /// `ContextR.Open(aad, ct)` at `sequenceNumber`; throws `.authenticationFailed`.
        func open(_ ciphertext: [UInt8], authenticating aad: [UInt8], sequenceNumber: UInt64) throws -> [UInt8] {
            guard ciphertext.count >= HPKE.tagByteCount else { throw CryptoError(.truncatedBox, "shorter than a tag") }
            let nonce = nonce(sequenceNumber)
            let body = Array(ciphertext.dropLast(HPKE.tagByteCount)), tag = Array(ciphertext.suffix(HPKE.tagByteCount))
            return try nonce.withUnsafeBytes { n in
                try body.withUnsafeBytes { c in
                    try tag.withUnsafeBytes { t in
                        try aad.withUnsafeBytes { a in try AES256GCM.open(nonce: n, ciphertext: c, tag: t, with: key, authenticating: a) }
                    }
                }
            }
        }

        /// `Context.Export(exporter_context, L)` = LabeledExpand(exporter_secret, "sec",
        /// exporter_context, L) (RFC 9180 §5.3).
        /// - Throws: `.invalidParameter` when L is outside 0...8160, `.internalFailure`.
        func export(_ exporterContext: [UInt8], outputByteCount: Int) throws -> SecretBytes {
            guard outputByteCount >= 0, outputByteCount <= HPKE.maxExportByteCount else {
                throw CryptoError(.invalidParameter, "an HPKE export is at most \(HPKE.maxExportByteCount) bytes, asked for \(outputByteCount)")
            }
            var out = [UInt8](repeating: 0, count: outputByteCount)
            defer {
                SecretBytes.wipe(&out)
                MACContext.scrub()
            }
            let ok = exporterSecret.withUnsafeBytes { prk in
                exporterContext.withUnsafeBytes { c in
                    out.withUnsafeMutableBytes { o in
                        guard outputByteCount > 0 else { return true }
                        guard let oBase = o.baseAddress else { return false }
                        return HPKE.labeledExpand(prk: prk, suite: HPKE.suiteID, label: "sec", info: c, byteCount: outputByteCount, into: oBase)
                    }
                }
            }
            guard ok else { throw CryptoError(.internalFailure, "OpenSSL HMAC failed") }
            return SecretBytes(copying: out)
        }
    }

    /// Sender setup into a ``Context`` (vectors, exports); `ephemeral` fixes skE for vectors.
    static func setupSender(recipient: X25519.PublicKey, info: [UInt8], sender: X25519.PrivateKey?, pair: AuthPair? = nil, psk: PresharedKey?,
                            ephemeral: X25519.PrivateKey?) throws -> (enc: [UInt8], context: Context) {
        var enc = [UInt8](repeating: 0, count: encByteCount)
        let context = try Scratch.with { scratch in
            try info.withUnsafeBytes { i in
                try enc.withUnsafeMutableBytes { e in
                    guard let eBase = e.baseAddress else { throw CryptoError(.internalFailure, "no enc buffer") }
                    try setupSender(recipient: recipient, info: i, sender: sender, pair: pair, psk: psk, ephemeral: ephemeral,
                                    enc: eBase, scratch: scratch, exporter: true)
                }
            }
            return Context(mode: Mode(hasSenderKey: sender != nil || pair != nil, hasPSK: psk != nil), scratch: scratch)
        }
        return (enc, context)
    }

    /// Recipient setup into a ``Context`` (vectors, exports).
    static func setupRecipient(enc: [UInt8], recipient: X25519.PrivateKey, info: [UInt8], sender: X25519.PublicKey?, pair: AuthPair? = nil,
                               psk: PresharedKey?) throws -> Context {
        try Scratch.with { scratch in
            try enc.withUnsafeBytes { e in
                try info.withUnsafeBytes { i in
                    try setupRecipient(enc: e, recipient: recipient, info: i, sender: sender, pair: pair, psk: psk, scratch: scratch, exporter: true)
                }
            }
            return Context(mode: Mode(hasSenderKey: sender != nil || pair != nil, hasPSK: psk != nil), scratch: scratch)
        }
    }
}
