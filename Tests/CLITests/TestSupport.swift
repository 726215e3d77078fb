import Foundation
import Testing

/// The shared test data at `relative` (e.g. `cases/notifications`) inside `$PUSHSEAL_SHARED`, else
/// `<repo>/../shared`: its URL when it exists, and the message a test gives when it does not (the
/// resolved path it looked in, and how to point at the data).
func sharedData(_ relative: String) -> (url: URL?, missing: String) {
    let env = ProcessInfo.processInfo.environment["PUSHSEAL_SHARED"] ?? ""
    let root = env.isEmpty
        ? URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("shared")
        : URL(fileURLWithPath: env)
    let url = root.appendingPathComponent(relative).standardized
    let found = FileManager.default.fileExists(atPath: url.path)
    return (found ? url : nil, "shared test data not found at \(url.path) (\(env.isEmpty ? "default <repo>/../shared" : "from PUSHSEAL_SHARED")): "
        + "run `make test SHARED=/path/to/shared`, or set PUSHSEAL_SHARED=/path/to/shared")
}

/// A reproducible random number generator for CLITests (SplitMix64), seeded from
/// `$PUSHSEAL_TEST_SEED` when set, else from a fresh seed that ``seedComment`` reports, as the
/// Format tests do. `SystemRandomNumberGenerator` is not used: passed `inout` it has crashed
/// under ThreadSanitizer, and an unseeded failure cannot be replayed.
struct SeededGenerator: RandomNumberGenerator {
    /// This process's seed: `$PUSHSEAL_TEST_SEED` (decimal) or a fresh random one.
    static let seed: UInt64 = ProcessInfo.processInfo.environment["PUSHSEAL_TEST_SEED"].flatMap { UInt64($0) }
        ?? UInt64.random(in: 0...UInt64.max)
    /// Text for a failure message: the seed and how to rerun with it.
    static var seedComment: Comment { "seed \(seed) (rerun with PUSHSEAL_TEST_SEED=\(seed))" }

    private var state: UInt64

    /// A generator starting at `seed` (default: this process's ``seed``).
    init(seed: UInt64 = SeededGenerator.seed) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
