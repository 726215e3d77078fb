/// Padmé padding (Nikitin, Barman, Lueks, Underwood, Bodenmann, Ford: "Reducing Metadata
/// Leakage from Encrypted Files and Communication with PURBs", PoPETs 2019(4), §4).
///
/// A length L is rounded up so that only its top ⌊log2 ⌊log2 L⌋⌋ + 1 bits may be non-zero,
/// which leaks O(log log L) bits of the length with at most ~12% overhead.
/// Wire format v1 pads the plaintext JSON with trailing ASCII spaces (0x20) to this length
/// (FORMAT.md §6); the result is still valid JSON.
public enum Padme {
    /// The Padmé length of `n` bytes.
    /// - Parameter n: a length in bytes, ≥ 0.
    /// - Returns: the padded length in bytes, ≥ `n`. Lengths 0, 1 and 2 are unchanged;
    ///   examples: 100 → 104, 1000 → 1024, 2049 → 2176.
    ///
    /// Formula: E = ⌊log2 n⌋, S = ⌊log2 E⌋ + 1, z = E − S, mask = 2^z − 1,
    /// result = (n + mask) & ~mask.
    public static func paddedLength(_ n: Int) -> Int {
        guard n > 2 else { return max(n, 0) }
        let e = Int.bitWidth - 1 - n.leadingZeroBitCount        // ⌊log2 n⌋ ≥ 1
        let s = Int.bitWidth - 1 - e.leadingZeroBitCount + 1    // ⌊log2 e⌋ + 1
        let lastBits = e - s
        let mask = (1 << lastBits) - 1
        return (n + mask) & ~mask
    }

    /// Appends ASCII spaces to `json` until its length is `paddedLength(json.count)`.
    /// - Parameter json: serialized JSON bytes; trailing whitespace keeps it valid JSON.
    public static func pad(_ json: inout [UInt8]) {
        let target = paddedLength(json.count)
        if target > json.count {
            json.append(contentsOf: repeatElement(UInt8(ascii: " "), count: target - json.count))
        }
    }
}
