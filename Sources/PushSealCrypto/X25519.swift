internal import COpenSSL
internal import CSodium
import PushSealSystem

/// X25519 Diffie-Hellman (RFC 7748 §5, §6.1) over OpenSSL 3.0's `EVP_PKEY` X25519.
///
/// Keys are the 32-byte raw encodings of RFC 7748 (the `SerializePublicKey` /
/// `SerializePrivateKey` of RFC 9180 §7.1.1). Key generation is `EVP_PKEY_keygen`; the shared
/// secret is `EVP_PKEY_derive`. An all-zero shared secret (a low-order peer key) is refused
/// with `CryptoError.Code.zeroSharedSecret` (RFC 9180 §7.1.4, RFC 7748 §6.1): OpenSSL already
/// fails such a derive, and the result is checked once more in constant time (libsodium
/// `sodium_is_zero`). No curve arithmetic is written here.
public enum X25519 {
    /// A raw public key (the u-coordinate, little-endian): 32 bytes.
    public static let publicKeyByteCount = 32
    /// A raw private key (the scalar before clamping): 32 bytes.
    public static let privateKeyByteCount = 32
    /// A shared secret: 32 bytes.
    public static let sharedSecretByteCount = 32

    /// An X25519 public key: 32 raw bytes and the OpenSSL key object made from them once.
    ///
    /// Any 32 bytes are accepted (RFC 7748 §5: the top bit is ignored, non-canonical values are
    /// reduced); a low-order point shows up as `.zeroSharedSecret` when used.
    ///
    /// Sendable: both stored properties are immutable after `init`; OpenSSL allows one
    /// `EVP_PKEY` to be read from many threads at once (it is only ever passed as a derive peer,
    /// which takes a reference and does not modify it).
    public final class PublicKey: @unchecked Sendable, Hashable, CustomStringConvertible {
        /// The 32 raw bytes (RFC 7748 §5), e.g. for a registration record or an HPKE `enc`.
        public let rawRepresentation: [UInt8]
        let pkey: OpaquePointer

        /// Imports a raw public key.
        /// - Parameter rawRepresentation: exactly 32 bytes.
        /// - Throws: `CryptoError` `.invalidPublicKey` when not 32 bytes, `.internalFailure`.
        public convenience init(rawRepresentation: [UInt8]) throws {
            let pkey = try rawRepresentation.withUnsafeBytes { try Self.importKey($0) }
            self.init(adopting: pkey, raw: rawRepresentation)
        }

        /// Imports the 32 raw bytes at `raw` (the pointer form, e.g. an `enc` inside a payload).
        /// - Throws: `CryptoError` `.invalidPublicKey` when not 32 bytes, `.internalFailure`.
        public convenience init(rawBytes raw: UnsafeRawBufferPointer) throws {
            let pkey = try Self.importKey(raw)
            self.init(adopting: pkey, raw: Array(raw))
        }

        private init(adopting pkey: OpaquePointer, raw: [UInt8]) {
            self.pkey = pkey
            rawRepresentation = raw
        }

        /// `EVP_PKEY_new_raw_public_key` of exactly 32 bytes.
        private static func importKey(_ raw: UnsafeRawBufferPointer) throws -> OpaquePointer {
            guard raw.count == X25519.publicKeyByteCount, let base = raw.baseAddress else {
                throw CryptoError(.invalidPublicKey, "an X25519 public key is \(X25519.publicKeyByteCount) bytes, got \(raw.count)")
            }
            guard let pkey = EVP_PKEY_new_raw_public_key(EVP_PKEY_X25519, nil, base.assumingMemoryBound(to: UInt8.self), raw.count) else {
                ERR_clear_error()
                throw CryptoError(.internalFailure, "OpenSSL could not import an X25519 public key")
            }
            return pkey
        }

        deinit { EVP_PKEY_free(pkey) }

        /// Refuses a low-order point — a key every shared secret with which is all zero (RFC 7748
        /// §6.1, RFC 9180 §7.1.4) — e.g. when importing a registration or a sender key.
        ///
        /// One X25519 derive with a process-wide probe key: a clamped scalar is a multiple of 8,
        /// so the result is zero exactly when the point's order divides 8.
        /// - Throws: `CryptoError` `.zeroSharedSecret` for a low-order point, `.internalFailure`.
        public func validate() throws {
            guard let probe = X25519.probeKey else {
                throw CryptoError(.internalFailure, "OpenSSL could not generate an X25519 key")
            }
            var out = (UInt64(0), UInt64(0), UInt64(0), UInt64(0))
            defer { withUnsafeMutableBytes(of: &out) { sodium_memzero($0.baseAddress, $0.count) } }
            try withUnsafeMutableBytes(of: &out) { o in
                guard let base = o.baseAddress else { throw CryptoError(.internalFailure, "no output buffer") }
                try X25519.derive(probe.pkey, peer: pkey, into: base)
            }
        }

        /// Equal when the raw bytes are equal (public data: not constant-time).
        public static func == (lhs: PublicKey, rhs: PublicKey) -> Bool { lhs.rawRepresentation == rhs.rawRepresentation }
        /// Hashes the raw bytes.
        public func hash(into hasher: inout Hasher) { hasher.combine(rawRepresentation) }
        /// `X25519.PublicKey(<64 hex digits>)`: public data.
        public var description: String {
            let digits = Array("0123456789abcdef".utf8)
            var text: [UInt8] = []
            for byte in rawRepresentation { text += [digits[Int(byte >> 4)], digits[Int(byte & 0x0f)]] }
            return "X25519.PublicKey(\(String(decoding: text, as: UTF8.self)))"
        }
    }

    /// An X25519 private key: its 32 raw bytes in ``SecretBytes`` (zeroed on release), its
    /// public key, and the OpenSSL key object made once (OpenSSL cleanses it on free).
    ///
    /// Sendable: all stored properties are immutable after `init`; the `EVP_PKEY` is only read
    /// (as the own key of a derive context), which OpenSSL allows from many threads at once;
    /// the derive contexts of ``derive(rawPeer:into:)`` are taken from and returned to
    /// `contexts` under its lock, each used by one thread at a time.
    public final class PrivateKey: @unchecked Sendable, CustomStringConvertible {
        /// The 32 raw private-key bytes (RFC 7748 §5, before clamping), for storing in a keychain item.
        public let rawRepresentation: SecretBytes
        /// The matching public key.
        public let publicKey: PublicKey
        let pkey: OpaquePointer
        /// Idle derive contexts bound to this key, each with the peer key object it reuses
        /// (at most ``DeriveContext/poolCapacity``); freed with the key.
        private let contexts = Locked<[DeriveContext]>([])

        /// Generates a fresh key pair (`EVP_PKEY_keygen`, OpenSSL's DRBG).
        /// - Throws: `CryptoError` `.internalFailure`.
        public convenience init() throws {
            guard let pkey = X25519.generate() else {
                ERR_clear_error()
                throw CryptoError(.internalFailure, "OpenSSL could not generate an X25519 key")
            }
            try self.init(adopting: pkey)
        }

        /// Imports a raw private key (from a keychain item or a restore file).
        /// - Parameter rawRepresentation: exactly 32 bytes; any value is a valid key (RFC 7748
        ///   §5 clamps it).
        /// - Throws: `CryptoError` `.invalidKeySize` when not 32 bytes, `.internalFailure`.
        public convenience init(rawRepresentation: SecretBytes) throws {
            guard rawRepresentation.byteCount == X25519.privateKeyByteCount else {
                throw CryptoError(.invalidKeySize, "an X25519 private key is \(X25519.privateKeyByteCount) bytes, got \(rawRepresentation.byteCount)")
            }
            let made = rawRepresentation.withUnsafeBytes { raw in
                raw.baseAddress.flatMap {
                    EVP_PKEY_new_raw_private_key(EVP_PKEY_X25519, nil, $0.assumingMemoryBound(to: UInt8.self), raw.count)
                }
            }
            guard let pkey = made else {
                ERR_clear_error()
                throw CryptoError(.internalFailure, "OpenSSL could not import an X25519 private key")
            }
            try self.init(adopting: pkey)
        }

        /// Takes ownership of `pkey` (freed on any throw) and reads its raw bytes out once.
        private init(adopting pkey: OpaquePointer) throws {
            var raw = [UInt8](repeating: 0, count: X25519.privateKeyByteCount)
            var rawPublic = [UInt8](repeating: 0, count: X25519.publicKeyByteCount)
            defer { SecretBytes.wipe(&raw) }
            var privateLength = raw.count, publicLength = rawPublic.count
            guard EVP_PKEY_get_raw_private_key(pkey, &raw, &privateLength) == 1, privateLength == X25519.privateKeyByteCount,
                  EVP_PKEY_get_raw_public_key(pkey, &rawPublic, &publicLength) == 1, publicLength == X25519.publicKeyByteCount else {
                EVP_PKEY_free(pkey)
                ERR_clear_error()
                throw CryptoError(.internalFailure, "OpenSSL could not export an X25519 key")
            }
            do {
                publicKey = try PublicKey(rawRepresentation: rawPublic)
            } catch {
                EVP_PKEY_free(pkey)
                throw error
            }
            rawRepresentation = SecretBytes(copying: raw)
            self.pkey = pkey
        }

        deinit {
            contexts.withLock { pool in
                for c in pool { c.free() }
                pool.removeAll()
            }
            EVP_PKEY_free(pkey)
        }

        /// `DH(self, peer)` into 32 bytes at `out` for a peer given as 32 raw bytes — an HPKE
        /// `enc` at open — without importing the peer as a new key object: a derive context bound
        /// to this key and a peer key object are kept (per concurrent caller, freed with the key)
        /// and the peer's bytes are written into that object (`EVP_PKEY_set1_encoded_public_key`).
        /// Creating a context and importing a key cost about 3.5 µs each on OpenSSL 3.0 (its
        /// name lookups), against about 40 µs for the DH itself (issue 13 "Performance").
        /// - Throws: `CryptoError` `.invalidPublicKey` (not 32 bytes), `.zeroSharedSecret`,
        ///   `.internalFailure`; on any throw the 32 bytes at `out` are zero.
        func derive(rawPeer: UnsafeRawBufferPointer, into out: UnsafeMutableRawPointer) throws {
            guard rawPeer.count == X25519.publicKeyByteCount, let peerBase = rawPeer.baseAddress else {
                throw CryptoError(.invalidPublicKey, "an X25519 public key is \(X25519.publicKeyByteCount) bytes, got \(rawPeer.count)")
            }
            let taken = contexts.withLock { $0.popLast() }
            guard let context = taken ?? DeriveContext(own: pkey, peer: peerBase) else {
                ERR_clear_error()
                throw CryptoError(.internalFailure, "OpenSSL could not create an X25519 derive context")
            }
            do {
                try context.derive(peer: peerBase, into: out)
            } catch {
                context.free()  // a failed context is not reused
                throw error
            }
            let kept = contexts.withLock { pool -> Bool in
                guard pool.count < DeriveContext.poolCapacity else { return false }
                pool.append(context)
                return true
            }
            if !kept { context.free() }
        }

        /// The X25519 shared secret with `peer` (RFC 7748 §6.1).
        /// - Parameter peer: the other side's public key.
        /// - Returns: 32 bytes, as a secret.
        /// - Throws: `CryptoError` `.zeroSharedSecret` when the result would be all zero (a
        ///   low-order `peer`; RFC 9180 §7.1.4), `.internalFailure`.
        public func sharedSecret(with peer: PublicKey) throws -> SecretBytes {
            var out = [UInt8](repeating: 0, count: X25519.sharedSecretByteCount)
            defer { SecretBytes.wipe(&out) }
            try out.withUnsafeMutableBytes { o in
                guard let base = o.baseAddress else { throw CryptoError(.internalFailure, "no output buffer") }
                try X25519.derive(pkey, peer: peer.pkey, into: base)
            }
            return SecretBytes(copying: out)
        }

        /// Never the secret: `X25519.PrivateKey(32 bytes, redacted)`.
        public var description: String { "X25519.PrivateKey(\(X25519.privateKeyByteCount) bytes, redacted)" }
    }
}

extension X25519 {
    /// The private key ``PublicKey/validate()`` derives with: generated once per process, never
    /// exported (nil only if OpenSSL could not generate it).
    static let probeKey: PrivateKey? = try? PrivateKey()

    /// Generates a key with this thread's reusable keygen context (`EVP_PKEY_keygen`); the
    /// caller owns (frees) the result. Nil when OpenSSL fails.
    static func generate() -> OpaquePointer? {
        guard let ctx = KeygenContext.threadContext() else { return nil }
        var pkey: OpaquePointer?
        guard EVP_PKEY_keygen(ctx, &pkey) == 1, let pkey else {
            KeygenContext.discardThreadContext()
            return nil
        }
        return pkey
    }

    /// `DH(own, peer)` into 32 bytes at `out` (RFC 9180 §4.1 `DH`), refusing an all-zero result.
    ///
    /// OpenSSL 3.0's X25519 derive fails only when the result is all zero (`ossl_x25519`
    /// compares it with zeros); any failure of the derive step is therefore reported as
    /// `.zeroSharedSecret`, and a successful result is also checked with `sodium_is_zero`
    /// (constant time). On any throw the 32 bytes at `out` are zero.
    /// - Throws: `CryptoError` `.zeroSharedSecret`, `.internalFailure` (a context could not be set up).
    static func derive(_ own: OpaquePointer, peer: OpaquePointer, into out: UnsafeMutableRawPointer) throws {
        guard let ctx = EVP_PKEY_CTX_new_from_pkey(nil, own, nil) else {
            ERR_clear_error()
            throw CryptoError(.internalFailure, "OpenSSL could not create an X25519 derive context")
        }
        defer { EVP_PKEY_CTX_free(ctx) }
        // No peer validation (`validate_peer` 0): OpenSSL 3.0's X25519 public check only asks
        // whether the key has a public part (every X25519 key does; RFC 7748 takes any 32 bytes)
        // and costs a second context; the result is checked for all-zero below.
        guard EVP_PKEY_derive_init(ctx) == 1, EVP_PKEY_derive_set_peer_ex(ctx, peer, 0) == 1 else {
            ERR_clear_error()
            throw CryptoError(.internalFailure, "OpenSSL could not set up an X25519 derive")
        }
        try finishDerive(ctx, into: out)
    }

    /// `EVP_PKEY_derive` on a set-up context into 32 bytes at `out`, refusing an all-zero
    /// result (see ``derive(_:peer:into:)``).
    static func finishDerive(_ ctx: OpaquePointer, into out: UnsafeMutableRawPointer) throws {
        var length = X25519.sharedSecretByteCount
        let derived = EVP_PKEY_derive(ctx, out.assumingMemoryBound(to: UInt8.self), &length) == 1
            && length == X25519.sharedSecretByteCount
        guard derived, sodium_is_zero(out.assumingMemoryBound(to: UInt8.self), X25519.sharedSecretByteCount) == 0 else {
            ERR_clear_error()
            sodium_memzero(out, X25519.sharedSecretByteCount)
            throw CryptoError(.zeroSharedSecret, "the X25519 shared secret is all zero: the peer's public key is a low-order point")
        }
    }
}

/// A derive context bound to one private key plus a peer key object whose public bytes are
/// rewritten at each use (``X25519/PrivateKey/derive(rawPeer:into:)``): one thread at a time.
///
/// Sendable (by hand): it moves between threads only through its key's locked pool; while a
/// thread holds it, no other does. It holds public bytes (the last peer) and a reference to
/// its own key's `EVP_PKEY`, no other secret; the shared secret is written to the caller's memory.
final class DeriveContext: @unchecked Sendable {
    /// Idle contexts a key keeps: 4 (the concurrent opens of one device key).
    static let poolCapacity = 4

    private let ctx: OpaquePointer
    private let peer: OpaquePointer

    /// A context bound to `own`, with a peer key object made from the 32 bytes at `raw`; nil on
    /// an OpenSSL failure (nothing leaked).
    init?(own: OpaquePointer, peer raw: UnsafeRawPointer) {
        guard let peer = EVP_PKEY_new_raw_public_key(EVP_PKEY_X25519, nil, raw.assumingMemoryBound(to: UInt8.self), X25519.publicKeyByteCount) else {
            return nil
        }
        guard let ctx = EVP_PKEY_CTX_new_from_pkey(nil, own, nil) else {
            EVP_PKEY_free(peer)
            return nil
        }
        guard EVP_PKEY_derive_init(ctx) == 1 else {
            EVP_PKEY_CTX_free(ctx)
            EVP_PKEY_free(peer)
            return nil
        }
        self.ctx = ctx
        self.peer = peer
    }

    /// Writes the 32 bytes at `raw` into the peer object, sets it as the peer (unvalidated, as
    /// ``X25519/derive(_:peer:into:)``) and derives into `out`.
    func derive(peer raw: UnsafeRawPointer, into out: UnsafeMutableRawPointer) throws {
        guard EVP_PKEY_set1_encoded_public_key(peer, raw.assumingMemoryBound(to: UInt8.self), X25519.publicKeyByteCount) == 1,
              EVP_PKEY_derive_set_peer_ex(ctx, peer, 0) == 1 else {
            ERR_clear_error()
            sodium_memzero(out, X25519.sharedSecretByteCount)
            throw CryptoError(.internalFailure, "OpenSSL could not set up an X25519 derive")
        }
        try X25519.finishDerive(ctx, into: out)
    }

    /// Frees the context and the peer object (once; the owner drops it afterwards).
    func free() {
        EVP_PKEY_CTX_free(ctx)
        EVP_PKEY_free(peer)
    }
}

/// This thread's reusable `EVP_PKEY_CTX` for X25519 key generation (``ThreadContextSlot``).
///
/// Fetching the X25519 implementation and creating a context costs a few microseconds per key;
/// a keygen context keeps no key material between calls (each `EVP_PKEY_keygen` returns a new,
/// separately owned key), so each thread keeps one.
enum KeygenContext {
    static let slot = ThreadContextSlot(destructor: { pointer in
        #if canImport(Darwin)
        EVP_PKEY_CTX_free(OpaquePointer(pointer))
        #else
        if let pointer { EVP_PKEY_CTX_free(OpaquePointer(pointer)) }
        #endif
    }, make: {
        guard let ctx = EVP_PKEY_CTX_new_from_name(nil, "X25519", nil) else { return nil }
        guard EVP_PKEY_keygen_init(ctx) == 1 else {
            EVP_PKEY_CTX_free(ctx)
            return nil
        }
        return ctx
    }, free: { EVP_PKEY_CTX_free($0) })

    static func threadContext() -> OpaquePointer? { slot.context() }

    static func discardThreadContext() { slot.discard() }
}
