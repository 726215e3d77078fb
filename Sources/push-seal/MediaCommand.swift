import PushSealJSON
import Foundation
import PushSealSystem
import PushSealCLI
import PushSealWire
import PushSealSender

/// `push-seal media FILE --out BLOB [--url URL] [--type MIME] [--force]`: encrypt a media file for a sealed notification.
struct MediaCommand: Command {
    let path = ["media"]
    let options: [OptionSpec] = [
        .value("--out", "BLOB", "where to write the encrypted blob, mode 0644 (required; must not exist unless --force)"),
        .value("--url", "URL", "the absolute https:// or http:// URL the blob will be served from, written into the descriptor (default: empty; fill it in before sealing)"),
        .value("--type", "MIME", "the MIME type, type/subtype of token characters, e.g. image/jpeg (default: from the file's magic bytes)"),
        .flag("--force", "overwrite BLOB if it exists"),
    ]
    let help = HelpText(
        overview: "encrypt a media file with a fresh AES-256-GCM key into a blob to upload anywhere, and print the descriptor {url, type, sha256, key} to put in the notification's \"media\"",
        usage: ["push-seal media FILE --out BLOB [--url URL] [--type MIME] [--force]"],
        examples: [
            "push-seal media cat.jpg --out cat.jpg.sealed --url https://cdn.example.com/m/cat.jpg.sealed > media.json",
        ],
        exitCodes: SealExit.mediaHelpLines,
        notes: """
        The blob is nonce(12) || ciphertext || tag(16) (CryptoKit's combined box, empty AAD); sha256 is the lower-case hex SHA-256 of the blob; key is the standard base64 of the 32-byte key. The key is printed only in the descriptor on stdout: put it only inside a sealed notification.
        """,
        jsonHelp: "report errors as one {\"error\": {\"code\", \"message\"}} object on stdout (the descriptor is JSON already)"
    )

    func run(_ context: CommandContext) throws -> ExitCode {
        let a = context.arguments
        try a.expectPositionals(max: 1)
        guard let input = a.positionals.first else { throw CLIError.usage("missing FILE", hint: "push-seal media FILE --out BLOB") }
        let out = try a.required("--out", "BLOB")
        // The sealer's own rules (MediaSealer.seal checks them too): a bad flag is a usage error.
        if let url = a.value("--url"), !Notification.isValidMediaURL(url) {
            throw CLIError.usage("--url needs an absolute https:// or http:// URL, got \(quoted(url))", hint: "e.g. --url https://cdn.example.com/m/cat.jpg.sealed, or leave it out and fill in \"url\" before sealing")
        }
        if let type = a.value("--type"), !Notification.isValidMediaType(type) {
            throw CLIError.usage("--type needs a MIME type type/subtype of token characters, got \(quoted(type))", hint: "e.g. --type image/jpeg, or leave it out to take the type from the file's magic bytes")
        }
        let file = try InputReader.readAll(input, limitByteCount: MediaSealer.maxFileByteCount)
        let sealed = try mappingSenderErrors { try MediaSealer.seal(file, url: a.value("--url") ?? "", type: a.value("--type")) }
        let blob: FileDescriptor
        do {
            blob = try FileDescriptor.open(out, [.writeOnly, .create, a.has("--force") ? .truncate : .exclusive], mode: 0o644, exactMode: true)
        } catch let e as SystemError {
            switch e.code {
            case .alreadyExists: throw CLIError(code: "exists", "\(out) already exists", hint: "choose another --out or add --force", exitCode: .cannotCreate)
            case .permissionDenied: throw CLIError(code: "permissionDenied", "permission denied: \(out)", exitCode: .noPermission)
            default: throw CLIError(code: "cannotCreate", "cannot create \(out): \(errnoText(e.errno))", exitCode: .cannotCreate)
            }
        }
        do {
            try blob.writeAll(sealed.blob)
            try blob.synchronize()
        } catch {
            throw CLIError(code: "ioError", "cannot write \(out)", exitCode: .ioError)
        }
        blob.close()
        var w = PayloadWriter(capacity: 256)
        // url, type, sha256 (lower-case hex), key (standard base64): PushSealWire's spelling.
        if case .object(let o) = sealed.media.jsonValue() { try w.object(o) }
        w.raw("\n")
        Output.stdout(bytes: w.bytes)
        return .success
    }
}
