internal import CPushSealSIMD

/// The byte-level JSON toolkit's scan: which bytes of a JSON string leave the plain path, eight
/// bytes at a time (SWAR), with `CPushSealSIMD`'s vector scan for long runs. The reader
/// (`JSONReader.Scanner`, `Parser`) and the one escaper (``JSONSinkWriter``) both step with it,
/// so the word tests exist once.
///
/// Package-visible (and `@usableFromInline` where the writer's inlinable escaper needs it), not
/// public: a layout detail, not an API.
@usableFromInline package enum ByteScan {
    @usableFromInline package static let ones: UInt64 = 0x0101_0101_0101_0101
    @usableFromInline package static let highBits: UInt64 = 0x8080_8080_8080_8080

    /// The high bit of each byte of `x` (little-endian) that a JSON string must escape: below
    /// 0x20, `"` or `\`. Exact at the lowest set bit (a borrow in the subtractions only runs
    /// upward from a byte that is itself flagged, so `trailingZeroBitCount >> 3` is the offset
    /// of the first such byte; higher bits may be false); zero exactly when no byte is flagged.
    /// Bytes at or above 0x80 are never flagged (`& ~x`).
    @inlinable @inline(__always)
    package static func escapeFlags(_ x: UInt64) -> UInt64 {
        let q = x ^ (ones &* 0x22)
        let b = x ^ (ones &* 0x5C)
        return ((x &- ones &* 0x20) | (q &- ones) & ~q | (b &- ones) & ~b) & ~x & highBits
    }

    /// Whether any of the eight bytes in `x` is below 0x20, `"` or `\` — the bytes a JSON
    /// string must escape. Exact (no false answers) for bytes of any value.
    @inlinable @inline(__always)
    package static func needsEscape(_ x: UInt64) -> Bool {
        escapeFlags(x) != 0
    }

    /// Whether the eight bytes in `x` leave the reader's fast path: non-ASCII, or a byte
    /// that ``needsEscape(_:)`` flags.
    @inlinable @inline(__always)
    package static func leavesPlainASCII(_ x: UInt64) -> Bool {
        plainASCIIExits(x) != 0
    }

    /// The high bit of each byte of `x` (little-endian) that leaves the reader's fast path
    /// (``leavesPlainASCII(_:)``: ``escapeFlags(_:)`` or a byte at or above 0x80), exact at the
    /// lowest set bit as ``escapeFlags(_:)`` is.
    @inlinable @inline(__always)
    package static func plainASCIIExits(_ x: UInt64) -> UInt64 {
        escapeFlags(x) | x & highBits
    }

    /// The index of the first byte of `p[from..<end]` that a JSON string must escape (a
    /// control character, `"` or `\`), or `end`: a run of 32 bytes or more goes through
    /// `CPushSealSIMD`'s scan first (it stops at the first non-ASCII byte too), then eight bytes
    /// at a time (``escapeFlags(_:)``), then byte by byte. The escaper's one scan.
    @inlinable @inline(__always)
    package static func firstEscapeIndex(_ p: UnsafePointer<UInt8>, from: Int, end: Int) -> Int {
        var i = from
        if end - i >= 32 { i = vectorSkipPlain(p, from: i, end: end) }
        while i + 8 <= end {
            let flags = escapeFlags(load(p, at: i))
            if flags != 0 { return i + (flags.littleEndian.trailingZeroBitCount >> 3) }
            i += 8
        }
        while i < end {
            let c = p[i]
            if c < 0x20 || c == 0x22 || c == 0x5C { return i }
            i += 1
        }
        return end
    }

    /// The offset of the first byte at or after `i` that leaves plain ASCII
    /// (``plainASCIIExits(_:)``), found a word at a time, or a point fewer than 8 bytes before
    /// `end` with only plain bytes before it. Two words are tried first (keys and most values
    /// end there); a longer run goes through ``skipPlainASCII16(_:from:end:)`` from there.
    @inline(__always)
    static func skipPlainWords(_ p: UnsafePointer<UInt8>, from i: Int, end: Int) -> Int {
        var j = i
        var words = 0
        while j + 8 <= end {
            let exits = plainASCIIExits(load(p, at: j))
            if exits != 0 { return j + exits.trailingZeroBitCount >> 3 }
            j += 8
            words += 1
            if words == 2, end - j >= 32 { j = skipPlainASCII16(p, from: j, end: end) }
        }
        return j
    }

    /// An index `j >= i` such that `p[i..<j]` is plain ASCII (no byte ``leavesPlainASCII(_:)``
    /// flags) and either `p[j..<j+16]` holds a flagged byte or fewer than 16 bytes are left.
    /// On x86-64 `CPushSealSIMD` scans first (32 or 16 bytes per step, stopping at the flagged
    /// byte itself); then two words per step, one branch.
    @inline(__always)
    static func skipPlainASCII16(_ p: UnsafePointer<UInt8>, from i: Int, end: Int) -> Int {
        skipPlainASCII16Portable(p, from: i < end ? pushseal_json_skip_plain(p, i, end) : i, end: end)
    }

    /// ``skipPlainASCII16(_:from:end:)`` without the vectorized scan: what non-x86 CPUs run
    /// (tests call it directly, since on x86-64 it only ever sees the C scan's stopping point).
    @inline(__always)
    static func skipPlainASCII16Portable(_ p: UnsafePointer<UInt8>, from i: Int, end: Int) -> Int {
        var j = i
        while j + 16 <= end {
            let a = load(p, at: j), b = load(p, at: j + 8)
            if plainASCIIExits(a) | plainASCIIExits(b) != 0 { return j }
            j += 16
        }
        return j
    }

    /// `CPushSealSIMD`'s JSON string scan: an index `j >= i` such that `p[i..<j]` is ASCII with
    /// no byte to escape (`j` is at a flagged byte, a non-ASCII byte, or fewer than 16 bytes
    /// before `end`). Not inlinable: the C module is this module's own import.
    @usableFromInline package static func vectorSkipPlain(_ p: UnsafePointer<UInt8>, from i: Int, end: Int) -> Int {
        pushseal_json_skip_plain(p, i, end)
    }

    @inlinable @inline(__always)
    package static func load(_ p: UnsafePointer<UInt8>, at i: Int) -> UInt64 {
        UnsafeRawPointer(p + i).loadUnaligned(as: UInt64.self)
    }
}
