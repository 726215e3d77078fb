import Foundation
import PushSealCLI
import PushSealFormat
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
        let flags = O_WRONLY | O_CREAT | O_CLOEXEC | (a.has("--force") ? O_TRUNC : O_EXCL)
        let fd = open(out, flags, 0o644)
        if fd < 0 {
            let e = errno
            if e == EEXIST { throw CLIError(code: "exists", "\(out) already exists", hint: "choose another --out or add --force", exitCode: .cannotCreate) }
            if e == EACCES || e == EPERM { throw CLIError(code: "permissionDenied", "permission denied: \(out)", exitCode: .noPermission) }
            throw CLIError(code: "cannotCreate", "cannot create \(out): \(String(cString: strerror(e)))", exitCode: .cannotCreate)
        }
        _ = fchmod(fd, 0o644)
        let ok = sealed.blob.withUnsafeBytes { buf -> Bool in
            guard var p = buf.baseAddress else { return true }
            var left = buf.count
            while left > 0 {
                let n = write(fd, p, left)
                if n < 0 { if errno == EINTR { continue }; return false }
                p += n
                left -= n
            }
            return fsync(fd) == 0
        }
        close(fd)
        guard ok else { throw CLIError(code: "ioError", "cannot write \(out)", exitCode: .ioError) }
        var w = PayloadWriter(capacity: 256)
        // url, type, sha256 (lower-case hex), key (standard base64): PushSealFormat's spelling.
        if case .object(let o) = sealed.media.jsonValue() { try w.object(o) }
        w.raw("\n")
        Output.stdout(bytes: w.bytes)
        return .success
    }
}
