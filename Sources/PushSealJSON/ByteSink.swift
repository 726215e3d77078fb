import PushSealSystem

/// Where ``JSONSinkWriter`` (and the wire module's plaintext encoder on it) writes bytes: a
/// growable `[UInt8]`, a ``BoundedByteSink`` over a fixed buffer (the sender's stack buffer, no
/// allocation), or a ``ByteCounter`` that only counts (to size a payload by writing it once).
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

extension ByteSink {
    /// Appends the bytes of `array` as they are.
    @inlinable @inline(__always) public mutating func append(array: [UInt8]) {
        array.withUnsafeBytes { append(bytes: $0) }
    }
}

/// A sink that keeps nothing and counts the bytes written to it: the size of what a writer
/// would write, found by running the same writer (no length counted by hand).
public struct ByteCounter: ByteSink, Sendable {
    @usableFromInline var counted = 0
    /// Bytes written so far.
    @inlinable public var count: Int { counted }

    /// A counter at 0.
    @inlinable public init() {}

    /// Counts one byte.
    @inlinable @inline(__always) public mutating func append(_ byte: UInt8) { counted += 1 }

    /// Counts `bytes.count` bytes.
    @inlinable @inline(__always) public mutating func append(bytes: UnsafeRawBufferPointer) { counted += bytes.count }
}

/// A sink over a fixed temporary buffer that never allocates: past its capacity it only sets
/// ``overflowed`` (the caller then writes again into a growable sink).
///
/// There is no public initialiser: a sink exists only inside the closure of a package entry
/// that owns its buffer for exactly that long (``JSONSinkWriter/bytes(capacity:_:)``, the
/// sender's `WireFormat.sealInTemporary`).
public struct BoundedByteSink: ByteSink {
    // Internal storage is @usableFromInline and the methods @inlinable, so the writers
    // specialize for this sink in client modules.
    @usableFromInline let base: UnsafeMutableRawPointer
    /// The buffer's byte count.
    public let capacity: Int
    @usableFromInline var writtenByteCount = 0
    @usableFromInline var didOverflow = false
    /// Bytes written.
    @inlinable public var count: Int { writtenByteCount }
    /// `true` once a write did not fit; the contents are then incomplete.
    @inlinable public var overflowed: Bool { didOverflow }

    /// A sink over `buffer` (package-internal: every sink is made by a closure-scoped entry that
    /// owns the buffer for the sink's whole use); `nil` for an empty buffer.
    @inlinable package init?(_ buffer: UnsafeMutableRawBufferPointer) {
        guard let b = buffer.baseAddress else { return nil }
        base = b
        capacity = buffer.count
    }

    /// The bytes written so far; valid while the buffer is (package-internal, see the type).
    @inlinable package var written: UnsafeRawBufferPointer {
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

    /// Lets `write` fill the next `byteCount` bytes in place (they count as written), or sets
    /// ``overflowed`` without calling it: for a codec that writes straight into memory (base64).
    /// `write` must initialize all `byteCount` bytes of the buffer it is given.
    @inlinable public mutating func append(byteCount: Int, writingWith write: (UnsafeMutableRawBufferPointer) -> Void) {
        guard byteCount >= 0, writtenByteCount + byteCount <= capacity else { didOverflow = true; return }
        // Safe: the span handed to `write` ends at writtenByteCount + byteCount <= capacity,
        // checked just above, and is valid only for the call.
        write(UnsafeMutableRawBufferPointer(start: base + writtenByteCount, count: byteCount))
        writtenByteCount += byteCount
    }

    /// Runs `body` with a sink over a temporary buffer of `capacity` bytes (at least 1) and,
    /// after it, `trailingByteCount` more bytes as a span: the sender's plaintext and the box it
    /// is sealed into, in one allocation (on the stack up to 1 KiB), valid only during the
    /// call (package-internal, see the type).
    /// - Returns: what `body` returns.
    /// - Throws: what `body` throws.
    @inlinable package static func withTemporary<R>(capacity: Int, trailingByteCount: Int,
                                                    _ body: (BoundedByteSink, inout MutableRawSpan) throws -> R) rethrows -> R {
        let capacity = max(1, capacity)
        return try withUnsafeTemporaryAllocation(byteCount: capacity + max(0, trailingByteCount), alignment: 16) { scratch in
            // Safe: both ranges lie inside `scratch`, which lives until this closure returns;
            // the sink and the span do not leave `body` (the sink's buffer has no other way
            // out, the span is non-escapable). A non-empty allocation has a base address.
            guard let sink = BoundedByteSink(UnsafeMutableRawBufferPointer(rebasing: scratch[0..<capacity])) else {
                preconditionFailure("a temporary allocation of at least 1 byte has a base address")
            }
            let trailing = UnsafeMutableRawBufferPointer(rebasing: scratch[capacity...])
            var span = trailing.mutableBytes
            return try body(sink, &span)
        }
    }

    /// Runs `body` with the bytes written so far, as a span valid during the call.
    /// - Returns: what `body` returns.
    /// - Throws: what `body` throws.
    @inlinable package func withWrittenBytes<R>(_ body: (RawSpan) throws -> R) rethrows -> R {
        // Safe: `base..<base + writtenByteCount` was written and lies inside the buffer, which
        // the closure-scoped entry that made this sink keeps alive while the sink is used.
        let bytes = UnsafeRawBufferPointer(start: base, count: writtenByteCount)
        return try body(bytes.bytes)
    }

    /// Runs `body` with the bytes written so far, writable (to wipe a plaintext in place).
    /// - Returns: what `body` returns.
    /// - Throws: what `body` throws.
    @inlinable package mutating func withWrittenMutableBytes<R>(_ body: (inout MutableRawSpan) throws -> R) rethrows -> R {
        // Safe: as ``withWrittenBytes(_:)``; the buffer was writable when the sink was made.
        let bytes = UnsafeMutableRawBufferPointer(start: base, count: writtenByteCount)
        var span = bytes.mutableBytes
        return try body(&span)
    }

    /// Appends `n` spaces (Padmé padding, FORMAT.md §6), or sets ``overflowed``.
    @inlinable public mutating func appendSpaces(_ n: Int) {
        guard n >= 0, writtenByteCount + n <= capacity else { didOverflow = true; return }
        // Safe: 0 <= n and the run ends at writtenByteCount + n <= capacity, checked just above.
        (base + writtenByteCount).initializeMemory(as: UInt8.self, repeating: 0x20, count: n)
        writtenByteCount += n
    }
}
