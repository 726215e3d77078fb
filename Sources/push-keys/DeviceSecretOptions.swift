import PushSealCLI
import PushSealKeychain
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The device secret option group of `push-keys keychain init`: where the new keychain's 32-byte
/// device secret goes (`--device-secret FILE`, `--device-secret-inside`, else `DIR.secret`
/// beside the directory; keychain.md, review F1).
struct DeviceSecretOptions: CommandOptions {
    /// `--device-secret FILE`.
    static let fileOption = Option.text("--device-secret", "FILE", "write the 32-byte device secret to FILE (created 0600, must not exist) instead of DIR.secret beside the directory")
    /// `--device-secret-inside`.
    static let insideOption = Option.flag("--device-secret-inside", "keep the device secret inside the directory (DIR/device-secret), the layout of an emulated phone whose directory is copied as a whole; a copy of DIR then reads everything")

    /// `--device-secret FILE` as given, when given.
    let file: String?
    /// `--device-secret-inside`.
    let inside: Bool

    init(parsing a: Arguments) {
        file = a[Self.fileOption]
        inside = a[Self.insideOption]
    }

    /// - Throws: `CLIError` (64) when both options are given or FILE is empty.
    func validate() throws {
        guard let file else { return }
        if inside { throw CLIError.usage("give either --device-secret FILE or --device-secret-inside, not both") }
        if file.isEmpty { throw CLIError.usage("--device-secret cannot be empty") }
    }

    /// The location the options name (FILE made absolute); call after ``validate()``.
    var location: DeviceSecretLocation {
        guard let file, !file.isEmpty else { return inside ? .insideDirectory : .besideDirectory }
        return .file(URL(fileURLWithPath: file).standardizedFileURL.path)
    }
}
