extension String {
    /// Calls `body` with this string's UTF-8 bytes, valid only during the call: in place for a
    /// native string (small or not), with no copy of the string and so no retain and release of
    /// its storage (`var s = self; s.withUTF8 { … }` costs both on every call); a bridged or
    /// otherwise non-contiguous string is made contiguous in a copy first.
    /// - Parameter body: reads the bytes; must not keep the pointer.
    /// - Returns: what `body` returns.
    @inlinable public func withContiguousUTF8<R>(_ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        if let r = try utf8.withContiguousStorageIfAvailable(body) { return r }
        var copy = self
        return try copy.withUTF8(body)
    }
}
