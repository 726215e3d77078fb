import Foundation
import PushSealSystem
public import Testing

/// SplitMix64 (PushSealSystem's): small, fast, reproducible from its seed. Use it instead of
/// `SystemRandomNumberGenerator` (which SEGVs under TSan here) for every randomized test.
public struct SeededGenerator: RandomNumberGenerator, Sendable {
    private var core: SplitMix64
    /// The generator's state.
    public var state: UInt64 { core.state }
    /// A generator starting at `seed`.
    public init(seed: UInt64) { core = SplitMix64(seed: seed) }
    /// A generator starting at this run's ``testSeed``, offset by `stream` (for independent
    /// generators in one test).
    public init(stream: UInt64 = 0) { core = SplitMix64(seed: testSeed &+ stream &* 0x9E37_79B9_7F4A_7C15) }
    /// The next 64 random bits.
    public mutating func next() -> UInt64 { core.next() }
    /// `count` random bytes.
    public mutating func bytes(_ count: Int) -> [UInt8] { (0..<count).map { _ in UInt8(truncatingIfNeeded: next()) } }
    /// A number in 0 ..< `n` (0 when `n` ≤ 1).
    public mutating func below(_ n: Int) -> Int { n <= 1 ? 0 : Int(next() % UInt64(n)) }
}

/// The seed for this run: `$PUSHSEAL_TEST_SEED`, or a fresh one (name it in every failure with
/// ``seedNote(_:)``, so a failure can be rerun exactly).
public let testSeed: UInt64 = ProcessInfo.processInfo.environment["PUSHSEAL_TEST_SEED"].flatMap { UInt64($0) }
    ?? UInt64.random(in: 0...UInt64.max)

/// `seed N (rerun with PUSHSEAL_TEST_SEED=N) extra`, for `#expect` comments.
public func seedNote(_ extra: String = "") -> Comment {
    "seed \(testSeed) (rerun with PUSHSEAL_TEST_SEED=\(testSeed)) \(extra)"
}
