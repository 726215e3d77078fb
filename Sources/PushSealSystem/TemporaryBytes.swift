/// Byte buffers that live for one closure call, handed out as spans (issue 27, step 4): the
/// wire module builds its AAD and HPKE `info` and seals into them without a pointer of its own.
/// On the stack when small (`withUnsafeTemporaryAllocation`), never kept after the call.
///
/// Every entry is `@inlinable`, so it is specialized for the caller's result type (an
/// unspecialized generic looks up that type's metadata at every call).
public enum TemporaryBytes {
    /// Runs `body` with `byteCount` bytes of temporary memory (16-byte aligned, contents
    /// unspecified until written), valid only during the call.
    /// - Parameters:
    ///   - byteCount: the buffer's size in bytes (0 or more).
    ///   - body: writes and reads the buffer; what it returns is the result.
    /// - Returns: what `body` returns.
    /// - Throws: what `body` throws.
    @inlinable
    public static func with<R>(byteCount: Int, _ body: (inout MutableRawSpan) throws -> R) rethrows -> R {
        try withUnsafeTemporaryAllocation(byteCount: max(0, byteCount), alignment: 16) { buffer in
            // Safe: the span covers exactly the allocation, which lives until this closure
            // returns; the span cannot leave `body` (it is non-escapable).
            var bytes = buffer.mutableBytes
            return try body(&bytes)
        }
    }

    /// Runs `body` with the bytes `prefix` ‖ UTF-8 of `first` ‖ `separator` ‖ UTF-8 of
    /// `second`, written into a temporary buffer (plain stores at computed offsets: no
    /// allocation, no cursor captured by a nested function): the version-1 AAD
    /// `pushseal:v1|A256GCM|<key_id>|<app_id>` from its constant prefix.
    /// - Returns: what `body` returns.
    /// - Throws: what `body` throws.
    @inlinable
    public static func joining<R>(_ prefix: StaticString, _ first: String, _ separator: UInt8, _ second: String,
                                  _ body: (RawSpan) throws -> R) rethrows -> R {
        try first.withContiguousUTF8 { a in
            try second.withContiguousUTF8 { b in
                let count = prefix.utf8CodeUnitCount + a.count + 1 + b.count
                return try withUnsafeTemporaryAllocation(byteCount: count, alignment: 1) { buffer in
                    // A buffer of at least one byte (the separator) has an address.
                    guard let base = buffer.baseAddress else { preconditionFailure("a temporary allocation of at least 1 byte has a base address") }
                    // Safe: the four runs end at prefix + a.count + 1 + b.count = count, the
                    // buffer's size; the sources are valid for these closures.
                    var at = prefix.utf8CodeUnitCount
                    if at > 0 { Memory.copy(base, from: prefix.utf8Start, count: at) }
                    if let p = a.baseAddress { Memory.copy(base + at, from: p, count: a.count) }
                    at += a.count
                    base.storeBytes(of: separator, toByteOffset: at, as: UInt8.self)
                    at += 1
                    if let p = b.baseAddress { Memory.copy(base + at, from: p, count: b.count) }
                    // Safe: every byte was written above; the span ends with this closure.
                    let written = UnsafeRawBufferPointer(buffer)
                    return try body(written.bytes)
                }
            }
        }
    }

    /// Runs `body` with the UTF-8 of `parts` joined by `separator` (none before the first),
    /// written into a temporary buffer: the version-2 HPKE `info`.
    /// - Returns: what `body` returns.
    /// - Throws: what `body` throws.
    @inlinable
    public static func joining<R>(_ parts: [String], separator: UInt8, _ body: (RawSpan) throws -> R) rethrows -> R {
        let count = parts.reduce(max(0, parts.count - 1)) { $0 + $1.utf8.count }
        return try withUnsafeTemporaryAllocation(byteCount: count, alignment: 1) { buffer in
            // Safe: subscripted stores, each index below `count` (the sum of the parts and
            // separators), checked by the buffer's subscript in debug builds.
            var i = 0
            for (n, part) in parts.enumerated() {
                if n > 0 { buffer[i] = separator; i += 1 }
                for byte in part.utf8 { buffer[i] = byte; i += 1 }
            }
            // Safe: every byte was written above; the span ends with this closure.
            let written = UnsafeRawBufferPointer(buffer)
            return try body(written.bytes)
        }
    }

    /// A copy of `bytes` in a new array (a binding or box lent as a span, kept by the caller).
    @inlinable
    public static func array(_ bytes: RawSpan) -> [UInt8] {
        // Safe: the span's memory is valid for the call and only copied from.
        bytes.withUnsafeBytes { [UInt8]($0) }
    }
}
