internal import CSodium

/// Secret bytes (a key) that zero themselves when released and never print their contents.
///
/// The bytes live in one heap allocation owned by this object; `deinit` wipes them with
/// libsodium's `sodium_memzero`, which the compiler cannot optimise away. `description`,
/// `debugDescription` and reflection show only the length. Comparison is constant-time
/// (`sodium_memcmp`).
///
/// Sendable: the storage is written only in `init` and never mutated afterwards, so
/// concurrent reads are safe.
public final class SecretBytes: @unchecked Sendable, Equatable, CustomStringConvertible,
    CustomDebugStringConvertible, CustomReflectable
{
    private let storage: UnsafeMutableRawBufferPointer

    /// The number of secret bytes.
    public var byteCount: Int { count }

    /// Copies `bytes` into a new secret. The caller should wipe its own copy (see ``wipe(_:)``).
    /// - Parameter bytes: the secret, any length (a key for ``AES256GCM`` is 32 bytes).
    public init<Bytes: Collection>(copying bytes: Bytes) where Bytes.Element == UInt8 {
        storage = UnsafeMutableRawBufferPointer.allocate(byteCount: max(bytes.count, 1), alignment: 16)
        storage.initializeMemory(as: UInt8.self, repeating: 0)
        _ = UnsafeMutableRawBufferPointer(rebasing: storage[0..<bytes.count]).initializeMemory(as: UInt8.self, from: bytes)
        count = bytes.count
    }

    /// Copies the bytes of `bytes` into a new secret (the non-generic path for a key read in
    /// place from a larger buffer, e.g. `bytes.span.extracting(offset..<(offset + 32))`): one copy,
    /// straight into this object's storage. The caller wipes the source.
    /// - Parameter bytes: the secret, any length.
    public init(copying bytes: Span<UInt8>) {
        let target = UnsafeMutableRawBufferPointer.allocate(byteCount: max(bytes.count, 1), alignment: 16)
        target.initializeMemory(as: UInt8.self, repeating: 0)
        // Safe: `target` holds at least `bytes.count` bytes and the source is valid for the
        // closure; the two do not overlap (the storage is new).
        bytes.withUnsafeBytes { source in
            if let base = source.baseAddress { target.baseAddress?.copyMemory(from: base, byteCount: source.count) }
        }
        storage = target
        count = bytes.count
    }

    /// Creates `byteCount` fresh random bytes from libsodium's `randombytes_buf`.
    /// - Parameter byteCount: number of bytes, e.g. 32 for an AES-256 key.
    public init(randomByteCount byteCount: Int) {
        storage = UnsafeMutableRawBufferPointer.allocate(byteCount: max(byteCount, 1), alignment: 16)
        storage.initializeMemory(as: UInt8.self, repeating: 0)
        SecureRandom.fill(UnsafeMutableRawBufferPointer(rebasing: storage[0..<byteCount]))
        count = byteCount
    }

    /// A secret written in place by `fill` (the closure-scoped base of ``init(decodingBase64:maxByteCount:)``
    /// and ``init(decodingHex:byteCount:)``): the key bytes go straight into this object's own
    /// storage, so no other buffer ever holds them.
    /// - Parameters:
    ///   - capacity: the storage's size in bytes; `fill` may use all of it.
    ///   - fill: given the zeroed storage (valid only inside the call), writes the secret at its
    ///     start and returns its length (at most `capacity`), or `nil` to fail.
    /// - Returns: `nil` when `fill` does; the storage is then wiped and released.
    init?(capacity: Int, filling fill: (UnsafeMutableRawBufferPointer) -> Int?) {
        let capacity = max(capacity, 0)
        let target = UnsafeMutableRawBufferPointer.allocate(byteCount: max(capacity, 1), alignment: 16)
        target.initializeMemory(as: UInt8.self, repeating: 0)
        // Safe: the rebased buffer is the first `capacity` bytes of `target` (allocated with at
        // least that many above) and is not kept by `fill` past its return.
        guard let n = fill(UnsafeMutableRawBufferPointer(rebasing: target[0..<capacity])), (0...capacity).contains(n) else {
            // A failed decode may have written part of a key: wipe before releasing, as deinit would.
            sodium_memzero(target.baseAddress, target.count)
            target.deallocate()
            return nil
        }
        storage = target
        count = n
    }

    private let count: Int

    deinit {
        sodium_memzero(storage.baseAddress, storage.count)
        storage.deallocate()
    }

    /// Calls `body` with a read-only view of the secret bytes. Do not let the pointer escape.
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeRawBufferPointer(rebasing: storage[0..<count]))
    }

    /// A copy of the bytes as an array, for encoding into a key record. Wipe it when done
    /// with ``wipe(_:)``.
    public func copyBytes() -> [UInt8] {
        withUnsafeBytes { Array($0) }
    }

    /// Constant-time equality of two secrets (`sodium_memcmp`); different lengths are unequal.
    public static func == (lhs: SecretBytes, rhs: SecretBytes) -> Bool {
        guard lhs.count == rhs.count else { return false }
        return lhs.withUnsafeBytes { a in rhs.withUnsafeBytes { b in ConstantTime.equals(a, b) } }
    }

    /// Never the bytes: `SecretBytes(32 bytes, redacted)`.
    public var description: String { "SecretBytes(\(count) bytes, redacted)" }
    /// Never the bytes: same as ``description``.
    public var debugDescription: String { description }
    /// Reflection (`dump`, debuggers' summaries) shows only the length.
    public var customMirror: Mirror { Mirror(self, children: ["byteCount": count], displayStyle: .class) }

    /// Overwrites an array's bytes with zeros in place (`sodium_memzero`), e.g. a decoded key
    /// copy. The array keeps its length.
    public static func wipe(_ bytes: inout [UInt8]) {
        bytes.withUnsafeMutableBytes { sodium_memzero($0.baseAddress, $0.count) }
    }

    /// Overwrites the bytes of `buffer` with zeros (`sodium_memzero`), e.g. a plaintext in a
    /// temporary buffer once it is sealed.
    public static func wipe(_ buffer: UnsafeMutableRawBufferPointer) {
        if let base = buffer.baseAddress { sodium_memzero(base, buffer.count) }
    }
}
