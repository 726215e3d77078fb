#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Byte searches and comparisons by libc's vectorized `memchr`/`memcmp`, for hot loops
/// (batch line splitting, member-name matching).
public enum Memory {
    /// The offset of the first `byte` in `buffer`, or `nil` (`memchr`).
    @inline(__always)
    public static func firstIndex(of byte: UInt8, in buffer: UnsafeRawBufferPointer) -> Int? {
        guard let base = buffer.baseAddress, let hit = memchr(base, Int32(byte), buffer.count) else { return nil }
        return UnsafeRawPointer(hit) - base
    }

    /// Whether the `count` bytes at `a` and `b` are equal (`memcmp`; not constant time: public
    /// data only, never secrets).
    @inline(__always)
    public static func equal(_ a: UnsafeRawPointer, _ b: UnsafeRawPointer, count: Int) -> Bool {
        memcmp(a, b, count) == 0
    }
}
