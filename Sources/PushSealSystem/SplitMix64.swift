/// SplitMix64 (Steele, Lea and Flood, "Fast splittable pseudorandom number generators", 2014):
/// a small, fast generator of 64-bit values for what must be unique or spread out, never for
/// what must be unpredictable (APNs `apns-id` UUIDs, retry jitter; seeded, reproducible test
/// inputs). Secrets come from `SecretBytes(randomByteCount:)` (PushSealCrypto), never from here.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    /// The generator's state: the next value is derived from `state + 0x9E3779B97F4A7C15`.
    public private(set) var state: UInt64

    /// A generator seeded from the system's generator (a fresh sequence each time).
    public init() {
        var system = SystemRandomNumberGenerator()
        state = system.next()
    }

    /// A generator starting at `seed` (the same seed gives the same sequence).
    public init(seed: UInt64) { state = seed }

    /// The next 64 bits.
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A number in 0 ..< 1 (53 random bits).
    public mutating func unit() -> Double { Double(next() >> 11) / Double(1 << 53) }
}
