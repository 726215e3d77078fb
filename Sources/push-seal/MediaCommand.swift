import PushSealJSON
import Foundation
import PushSealSystem
import PushSealCLI
import PushSealWire
import PushSealSender

/// `push-seal media FILE --out BLOB [--url URL] [--type MIME] [--force]`: encrypt a media file for a sealed notification.
struct MediaCommand: OptionsCommand {
    let path = ["media"]
    static let out = Option.required("--out", "BLOB", "where to write the encrypted blob, mode 0644 (required; must not exist unless --force)")
    static let url = Option.text("--url", "URL", "the absolute https:// or http:// URL the blob will be served from, written into the descriptor (default: empty; fill it in before sealing)")
    static let type = Option.text("--type", "MIME", "the MIME type, type/subtype of token characters, e.g. image/jpeg (default: from the file's magic bytes)")
    static let descriptorOut = Option.text("--descriptor-out", "FILE", "write the descriptor (it holds the key) to FILE, created exclusively with mode 0600 (default: stdout, when it is not a terminal nor a regular file others can read)")
    static let force = Option.flag("--force", "overwrite BLOB if it exists (never through a symbolic link)")

    let options: [OptionSpec] = OptionSpec.list(Self.out, Self.url, Self.type, Self.descriptorOut, Self.force)
    let help = HelpText(
        overview: "encrypt a media file with a fresh AES-256-GCM key into a blob to upload anywhere, and print the descriptor {url, type, sha256, key} to put in the notification's \"media\"",
        usage: ["push-seal media FILE --out BLOB [--url URL] [--type MIME] [--descriptor-out FILE] [--force]"],
        examples: [
            "push-seal media cat.jpg --out cat.jpg.sealed --url https://cdn.example.com/m/cat.jpg.sealed --descriptor-out media.json",
            "push-seal media cat.jpg --out cat.jpg.sealed | jq '{title: \"Cat\", media: .}' | push-seal seal --app-id com.example.app --recipient alice --keychain server-kc -",
        ],
        exitCodes: SealExit.mediaHelpLines,
        notes: """
        The blob is nonce(12) || ciphertext || tag(16) (CryptoKit's combined box, empty AAD); sha256 is the lower-case hex SHA-256 of the blob; key is the standard base64 of the 32-byte key. The key is written only in the descriptor, to --descriptor-out FILE (O_EXCL, 0600) or to stdout, never to a terminal or a regular file others can read: put it only inside a sealed notification. BLOB is created with O_NOFOLLOW: --force replaces a file, never the target of a symbolic link.
        """,
        jsonHelp: "report errors as one {\"error\": {\"code\", \"message\"}} object on stdout (the descriptor is JSON already)"
    )

    struct Options: CommandOptions {
        let input: String, out: String, url: String?, type: String?, descriptorOut: String?, force: Bool
        init(parsing a: Arguments) throws {
            guard let input = try Positionals(a, max: 1).first else { throw CLIError.usage("missing FILE", hint: "push-seal media FILE --out BLOB") }
            self.input = input
            typealias C = MediaCommand
            out = try a[C.out]
            (url, type, descriptorOut, force) = (a[C.url], a[C.type], a[C.descriptorOut], a[C.force])
        }
        func validate() throws {
            // The sealer's own rules (MediaSealer.seal checks them too): a bad flag is a usage error.
            if let url, !PushNotification.isValidMediaURL(url) {
                throw CLIError.usage("--url needs an absolute https:// or http:// URL, got \(quoted(url))", hint: "e.g. --url https://cdn.example.com/m/cat.jpg.sealed, or leave it out and fill in \"url\" before sealing")
            }
            if let type, !PushNotification.isValidMediaType(type) {
                throw CLIError.usage("--type needs a MIME type type/subtype of token characters, got \(quoted(type))", hint: "e.g. --type image/jpeg, or leave it out to take the type from the file's magic bytes")
            }
            if descriptorOut == nil {
                try Output.refuseUnsafeStandardOutput(for: "the media key", hint: "add --descriptor-out media.json (created with mode 0600), or pipe the descriptor on",
                                                      fileHint: "chmod 600 the file first, or use --descriptor-out FILE (created with mode 0600)")
            }
        }
    }

    func run(_ o: Options, _ context: CommandContext) throws -> ExitCode {
        let out = o.out
        let file = try InputReader.readAll(o.input, limitByteCount: MediaSealer.maxFileByteCount)
        let sealed = try mappingSenderErrors { try MediaSealer.seal(file, url: o.url ?? "", type: o.type) }
        let blob: FileDescriptor
        do {
            // Never through a link: --force replaces a file, not what a planted link points at.
            blob = try FileDescriptor.open(out, [.writeOnly, .create, .noFollow, o.force ? .truncate : .exclusive], mode: 0o644, exactMode: true)
        } catch let e as SystemError {
            switch e.code {
            case .symbolicLink: throw CLIError(code: "symbolicLink", "\(out) is a symbolic link; not following it", hint: "remove the link or choose another --out", exitCode: .cannotCreate)
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
        var w = JSONWriter(reservingCapacity: 256)
        // url, type, sha256 (lower-case hex), key (standard base64): PushSealWire's spelling.
        if case .object(let o) = sealed.media.jsonValue() { try w.write(o) }
        w.raw("\n")
        guard let descriptorOut = o.descriptorOut else {
            Output.stdout(bytes: w.bytes)
            return .success
        }
        do {
            try PrivateFile.createExclusive(descriptorOut, w.bytes)
        } catch let e as SystemError {
            switch e.code {
            case .alreadyExists, .symbolicLink:
                throw CLIError(code: "exists", "\(descriptorOut) already exists; not overwriting a descriptor (it holds a key)", hint: "choose a new --descriptor-out FILE", exitCode: .cannotCreate)
            case .permissionDenied: throw CLIError(code: "permissionDenied", "permission denied: \(descriptorOut)", exitCode: .noPermission)
            default:
                if e.operation == "create" { throw CLIError(code: "cannotCreate", "cannot create \(descriptorOut): \(errnoText(e.errno))", exitCode: .cannotCreate) }
                throw CLIError(code: "ioError", "cannot write \(descriptorOut)", exitCode: .ioError)  // the partial file is removed
            }
        }
        return .success
    }
}
