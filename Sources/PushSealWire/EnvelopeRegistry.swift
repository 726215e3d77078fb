/// The table of envelope algorithms by `enc_alg`: one value, used by the sender
/// (`NotificationSealer`, `BatchSealer`), the extension (`WireFormatOpener`), `push-open` and
/// `push-bench`. Production uses ``standard`` (v1: `A256GCM` only); adding an algorithm is
/// ``adding(_:)`` and passing the new table where a registry is taken.
public struct EnvelopeRegistry: Sendable {
    /// Version 1: ``A256GCMEnvelope`` only.
    public static let standard = EnvelopeRegistry(uncheckedEntries: [A256GCMEnvelope()])

    /// The entries in registration order; the first is ``standard``'s `A256GCM`.
    public let algorithms: [any EnvelopeAlgorithm]

    /// The `enc_alg` values known, in registration order.
    public let names: [String]

    init(uncheckedEntries: [any EnvelopeAlgorithm]) {
        algorithms = uncheckedEntries
        names = uncheckedEntries.map(\.name)
    }

    /// The algorithm named `name` (an exact, case-sensitive match), or `nil`.
    public func algorithm(named name: String) -> (any EnvelopeAlgorithm)? {
        // By the names kept at creation (asking each entry for its name cost a witness call and
        // a string copy per seal).
        for (i, n) in names.enumerated() where n == name { return algorithms[i] }
        return nil
    }

    /// This table with `algorithm` added (replacing an entry of the same name).
    /// - Throws: `FormatError` `.unknownAlgorithm` when the name is not 1–64 of
    ///   `A-Z a-z 0-9 _ -`, or a header field name is not 1–64 of `a-z 0-9 _` or repeats one of
    ///   `encrypted_data`, `key_id`, `enc_alg` (names and values are written into the payload
    ///   without escaping).
    public func adding(_ algorithm: any EnvelopeAlgorithm) throws -> EnvelopeRegistry {
        guard WireFormat.isValidKeyID(algorithm.name) else {
            throw FormatError(.unknownAlgorithm, "an enc_alg is 1-64 characters of A-Z a-z 0-9 _ -, got \(WireFormat.describe(algorithm.name))")
        }
        let reserved = [WireFormat.encryptedDataField, WireFormat.keyIDField, WireFormat.algorithmField]
        for field in algorithm.headerFieldNames {
            let u = field.utf8
            guard !u.isEmpty, u.count <= 64, !reserved.contains(field),
                  u.allSatisfy({ $0 &- 0x61 < 26 || $0 &- 0x30 < 10 || $0 == UInt8(ascii: "_") }) else {
                throw FormatError(.unknownAlgorithm, "\(algorithm.name): header field \(WireFormat.describe(field)) is not 1-64 of a-z 0-9 _ or is reserved")
            }
        }
        return EnvelopeRegistry(uncheckedEntries: algorithms.filter { $0.name != algorithm.name } + [algorithm])
    }
}
