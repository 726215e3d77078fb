import COpenSSL
import PushSealCrypto

/// HPKE core (RFC 9180, DHKEM(X25519, HKDF-SHA256) / HKDF-SHA256 / AES-256-GCM; the 57-byte
/// v2 base-mode info, empty AAD): `HPKE.seal` (base and auth, into a reused buffer) and
/// `HPKE.open` at 256 B / 1 KB / 2 KB, against the raw X25519 floor in the same process.
///
/// The raw floor is what no HPKE seal can beat: a C-style loop with one reused keygen context
/// and the recipient's `EVP_PKEY` imported once, per operation `EVP_PKEY_keygen` + one
/// `EVP_PKEY_derive` (`x25519-floor`); `x25519-dh` is one derive alone, the floor of open. The
/// auth rows run as wire format v2 runs them: the static-static DH of the (sender, recipient)
/// pair from an `HPKE.AuthPairCache` (a lookup per message), so their floor is the base
/// mode's. `pushseal
/// x25519-floor` is the same job through the public ``X25519`` API (which also exports the
/// raw keys). Side by side: `Benchmarks/peers/hpke_peer.py` (Python `pyhpke`) seals and opens
/// the same sizes.
///
/// One HPKE operation costs about a hundred AES-GCM seals, so this section runs a quarter of
/// the settings' iterations per repetition (its own `Measurer`; the samples are handed to the
/// report like a peer's), and the pyhpke peer a twentieth.
struct HPKEBench: BenchSection {
    let settings: BenchSettings
    let title = "HPKE core (X25519, HKDF-SHA256, AES-256-GCM; 57-byte info, no AAD)"
    static let sizes = [256, 1024, 2048]
    static let info = Array("pushseal:v2|HPKE-BASE-X25519-A256GCM|key-1|com.example.app".utf8)

    func cases() throws -> [BenchCase] {
        let recipient = try X25519.PrivateKey()
        let sender = try X25519.PrivateKey()
        let info = Self.info
        let sealingPairs = HPKE.AuthPairCache(), openingPairs = HPKE.AuthPairCache()
        let recipientRaw = recipient.publicKey.rawRepresentation
        func sealingPair() throws -> HPKE.AuthPair {
            try recipientRaw.withUnsafeBytes { try sealingPairs.pair(sender: sender, senderKeyID: "sender-1", recipientPublicKey: $0, recipientKeyID: "key-1") }
        }
        func openingPair() throws -> HPKE.AuthPair {
            try openingPairs.pair(recipient: recipient, recipientKeyID: "key-1", sender: sender.publicKey, senderKeyID: "sender-1")
        }
        let raw = try RawX25519(peer: recipient.publicKey.rawRepresentation)
        var all: [BenchCase] = [
            BenchCase(impl: "openssl-raw", op: "x25519-floor", size: 0) { try raw.keygenAndDerive(derives: 1) },
            BenchCase(impl: "openssl-raw", op: "x25519-dh", size: 0) { try raw.derive(count: 1) },
            BenchCase(impl: "pushseal", op: "x25519-floor", size: 0) {
                consume(try X25519.PrivateKey().sharedSecret(with: recipient.publicKey))
            },
        ]
        for size in Self.sizes {
            let plaintext = SecureRandom.bytes(size)
            let output = OutputBuffer(byteCount: size + HPKE.overheadByteCount)
            let base = try HPKE.seal(plaintext, to: recipient.publicKey, info: info)
            let auth = try HPKE.seal(plaintext, to: recipient.publicKey, info: info, sender: sender)
            guard try HPKE.open(base, with: recipient, info: info) == plaintext,
                  try HPKE.open(auth, with: recipient, info: info, sender: sender.publicKey) == plaintext else {
                throw BenchError("HPKE does not open its own seal at \(size) bytes")
            }
            all += [
                BenchCase(impl: "pushseal", op: "hpke-seal", size: size) {
                    try output.seal(plaintext, to: recipient.publicKey, info: info, sender: nil)
                },
                BenchCase(impl: "pushseal", op: "hpke-auth-seal", size: size) { try output.seal(plaintext, for: try sealingPair(), info: info) },
                BenchCase(impl: "pushseal", op: "hpke-open", size: size) { consume(try HPKE.open(base, with: recipient, info: info)) },
                BenchCase(impl: "pushseal", op: "hpke-auth-open", size: size) {
                    consume(try HPKE.open(auth, with: recipient, from: try openingPair(), info: info))
                },
            ]
        }
        // pyhpke (pure-Python HKDF) takes about 0.6 ms an operation: a twentieth of the iterations.
        let peerSettings = settings.dividingIterations(by: 20)
        if let python = Peer.all.first(where: { $0.name == "python" }) { python.run("hpke_peer", peerSettings.peerArguments) }
        // In rounds of about 50 operations per case (Measurer.run(_:slices:)), as V2Bench.
        let own = settings.dividingIterations(by: 4)
        try Measurer.runAsOwnSection(all, settings: own, slices: max(1, own.iterations / 50))
        return []
    }

    func comparisons() -> [Comparison] {
        var list: [Comparison] = [
            Comparison(label: "X25519 keygen+DH openssl-raw / pushseal", numerator: SeriesKey(impl: "openssl-raw", op: "x25519-floor", size: 0),
                       denominator: SeriesKey(impl: "pushseal", op: "x25519-floor", size: 0)),
        ]
        for size in Self.sizes {
            for (op, floor) in [("hpke-seal", "x25519-floor"), ("hpke-auth-seal", "x25519-floor"), ("hpke-open", "x25519-dh"),
                                ("hpke-auth-open", "x25519-dh")] {
                list.append(Comparison(label: "\(op) \(size) B raw \(floor) / pushseal", numerator: SeriesKey(impl: "openssl-raw", op: floor, size: 0),
                                       denominator: SeriesKey(impl: "pushseal", op: op, size: size)))
            }
            for op in ["hpke-seal", "hpke-auth-seal"] {
                list.append(Comparison(label: "\(op) \(size) B python(pyhpke) / pushseal", numerator: SeriesKey(impl: "python", op: op, size: size),
                                       denominator: SeriesKey(impl: "pushseal", op: op, size: size)))
            }
        }
        return list
    }
}

/// A reused output buffer for the seal rows (the caller-memory form, as the v2 envelope uses).
/// Not thread-safe; the benchmark is single-threaded.
final class OutputBuffer {
    var bytes: [UInt8]
    init(byteCount: Int) { bytes = [UInt8](repeating: 0, count: byteCount) }

    /// Auth mode with a (cached) pair, as the v2 envelope seals.
    func seal(_ plaintext: [UInt8], for pair: HPKE.AuthPair, info: [UInt8]) throws {
        _ = try plaintext.withUnsafeBytes { p in
            try info.withUnsafeBytes { i in try bytes.withUnsafeMutableBytes { o in try HPKE.seal(p, for: pair, info: i, into: o) } }
        }
    }

    func seal(_ plaintext: [UInt8], to recipient: X25519.PublicKey, info: [UInt8], sender: X25519.PrivateKey?) throws {
        let noAAD: [UInt8] = []
        _ = try plaintext.withUnsafeBytes { p in
            try info.withUnsafeBytes { i in
                try noAAD.withUnsafeBytes { a in
                    try bytes.withUnsafeMutableBytes { o in try HPKE.seal(p, to: recipient, info: i, authenticating: a, sender: sender, psk: nil, into: o) }
                }
            }
        }
    }
}

/// The raw X25519 loop: one keygen context, the peer imported once, a derive context per DH
/// (it binds the private key), the peer set without OpenSSL's (for X25519 empty) public-key
/// check. Not thread-safe; the benchmark is single-threaded.
final class RawX25519 {
    let keygen: OpaquePointer
    let peer: OpaquePointer
    let own: OpaquePointer
    var secret = [UInt8](repeating: 0, count: 32)

    init(peer raw: [UInt8]) throws {
        guard let keygen = EVP_PKEY_CTX_new_from_name(nil, "X25519", nil), EVP_PKEY_keygen_init(keygen) == 1,
              let peer = EVP_PKEY_new_raw_public_key(EVP_PKEY_X25519, nil, raw, raw.count) else {
            throw BenchError("cannot set up raw OpenSSL X25519")
        }
        var own: OpaquePointer?
        guard EVP_PKEY_keygen(keygen, &own) == 1, let own else { throw BenchError("raw X25519 keygen failed") }
        self.keygen = keygen
        self.peer = peer
        self.own = own
    }

    deinit {
        EVP_PKEY_CTX_free(keygen)
        EVP_PKEY_free(peer)
        EVP_PKEY_free(own)
    }

    @inline(__always)
    private func dh(_ key: OpaquePointer) throws {
        guard let ctx = EVP_PKEY_CTX_new_from_pkey(nil, key, nil) else { throw BenchError("raw derive context failed") }
        defer { EVP_PKEY_CTX_free(ctx) }
        var length = 32
        // Unvalidated peer, as PushSeal's X25519 sets it (X25519's public check is a no-op that costs a context).
        guard EVP_PKEY_derive_init(ctx) == 1, EVP_PKEY_derive_set_peer_ex(ctx, peer, 0) == 1,
              EVP_PKEY_derive(ctx, &secret, &length) == 1 else { throw BenchError("raw X25519 derive failed") }
    }

    /// One `EVP_PKEY_keygen` and `derives` derives with the peer (1: base-mode seal, 2: auth).
    func keygenAndDerive(derives: Int) throws {
        var key: OpaquePointer?
        guard EVP_PKEY_keygen(keygen, &key) == 1, let key else { throw BenchError("raw X25519 keygen failed") }
        defer { EVP_PKEY_free(key) }
        try dh(key)
        if derives > 1 { try dh(own) }
    }

    /// `count` derives with a fixed own key (the floor of open).
    func derive(count: Int) throws {
        for _ in 0..<count { try dh(own) }
    }
}
