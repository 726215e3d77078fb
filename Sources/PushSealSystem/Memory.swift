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

    /// The index of the first `byte` in `bytes[range]` (`memchr`), an index of `bytes`; `nil`
    /// when there is none. `range` must lie inside `bytes` (it traps otherwise).
    public static func firstIndex(of byte: UInt8, in bytes: [UInt8], _ range: Range<Int>) -> Int? {
        precondition(range.lowerBound >= 0 && range.upperBound <= bytes.count, "a search range outside its bytes")
        // Safe: `range` is inside `bytes` (checked above), whose storage is valid in the closure.
        return bytes.withUnsafeBytes { b in
            firstIndex(of: byte, in: UnsafeRawBufferPointer(rebasing: b[range])).map { range.lowerBound + $0 }
        }
    }

    /// Whether the `count` bytes at `a` and `b` are equal (`memcmp`; not constant time: public
    /// data only, never secrets).
    @inline(__always)
    public static func equal(_ a: UnsafeRawPointer, _ b: UnsafeRawPointer, count: Int) -> Bool {
        memcmp(a, b, count) == 0
    }

    /// Copies `count` bytes from `source` to `destination` (the regions must not overlap). Up
    /// to 16 bytes are moved inline by two overlapping unaligned loads and stores (a JSON key, a
    /// key id, punctuation: the `memcpy` call costs more than the copy); longer runs go to
    /// `memcpy`.
    @inlinable @inline(__always)
    public static func copy(_ destination: UnsafeMutableRawPointer, from source: UnsafeRawPointer, count: Int) {
        if count > 16 {
            destination.copyMemory(from: source, byteCount: count)
        } else if count >= 8 {
            let head = source.loadUnaligned(as: UInt64.self)
            let tail = source.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self)
            destination.storeBytes(of: head, as: UInt64.self)
            destination.storeBytes(of: tail, toByteOffset: count - 8, as: UInt64.self)
        } else if count >= 4 {
            let head = source.loadUnaligned(as: UInt32.self)
            let tail = source.loadUnaligned(fromByteOffset: count - 4, as: UInt32.self)
            destination.storeBytes(of: head, as: UInt32.self)
            destination.storeBytes(of: tail, toByteOffset: count - 4, as: UInt32.self)
        } else if count > 0 {
            // 1-3 bytes: first, middle and last (some the same byte).
            destination.storeBytes(of: source.load(as: UInt8.self), as: UInt8.self)
            destination.storeBytes(of: source.load(fromByteOffset: count >> 1, as: UInt8.self), toByteOffset: count >> 1, as: UInt8.self)
            destination.storeBytes(of: source.load(fromByteOffset: count - 1, as: UInt8.self), toByteOffset: count - 1, as: UInt8.self)
        }
    }
}
