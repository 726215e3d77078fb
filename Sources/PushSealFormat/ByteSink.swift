/// Where ``PlaintextEncoder`` writes bytes: a growable `[UInt8]`, or a ``BoundedByteSink``
/// over a fixed buffer (the sender's stack buffer, no allocation).
public protocol ByteSink {
    /// Appends one byte.
    mutating func append(_ byte: UInt8)
    /// Appends `bytes` as they are.
    mutating func append(bytes: UnsafeRawBufferPointer)
}

extension Array: ByteSink where Element == UInt8 {
    /// Appends `bytes` (one copy).
    @inlinable public mutating func append(bytes: UnsafeRawBufferPointer) {
        append(contentsOf: UnsafeBufferPointer(start: bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), count: bytes.count))
    }
}

/// A sink over a fixed buffer that never allocates: past its capacity it only sets
/// ``overflowed`` (the caller then writes again into a growable sink). The buffer must
/// outlive the sink.
public struct BoundedByteSink: ByteSink {
    private let base: UnsafeMutableRawPointer
    /// The buffer's byte count.
    public let capacity: Int
    /// Bytes written.
    public private(set) var count = 0
    /// `true` once a write did not fit; the contents are then incomplete.
    public private(set) var overflowed = false

    /// A sink over `buffer`; `nil` for an empty buffer.
    public init?(_ buffer: UnsafeMutableRawBufferPointer) {
        guard let b = buffer.baseAddress else { return nil }
        base = b
        capacity = buffer.count
    }

    /// The bytes written so far (valid while the buffer is).
    public var written: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: base, count: count) }

    /// Appends one byte, or sets ``overflowed``.
    @inline(__always) public mutating func append(_ byte: UInt8) {
        guard count < capacity else { overflowed = true; return }
        base.storeBytes(of: byte, toByteOffset: count, as: UInt8.self)
        count += 1
    }

    /// Appends `bytes`, or sets ``overflowed``.
    @inline(__always) public mutating func append(bytes: UnsafeRawBufferPointer) {
        guard count + bytes.count <= capacity else { overflowed = true; return }
        if let p = bytes.baseAddress, bytes.count > 0 { (base + count).copyMemory(from: p, byteCount: bytes.count) }
        count += bytes.count
    }

    /// Appends `n` spaces (Padmé padding, FORMAT.md §6), or sets ``overflowed``.
    public mutating func appendSpaces(_ n: Int) {
        guard n >= 0, count + n <= capacity else { overflowed = true; return }
        (base + count).initializeMemory(as: UInt8.self, repeating: 0x20, count: n)
        count += n
    }
}
