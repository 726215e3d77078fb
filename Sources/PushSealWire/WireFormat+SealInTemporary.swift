public import PushSealCrypto
import PushSealJSON
import PushSealSystem

// The sender's seal entries: plaintext and box in temporary buffers lent as spans (the buffers
// themselves are made by PushSealJSON's `BoundedByteSink.withTemporary` and PushSealSystem's
// `TemporaryBytes`); the caller gets the box as a `RawSpan` for the length of a closure.
extension WireFormat {
    /// Encodes `notification` (``PlaintextEncoder``), pads it and seals it through
    /// ``seal(_:key:context:algorithm:into:)`` in one temporary buffer of `plaintextCapacity` +
    /// the box's bytes (on the stack up to 1 KiB), then hands `body` the box to build the
    /// payload from. The plaintext is zeroed before the buffer is released, on every exit.
    /// (Not generic: an unspecialized generic here looked up its result's type metadata on
    /// every seal, about 5 % of a full seal.)
    /// - Parameters:
    ///   - notification: the notification, borrowed (not copied).
    ///   - plaintextCapacity: room for the padded plaintext in bytes (at least 1).
    ///   - padding: pad to the Padmé length (FORMAT.md §6).
    ///   - fits: whether a padded plaintext of that many bytes fits the caller's payload.
    ///   - key, context, algorithm: as ``seal(_:key:context:algorithm:into:)``.
    ///   - body: given the box (valid only inside it), returns the payload.
    /// - Returns: `body`'s result; `nil` when the padded plaintext is larger than
    ///   `plaintextCapacity` or `fits` refuses it (the caller's growable, fitting path).
    /// - Throws: `FormatError` `.nonFiniteNumber` (an infinite or NaN number in `data`); as
    ///   ``seal(_:key:context:algorithm:into:)``; what `body` throws.
    public static func sealInTemporary(_ notification: borrowing PushNotification, plaintextCapacity: Int, padding: Bool,
                                       fits: (_ paddedPlaintextByteCount: Int) -> Bool, key: SecretBytes,
                                       context: EnvelopeContext, algorithm: any EnvelopeAlgorithm,
                                       _ body: (_ box: RawSpan) throws -> [UInt8]) throws -> [UInt8]? {
        let capacity = max(1, plaintextCapacity)
        let boxCapacity = algorithm.boxByteCount(plaintextByteCount: capacity)
        return try BoundedByteSink.withTemporary(capacity: capacity, trailingByteCount: boxCapacity) { sink, box -> [UInt8]? in
            var e = PlaintextEncoder(into: sink)
            // The plaintext does not outlive the seal in this buffer, whether it sealed, threw or
            // did not fit.
            defer { e.sink.withWrittenMutableBytes { SecretBytes.wipe(&$0) } }
            try e.encode(notification)
            guard !e.sink.overflowed else { return nil }
            let padded = padding ? Padme.paddedLength(e.sink.count) : e.sink.count
            guard fits(padded) else { return nil }
            e.sink.appendSpaces(padded - e.sink.count)
            guard !e.sink.overflowed else { return nil }
            let written = try e.sink.withWrittenBytes { plaintext in
                try seal(plaintext, key: key, context: context, algorithm: algorithm, into: &box)
            }
            return try body(box.bytes.extracting(0..<written))
        }
    }

    /// Seals `plaintext` (already padded) through ``seal(_:key:context:algorithm:into:)`` into a
    /// temporary buffer and hands `body` the box (valid only inside it): the sender's path for
    /// a plaintext built in a growable array.
    /// - Returns: the payload `body` returns.
    /// - Throws: as ``seal(_:key:context:algorithm:into:)``; what `body` throws.
    public static func seal(_ plaintext: [UInt8], key: SecretBytes, context: EnvelopeContext, algorithm: any EnvelopeAlgorithm,
                            _ body: (_ box: RawSpan) throws -> [UInt8]) throws -> [UInt8] {
        try TemporaryBytes.with(byteCount: algorithm.boxByteCount(plaintextByteCount: plaintext.count)) { box in
            let written = try seal(plaintext.span.bytes, key: key, context: context, algorithm: algorithm, into: &box)
            return try body(box.bytes.extracting(0..<written))
        }
    }
}
