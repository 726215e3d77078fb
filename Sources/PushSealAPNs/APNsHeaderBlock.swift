internal import CNghttp2

/// The header list of one request, built in reused buffers: the values in one byte buffer,
/// the names static strings (passed to nghttp2 with `NGHTTP2_NV_FLAG_NO_COPY_NAME`: they live
/// as long as the program). nghttp2 copies the values when the request is submitted, so the
/// buffers are reused for the next one. A value can be left out of the HPACK tables
/// (`NGHTTP2_NV_FLAG_NO_INDEX`): one that differs on every request would only push the others
/// (the provider token) out of the tables on both sides.
///
/// A struct the ``APNsConnection`` keeps and swaps out while it builds a request (one
/// exclusive access instead of one per append).
struct APNsHeaderBlock {
    private var bytes: [UInt8] = []
    private var fields: [(name: StaticString, value: Int, valueCount: Int, index: Bool)] = []
    private var list: [nghttp2_nv] = []

    /// Empties the block (capacity kept).
    mutating func reset() {
        bytes.removeAll(keepingCapacity: true)
        fields.removeAll(keepingCapacity: true)
    }

    /// Starts the field `name`; append its value with the `append` calls.
    mutating func field(_ name: StaticString, index: Bool = true) {
        fields.append((name, bytes.count, 0, index))
    }

    mutating func append(_ value: StaticString) {
        bytes.append(contentsOf: UnsafeBufferPointer(start: value.utf8Start, count: value.utf8CodeUnitCount))
        closeField()
    }

    mutating func append(_ value: [UInt8]) {
        bytes.append(contentsOf: value)
        closeField()
    }

    mutating func append(_ value: String) {
        var v = value
        v.withUTF8 { bytes.append(contentsOf: $0) }
        closeField()
    }

    /// `prefix` then `value` (`/3/device/` and the device token).
    mutating func append(_ prefix: StaticString, _ value: String) {
        bytes.append(contentsOf: UnsafeBufferPointer(start: prefix.utf8Start, count: prefix.utf8CodeUnitCount))
        append(value)
    }

    /// Appends `value` in decimal.
    mutating func append(_ value: Int64) {
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        var m = value.magnitude
        let at = bytes.count
        repeat {
            bytes.append(0x30 &+ UInt8(truncatingIfNeeded: m % 10))
            m /= 10
        } while m > 0
        bytes[at...].reverse()
        closeField()
    }

    private mutating func closeField() {
        let last = fields.count - 1
        fields[last].valueCount = bytes.count - fields[last].value
    }

    /// Calls `body` with the `nghttp2_nv` list of the fields (pointers valid inside `body` only).
    mutating func withList<R>(_ body: (UnsafeBufferPointer<nghttp2_nv>) -> R) -> R {
        var list = self.list
        self.list = []
        list.removeAll(keepingCapacity: true)
        let fields = self.fields
        let r = bytes.withUnsafeMutableBufferPointer { values -> R in
            guard let base = values.baseAddress else { return list.withUnsafeBufferPointer(body) }
            for f in fields {
                let flags = NGHTTP2_NV_FLAG_NO_COPY_NAME.rawValue | (f.index ? 0 : NGHTTP2_NV_FLAG_NO_INDEX.rawValue)
                list.append(nghttp2_nv(name: UnsafeMutablePointer(mutating: f.name.utf8Start), value: base + f.value,
                                       namelen: f.name.utf8CodeUnitCount, valuelen: f.valueCount, flags: UInt8(flags)))
            }
            return list.withUnsafeBufferPointer(body)
        }
        self.list = list
        return r
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
