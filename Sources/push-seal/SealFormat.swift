import PushSealCLI
import PushSealServerKeyProviders
/// `--format v1|v2` (``SealOptionSpecs/format``): `.automatic` when absent.
/// - Throws: `CLIError` 64 for another value.
func sealFormat(_ a: Arguments) throws -> SealFormatPolicy {
    guard let v = a[SealOptionSpecs.format] else { return .automatic }
    guard v == "v1" || v == "v2", let f = SealFormatPolicy(rawValue: v) else {
        throw CLIError.usage("--format needs v1 or v2, got \(quoted(v))")
    }
    return f
}
