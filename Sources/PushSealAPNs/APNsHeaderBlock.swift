internal import CNghttp2
import PushSealSystem

/// The header list of one request, built in reused buffers: the values in one byte buffer,
/// the names static strings (passed to nghttp2 with `NGHTTP2_NV_FLAG_NO_COPY_NAME`: they live
/// as long as the program). nghttp2 copies the values when the request is submitted, so the
/// buffers are reused for the next one. A value can be left out of the HPACK tables
/// (`NGHTTP2_NV_FLAG_NO_INDEX`): one that differs on every request would only push the others
/// (the provider token) out of the tables on both sides.
///
/// The buffers are allocated memory (an append is a bounds check and a copy, not an array's
/// uniqueness and capacity checks). The block is `~Copyable`: one owner (the ``APNsConnection``
/// that keeps it), freed by its `deinit`, so no copy can free or grow the buffers under
/// another. The connection builds a request inside ``fill(_:)``: one exclusive access to its
/// stored block instead of one per append.
///
/// Why the pointer code is safe: every write goes through ``reserve(_:)`` or the list's growth
/// check first, so it stays inside the allocation; the `nghttp2_nv` value pointers are set only
/// inside ``withList(_:)`` and used only while its `body` runs, before any append can move the
/// buffer; names are `StaticString`s, which live as long as the program.
struct APNsHeaderBlock: ~Copyable {
    private var bytes: UnsafeMutablePointer<UInt8>
    private var byteCount = 0
    private var byteCapacity: Int
    private var list: UnsafeMutablePointer<nghttp2_nv>
    private var listCount = 0
    private var listCapacity: Int

    init() {
        byteCapacity = 1024
        bytes = .allocate(capacity: byteCapacity)
        listCapacity = 16
        list = .allocate(capacity: listCapacity)
    }

    deinit {
        bytes.deallocate()
        list.deallocate()
    }

    /// Runs `body` with the block (one exclusive access for a whole request's fields).
    mutating func fill<R>(_ body: (inout APNsHeaderBlock) -> R) -> R { body(&self) }

    /// Empties the block (capacity kept).
    mutating func reset() {
        byteCount = 0
        listCount = 0
    }

    /// Starts the field `name`; give its value with exactly one `append` call next.
    mutating func field(_ name: StaticString, index: Bool = true) {
        if listCount == listCapacity {
            let grown = UnsafeMutablePointer<nghttp2_nv>.allocate(capacity: listCapacity * 2)
            grown.update(from: list, count: listCount)
            list.deallocate()
            list = grown
            listCapacity *= 2
        }
        let flags = NGHTTP2_NV_FLAG_NO_COPY_NAME.rawValue | (index ? 0 : NGHTTP2_NV_FLAG_NO_INDEX.rawValue)
        // The value's offset is kept in `value` until ``withList(_:)`` makes it a pointer.
        list[listCount] = nghttp2_nv(name: UnsafeMutablePointer(mutating: name.utf8Start), value: nil,
                                     namelen: name.utf8CodeUnitCount, valuelen: byteCount, flags: UInt8(flags))
        listCount += 1
    }

    private mutating func reserve(_ extra: Int) {
        guard byteCount + extra > byteCapacity else { return }
        var capacity = byteCapacity * 2
        while capacity < byteCount + extra { capacity *= 2 }
        let grown = UnsafeMutablePointer<UInt8>.allocate(capacity: capacity)
        grown.update(from: bytes, count: byteCount)
        bytes.deallocate()
        bytes = grown
        byteCapacity = capacity
    }

    private mutating func copy(_ from: UnsafePointer<UInt8>, _ count: Int) {
        reserve(count)
        (bytes + byteCount).update(from: from, count: count)
        byteCount += count
    }

    mutating func append(_ value: StaticString) {
        copy(value.utf8Start, value.utf8CodeUnitCount)
        closeField()
    }

    mutating func append(_ value: [UInt8]) {
        value.withUnsafeBufferPointer { if let base = $0.baseAddress { copy(base, $0.count) } }
        closeField()
    }

    mutating func append(_ value: String) {
        var v = value
        v.withUTF8 { if let base = $0.baseAddress { copy(base, $0.count) } }
        closeField()
    }

    /// `prefix` then `value` (`/3/device/` and the device token).
    mutating func append(_ prefix: StaticString, _ value: String) {
        copy(prefix.utf8Start, prefix.utf8CodeUnitCount)
        append(value)
    }

    /// Appends `value` in decimal.
    mutating func append(_ value: Int64) {
        reserve(DecimalText.maxByteCount)
        byteCount += DecimalText.write(value, to: bytes + byteCount)
        closeField()
    }

    /// The value's length, now that it is complete (its start was kept in `valuelen`); the
    /// values lie in field order, so ``withList(_:)`` finds each start from the lengths.
    private mutating func closeField() {
        let last = listCount - 1
        list[last].valuelen = byteCount - list[last].valuelen
    }

    /// Calls `body` with the `nghttp2_nv` list of the fields (pointers valid inside `body` only).
    mutating func withList<R>(_ body: (UnsafeBufferPointer<nghttp2_nv>) -> R) -> R {
        var at = 0
        for k in 0..<listCount {
            list[k].value = bytes + at
            at += list[k].valuelen
        }
        return body(UnsafeBufferPointer(start: list, count: listCount))
    }

    /// The fields as nghttp2 gets them: name, value and `nghttp2_nv` flags (for checks).
    mutating func entries() -> [(name: String, value: String, flags: UInt8)] {
        withList { list in
            list.map { nv in
                (String(decoding: UnsafeBufferPointer(start: nv.name, count: nv.namelen), as: UTF8.self),
                 String(decoding: UnsafeBufferPointer(start: nv.value, count: nv.valuelen), as: UTF8.self), nv.flags)
            }
        }
    }
}
