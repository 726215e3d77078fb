import PushSealSystem

/// Token buckets per API key: each key may spend `burst` requests at once and gets `ratePerSecond`
/// back each second; a request beyond is answered 429 with `Retry-After`.
///
/// Per instance: with N instances behind a load balancer a key gets up to N times the rate
/// (docs/gateway.md says so).
public final class RateLimiter: Sendable {
    private struct Bucket { var tokens: Double; var updatedNanoseconds: UInt64 }
    /// Tokens refilled per second.
    public let ratePerSecond: Double
    /// The bucket's size.
    public let burst: Double
    private let buckets = Locked<[String: Bucket]>([:])
    /// When the last pruning pass ran (monotonic ns; at most one a second, so a flood of busy
    /// keys costs one pass a second, not one per request).
    private let lastPrune = Locked<UInt64?>(nil)
    /// Buckets kept before the full ones are dropped: a full bucket is the same as none, so
    /// dropping it changes no answer. Registration tokens have a bucket per recipient, so
    /// without this the map grew with every installation for the life of the process.
    public static let pruneThreshold = 10_000

    /// Creates a limiter.
    /// - Parameters:
    ///   - ratePerSecond: requests per second per key, > 0.
    ///   - burst: requests at once, ≥ 1.
    public init(ratePerSecond: Double, burst: Double) {
        self.ratePerSecond = max(0.001, ratePerSecond)
        self.burst = max(1, burst)
    }

    /// Takes one token from `key`'s bucket.
    /// - Parameters:
    ///   - key: the API key's id.
    ///   - nowNanoseconds: the monotonic clock (`monotonicNanoseconds()`).
    /// - Returns: `nil` when allowed; else whole seconds until a token is back (≥ 1).
    public func take(_ key: String, nowNanoseconds: UInt64) -> Int? {
        buckets.withLock { all in
            var bucket = all[key] ?? Bucket(tokens: burst, updatedNanoseconds: nowNanoseconds)
            // A reading older than the bucket's (threads read the clock before taking the lock)
            // refills nothing: unsigned wrap-around made it refill the bucket to full.
            let elapsed = Self.seconds(from: bucket.updatedNanoseconds, to: nowNanoseconds)
            bucket.tokens = min(burst, bucket.tokens + elapsed * ratePerSecond)
            bucket.updatedNanoseconds = max(bucket.updatedNanoseconds, nowNanoseconds)
            defer {
                all[key] = bucket
                if all.count > Self.pruneThreshold, lastPrune.withLock({ last in
                    guard last.map({ Self.seconds(from: $0, to: nowNanoseconds) >= 1 }) ?? true else { return false }
                    last = nowNanoseconds
                    return true
                }) {
                    prune(&all, nowNanoseconds: nowNanoseconds)
                }
            }
            if bucket.tokens >= 1 {
                bucket.tokens -= 1
                return nil
            }
            return max(1, Int(((1 - bucket.tokens) / ratePerSecond).rounded(.up)))
        }
    }

    /// How many buckets are kept (tests).
    public var bucketCount: Int { buckets.withLock { $0.count } }

    /// Drops every bucket that has refilled to `burst` by `nowNanoseconds` (its key would get a
    /// new, full one): while the map holds more than ``pruneThreshold``, at most a pass a second.
    private func prune(_ all: inout [String: Bucket], nowNanoseconds: UInt64) {
        all = all.filter { _, b in b.tokens + Self.seconds(from: b.updatedNanoseconds, to: nowNanoseconds) * ratePerSecond < burst }
    }

    /// Seconds from `start` to `end` on the monotonic clock; 0 when `end` is not later.
    static func seconds(from start: UInt64, to end: UInt64) -> Double {
        end > start ? Double(end - start) / 1e9 : 0
    }
}
