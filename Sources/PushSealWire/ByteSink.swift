import PushSealSystem
import PushSealCrypto
/// Where ``PlaintextEncoder`` writes bytes: a growable `[UInt8]`, a ``BoundedByteSink`` over a
/// temporary buffer (the sender's stack buffer, no allocation), or a ``ByteCounter``.
public protocol ByteSink {
    /// Appends one byte.
    mutating func append(_ byte: UInt8)
    /// Appends `bytes` as they are.
    mutating func append(bytes: UnsafeRawBufferPointer)
}

extension Array: ByteSink where Element == UInt8 {
    /// Appends `bytes` (one copy).
    @inlinable public mutating func append(bytes: UnsafeRawBufferPointer) {
        // Safe: `bytes` is valid for the call (the caller's borrow), and the buffer pointer is
        // read, not kept; a `nil` base address only occurs with a count of 0.
        append(contentsOf: UnsafeBufferPointer(start: bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), count: bytes.count))
    }
}

/// A sink that only counts: the byte count of what an encoder would write, measured by writing
/// it (no hand-counted lengths).
public struct ByteCounter: ByteSink, Sendable {
    @usableFromInline var counted = 0
    /// Bytes appended so far.
    @inlinable public var count: Int { counted }

    /// A counter at 0.
    @inlinable public init() {}

    /// Counts one byte.
    @inlinable public mutating func append(_ byte: UInt8) { counted += 1 }

    /// Counts `bytes.count` bytes.
    @inlinable public mutating func append(bytes: UnsafeRawBufferPointer) { counted += bytes.count }
}

/// A sink over a fixed temporary buffer that never allocates: past its capacity it only sets
/// ``overflowed`` (the caller then writes again into a growable sink).
///
/// There is no public initialiser: a sink exists only inside the closure of a module entry
/// that owns its buffer for exactly that long (the sender's
/// ``WireFormat/sealInTemporary(_:plaintextCapacity:padding:fits:key:context:algorithm:_:)``).
public struct BoundedByteSink: ByteSink {
    // Internal storage is @usableFromInline and the methods @inlinable, so PlaintextEncoder
    // specializes for this sink in client modules.
    @usableFromInline let base: UnsafeMutableRawPointer
    /// The buffer's byte count.
    public let capacity: Int
    @usableFromInline var writtenByteCount = 0
    @usableFromInline var didOverflow = false
    /// Bytes written.
    @inlinable public var count: Int { writtenByteCount }
    /// `true` once a write did not fit; the contents are then incomplete.
    @inlinable public var overflowed: Bool { didOverflow }

    /// A sink over `buffer` (module-internal: every sink is made by a closure-scoped entry that
    /// owns the buffer for the sink's whole use); `nil` for an empty buffer.
    @usableFromInline init?(_ buffer: UnsafeMutableRawBufferPointer) {
        guard let b = buffer.baseAddress else { return nil }
        base = b
        capacity = buffer.count
    }

    /// Zeroes the bytes written (`SecretBytes.wipe`, which the optimizer cannot drop).
    @usableFromInline func wipe() {
        // Safe: `base..<base + writtenByteCount` is inside the buffer (every append checks the
        // capacity first), and the buffer is alive (the entry that made the sink calls this
        // before it releases the buffer).
        SecretBytes.wipe(UnsafeMutableRawBufferPointer(start: base, count: writtenByteCount))
    }

    /// The bytes written so far; valid while the buffer is (module-internal, see the type).
    @usableFromInline var written: UnsafeRawBufferPointer {
        // Safe: `base..<base + writtenByteCount` was written and lies inside the buffer.
        UnsafeRawBufferPointer(start: base, count: writtenByteCount)
    }

    /// Appends one byte, or sets ``overflowed``.
    @inlinable @inline(__always) public mutating func append(_ byte: UInt8) {
        guard writtenByteCount < capacity else { didOverflow = true; return }
        // Safe: writtenByteCount < capacity, checked just above.
        base.storeBytes(of: byte, toByteOffset: writtenByteCount, as: UInt8.self)
        writtenByteCount += 1
    }

    /// Appends `bytes`, or sets ``overflowed``.
    @inlinable @inline(__always) public mutating func append(bytes: UnsafeRawBufferPointer) {
        guard writtenByteCount + bytes.count <= capacity else { didOverflow = true; return }
        // Safe: the copy ends at writtenByteCount + bytes.count <= capacity, checked just above.
        if let p = bytes.baseAddress { Memory.copy(base + writtenByteCount, from: p, count: bytes.count) }
        writtenByteCount += bytes.count
    }

    /// Appends the standard padded base64 of `bytes` (``WireBase64/encode(_:into:)``, public
    /// bytes only: not constant-time), or sets ``overflowed``.
    public mutating func appendBase64(_ bytes: RawSpan) {
        let n = WireBase64.encodedByteCount(bytes.byteCount)
        guard writtenByteCount + n <= capacity else { didOverflow = true; return }
        // Safe: the encoder writes exactly n bytes, and writtenByteCount + n <= capacity was
        // checked just above; `src` is valid inside the closure and not kept.
        bytes.withUnsafeBytes { src in WireBase64.encode(src, into: base + writtenByteCount) }
        writtenByteCount += n
    }

    /// Appends `n` spaces (Padmé padding, FORMAT.md §6), or sets ``overflowed``.
    @inlinable public mutating func appendSpaces(_ n: Int) {
        guard n >= 0, writtenByteCount + n <= capacity else { didOverflow = true; return }
        // Safe: 0 <= n and the run ends at writtenByteCount + n <= capacity, checked just above.
        (base + writtenByteCount).initializeMemory(as: UInt8.self, repeating: 0x20, count: n)
        writtenByteCount += n
    }
}
