internal import CSodium

/// Constant-time comparison (libsodium `sodium_memcmp`): the time taken depends on the length
/// only, never on where the inputs differ.
public enum ConstantTime {
    /// `true` when `a` and `b` have the same length and the same bytes. Lengths are not secret.
    public static func equals(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
        guard a.count == b.count else { return false }
        guard a.count > 0, let pa = a.baseAddress, let pb = b.baseAddress else { return true }
        return sodium_memcmp(pa, pb, a.count) == 0
    }

    /// `true` when both byte arrays are equal, compared in constant time.
    public static func equals(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        a.withUnsafeBytes { pa in b.withUnsafeBytes { pb in equals(pa, pb) } }
    }
}
