internal import CSodium
import PushSealSystem

extension HPKE {
    /// One (sender, recipient) pair of the auth modes with its static-static Diffie-Hellman
    /// result computed once: the half of `AuthEncap`'s / `AuthDecap`'s shared secret that does
    /// not change from message to message (RFC 9180 §4.1: `dh = DH(skE, pkR) ‖ DH(skS, pkR)` on
    /// the sender, `DH(skR, pkE) ‖ DH(skR, pkS)` on the recipient; the second half is the same
    /// 32 bytes on both sides).
    ///
    /// Sealing or opening with a pair (``seal(_:for:info:authenticating:psk:into:)``,
    /// ``open(_:with:from:info:authenticating:psk:)``) gives exactly the bytes the sender-key
    /// forms give — the ephemeral DH, `kem_context` and key schedule are unchanged — with one
    /// X25519 operation per message instead of two. The wire does not change.
    ///
    /// What it holds: both public keys (the recipient's as an OpenSSL key object, so a seal
    /// does not import it again) and the 32-byte static secret in ``SecretBytes`` (zeroed when
    /// the pair is released). The secret lets its holder forge auth-mode messages from this
    /// sender to this recipient (with an ephemeral key of their choosing), as the sender's
    /// private key does; it opens nothing (the other half needs the ephemeral or the recipient
    /// private key). Keep a pair no longer than the private key it was made from
    /// (``AuthPairCache`` bounds and ties that).
    ///
    /// Sendable: immutable after `init` (`SecretBytes` and the keys are Sendable).
    public final class AuthPair: Sendable, CustomStringConvertible {
        /// The sender's static public key (`pkS`).
        public let senderPublicKey: X25519.PublicKey
        /// The recipient's public key (`pkR`).
        public let recipientPublicKey: X25519.PublicKey
        /// DH(skS, pkR) = DH(skR, pkS): 32 bytes.
        let staticSecret: SecretBytes

        /// The sender side: DH(skS, pkR).
        /// - Parameters:
        ///   - sender: the sender's static private key (`skS`).
        ///   - recipient: the recipient's public key (`pkR`).
        /// - Throws: `CryptoError` `.zeroSharedSecret` (a low-order `recipient`), `.internalFailure`.
        public convenience init(sender: X25519.PrivateKey, recipient: X25519.PublicKey) throws {
            let secret = try Self.derive(sender.pkey, recipient.pkey)
            self.init(senderPublicKey: sender.publicKey, recipientPublicKey: recipient, staticSecret: secret)
        }

        /// The recipient side: DH(skR, pkS).
        /// - Parameters:
        ///   - recipient: the recipient's private key (`skR`).
        ///   - sender: the sender's static public key (`pkS`), e.g. a pinned sender key.
        /// - Throws: `CryptoError` `.zeroSharedSecret` (a low-order `sender`), `.internalFailure`.
        public convenience init(recipient: X25519.PrivateKey, sender: X25519.PublicKey) throws {
            let secret = try Self.derive(recipient.pkey, sender.pkey)
            self.init(senderPublicKey: sender, recipientPublicKey: recipient.publicKey, staticSecret: secret)
        }

        private init(senderPublicKey: X25519.PublicKey, recipientPublicKey: X25519.PublicKey, staticSecret: SecretBytes) {
            self.senderPublicKey = senderPublicKey
            self.recipientPublicKey = recipientPublicKey
            self.staticSecret = staticSecret
        }

        private static func derive(_ own: OpaquePointer, _ peer: OpaquePointer) throws -> SecretBytes {
            var out = (UInt64(0), UInt64(0), UInt64(0), UInt64(0))
            defer { withUnsafeMutableBytes(of: &out) { sodium_memzero($0.baseAddress, $0.count) } }
            return try withUnsafeMutableBytes(of: &out) { o in
                guard let base = o.baseAddress else { throw CryptoError(.internalFailure, "no output buffer") }
                try X25519.derive(own, peer: peer, into: base)
                return SecretBytes(copying: UnsafeRawBufferPointer(o))
            }
        }

        /// Writes the 32-byte static secret to `out` (the second half of a setup's `dh`).
        func copyStaticSecret(into out: UnsafeMutableRawPointer) {
            staticSecret.withUnsafeBytes { out.copyMemory(from: $0.baseAddress ?? UnsafeRawPointer(out), byteCount: $0.count) }
        }

        /// Public keys only: `HPKE.AuthPair(sender <hex>, recipient <hex>)`; never the secret.
        public var description: String {
            "HPKE.AuthPair(sender \(Hex.encode(senderPublicKey.rawRepresentation)), recipient \(Hex.encode(recipientPublicKey.rawRepresentation)))"
        }
    }

    // MARK: Seal and open with a pair

    /// `SealAuth` / `SealAuthPSK` (RFC 9180 §6.1) with the static secret of `pair`: the same
    /// bytes as ``seal(_:to:info:authenticating:sender:psk:into:)`` with the pair's sender key
    /// and recipient, one X25519 operation fewer (the ephemeral key is fresh, as always).
    ///
    /// Writes enc(32) ‖ ciphertext ‖ tag(16) at the start of `output`; the rules of the
    /// sender-key form apply (no overlap, nothing usable in `output` after a throw).
    /// - Parameters:
    ///   - plaintext: any bytes (may be empty).
    ///   - pair: the (sender, recipient) pair; the message is sealed to its recipient.
    ///   - info: the application info (may be empty).
    ///   - aad: AEAD additional data (may be empty).
    ///   - psk: a pre-shared key (mode_auth_psk), else nil (mode_auth).
    ///   - output: room for at least `plaintext.count + 48` bytes.
    /// - Returns: the number of bytes written, `plaintext.count + 48`.
    /// - Throws: `CryptoError` `.invalidParameter` (`output` too small), `.zeroSharedSecret`, `.internalFailure`.
    public static func seal(_ plaintext: UnsafeRawBufferPointer, for pair: AuthPair, info: UnsafeRawBufferPointer,
                            authenticating aad: UnsafeRawBufferPointer = UnsafeRawBufferPointer(start: nil, count: 0),
                            psk: PresharedKey? = nil, into output: UnsafeMutableRawBufferPointer) throws -> Int {
        try seal(plaintext, to: pair.recipientPublicKey, info: info, authenticating: aad, sender: nil, pair: pair, psk: psk,
                 ephemeral: nil, into: output)
    }

    /// As ``seal(_:for:info:authenticating:psk:into:)``, returning a new array.
    /// - Returns: enc(32) ‖ ciphertext ‖ tag(16), `plaintext.count + 48` bytes.
    /// - Throws: `CryptoError` `.zeroSharedSecret`, `.internalFailure`.
    public static func seal(_ plaintext: [UInt8], for pair: AuthPair, info: [UInt8], authenticating aad: [UInt8] = [],
                            psk: PresharedKey? = nil) throws -> [UInt8] {
        try seal(plaintext, to: pair.recipientPublicKey, info: info, authenticating: aad, sender: nil, pair: pair, psk: psk, ephemeral: nil)
    }

    /// `OpenAuth` / `OpenAuthPSK` (RFC 9180 §6.1) with the static secret of `pair`: the same
    /// result as ``open(_:with:info:authenticating:sender:psk:)-(UnsafeRawBufferPointer,_,_,_,_,_)``
    /// with the pair's sender key, one X25519 operation fewer.
    /// - Parameters:
    ///   - message: enc(32) ‖ ciphertext ‖ tag(16), at least 48 bytes.
    ///   - recipient: the recipient's private key; its public key must be the pair's recipient.
    ///   - pair: the (sender, recipient) pair, e.g. from ``AuthPairCache``.
    ///   - info, aad, psk: as given at seal time.
    /// - Returns: the plaintext, only after the tag verified.
    /// - Throws: `CryptoError` `.invalidParameter` (the pair is for another recipient key), then as
    ///   the sender-key form: `.invalidPublicKey`, `.truncatedBox`, `.zeroSharedSecret`,
    ///   `.authenticationFailed`, `.internalFailure`.
    public static func open(_ message: UnsafeRawBufferPointer, with recipient: X25519.PrivateKey, from pair: AuthPair,
                            info: UnsafeRawBufferPointer, authenticating aad: UnsafeRawBufferPointer = UnsafeRawBufferPointer(start: nil, count: 0),
                            psk: PresharedKey? = nil) throws -> [UInt8] {
        guard pair.recipientPublicKey == recipient.publicKey else {
            throw CryptoError(.invalidParameter, "the HPKE auth pair is for another recipient key")
        }
        return try open(message, with: recipient, info: info, authenticating: aad, sender: nil, pair: pair, psk: psk)
    }

    /// As ``open(_:with:from:info:authenticating:psk:)`` on arrays.
    /// - Throws: as the pointer form.
    public static func open(_ message: [UInt8], with recipient: X25519.PrivateKey, from pair: AuthPair, info: [UInt8],
                            authenticating aad: [UInt8] = [], psk: PresharedKey? = nil) throws -> [UInt8] {
        try message.withUnsafeBytes { m in
            try info.withUnsafeBytes { i in
                try aad.withUnsafeBytes { a in try open(m, with: recipient, from: pair, info: i, authenticating: a, psk: psk) }
            }
        }
    }
}
