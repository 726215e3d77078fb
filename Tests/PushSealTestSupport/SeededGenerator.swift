public import Foundation
public import Testing

/// SplitMix64: small, fast, reproducible from its seed. Use it instead of
/// `SystemRandomNumberGenerator` (which SEGVs under TSan here) for every randomized test.
public struct SeededGenerator: RandomNumberGenerator, Sendable {
    /// The generator's state.
    public var state: UInt64
    /// A generator starting at `seed`.
    public init(seed: UInt64) { state = seed }
    /// A generator starting at this run's ``testSeed``, offset by `stream` (for independent
    /// generators in one test).
    public init(stream: UInt64 = 0) { state = testSeed &+ stream &* 0x9E37_79B9_7F4A_7C15 }
    /// The next 64 random bits.
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// The seed for this run: `$PUSHSEAL_TEST_SEED`, or a fresh one (name it in every failure with
/// ``seedNote(_:)``, so a failure can be rerun exactly).
public let testSeed: UInt64 = ProcessInfo.processInfo.environment["PUSHSEAL_TEST_SEED"].flatMap { UInt64($0) }
    ?? UInt64.random(in: 0...UInt64.max)

/// `seed N (rerun with PUSHSEAL_TEST_SEED=N) extra`, for `#expect` comments.
public func seedNote(_ extra: String = "") -> Comment {
    "seed \(testSeed) (rerun with PUSHSEAL_TEST_SEED=\(testSeed)) \(extra)"
}
