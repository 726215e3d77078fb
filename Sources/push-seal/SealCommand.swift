import Foundation
import PushSealCLI
import PushSealWire
import PushSealSender
import PushSealSystem

/// `push-seal seal [options] [NOTIFICATION.json | -]`: seal one notification, print the payload.
/// `push-seal [options] …` without the word is the same command (``isAlias``), so
/// `push-seal seal batch` seals a file named `batch`.
struct SealCommand: OptionsCommand {
    let path: [String]
    /// The bare `push-seal [options] …` form: not listed twice in the command list.
    var isAlias: Bool { path.isEmpty }

    /// The command as `push-seal seal` (`alias: false`) or as the bare default form.
    init(alias: Bool = false) { path = alias ? [] : ["seal"] }

    static let recipient = KeysetOptions.recipientOption.withHelp("the recipient (one app installation) whose primary key seals the notification (required)")
    static let title = Option.text("--title", "TEXT", "notification title (overrides the file's; visible to other users of this machine in the process list: prefer the file or stdin)")
    static let subtitle = Option.text("--subtitle", "TEXT", "notification subtitle (overrides the file's; visible to other users, as --title)")
    static let body = Option.text("--body", "TEXT", "notification body (overrides the file's; visible to other users, as --title)")
    static let mediaURL = Option.text("--media-url", "URL", "attach the media at URL, not encrypted (overrides the file's media; needs --media-sha256; for encrypted media put the descriptor of 'push-seal media' in the file's \"media\")")
    static let mediaSHA256 = Option.text("--media-sha256", "HEX", "SHA-256 of the file at --media-url (64 hex digits, e.g. from sha256sum): the device drops media that does not match, so the CDN cannot swap it")
    static let id = Option.text("--id", "ID", "notification id, for the device's replay guard (overrides the file's; default: a random one, 16 bytes in base64url)")
    static let withHeaders = Option.flag("--with-headers", "print {\"headers\": {…}, \"payload\": {…}} instead of the payload alone")

    let options: [OptionSpec] = SealOptionSpecs.keys
        + OptionSpec.list(Self.recipient, Self.title, Self.subtitle, Self.body, Self.mediaURL, Self.mediaSHA256, Self.id, Self.withHeaders)
        + SealOptionSpecs.payload

    let help = HelpText(
        overview: "seal one notification for one recipient and print the APNs payload JSON (compact, at most 4096 bytes); 'push-seal batch' seals many, 'push-seal media' encrypts an image or other media file",
        usage: [
            "push-seal seal --app-id APP --recipient R --keychain DIR [options] [NOTIFICATION.json | -]",
            "push-seal --app-id APP --recipient R --keychain DIR [options] [NOTIFICATION.json | -]",
            "push-seal batch --app-id APP --keychain DIR [options] [LINES.jsonl | -]",
            "push-seal media FILE --out BLOB [--url URL] [--type MIME] [--descriptor-out FILE] [--force]",
            "push-seal retract --app-id APP --recipient R --keychain DIR --id ID [--id ID…]",
        ],
        examples: [
            "push-seal seal --app-id com.example.app --recipient alice --keychain server-kc --with-headers note.json",
            "printf '%s' '{\"title\":\"Ana\",\"body\":\"Dinner at 8?\"}' | push-seal seal --app-id com.example.app --recipient alice --keychain server-kc -",
            "cat note.json | push-seal --app-id com.example.app --recipient alice --keychain server-kc --fit -",
            "push-seal seal --app-id com.example.app --recipient alice --keychain server-kc batch   # seals the file named batch",
        ],
        exitCodes: SealExit.sealHelpLines,
        notes: """
        SEAL: 'push-seal seal' is the command; 'push-seal' without it is the same command (the documented alias, kept for scripts). Give a file named batch or media as 'push-seal seal batch' (or ./batch).

        ARGV: --title, --subtitle, --body and every other argument are visible to other users of this machine (ps, /proc/PID/cmdline): put message text in NOTIFICATION.json or on standard input (-), not in options.

        NOTIFICATION.json: {"title", "subtitle", "body", "media": {"url", "type", "sha256", "key"}, "localizations": {"fr": {"title", "body"}}, "data": {…}, "iat", "exp" | "ttl", "id"} (times in seconds; exp and iat since 1970 UTC, 0 to 253402300799 = 9999-12-31T23:59:59Z, exp not before iat; iat defaults to now and a ttl must keep exp within that bound; without exp or ttl, --ttl applies: 30 days unless given). A notification without an id gets a random one (16 bytes, base64url), so the device's replay guard recognises a repeat. A ttl of 0 means what apns-expiration 0 means (deliver now or never): the header is 0 and the sealed exp is iat + 60 s. Without a file, --title or --body alone make the notification.

        The payload always carries aps.alert (the fallback title and body, in clear) and "mutable-content":1 so iOS runs the Notification Service Extension. Everything else is sealed into encrypted_data: for a recipient with a v2 registration (push-keys register) with HPKE to the device's public key (enc_alg HPKE-AUTH-X25519-A256GCM when the app has a sender key, push-keys sender generate; else HPKE-BASE-X25519-A256GCM), for one with a keyset with AES-256-GCM (A256GCM); --format v1|v2 seals only that version. Lengths are UTF-8 bytes.
        """,
        jsonHelp: "report errors as one {\"error\": {\"code\", \"message\"}} object on stdout (the payload is JSON already)"
    )

    struct Options: CommandOptions {
        /// NOTIFICATION.json (`-`: standard input), or `nil` when the text options make it.
        let file: String?
        let recipient: String
        let seal: SealOptionGroup
        let title: String?, subtitle: String?, body: String?, id: String?, mediaURL: String?
        /// `--media-sha256 HEX`: the digest of the file at `--media-url` (security review F8).
        let mediaSHA256: String?
        let withHeaders: Bool
        init(parsing a: Arguments) throws {
            file = try Positionals(a, max: 1).first
            typealias C = SealCommand
            try requireInUsageOrder(a, [SealOptionSpecs.appID, C.recipient, SealOptionSpecs.keychain], helpCommand: "push-seal --help")
            recipient = try a.required(C.recipient)
            seal = try SealOptionGroup(parsing: a)
            (title, subtitle, body, id, mediaURL) = (a[C.title], a[C.subtitle], a[C.body], a[C.id], a[C.mediaURL])
            mediaSHA256 = a[C.mediaSHA256]
            withHeaders = a[C.withHeaders]
        }
        func validate() throws {
            try checkKeysetNames(recipient: recipient)
            if file == nil, [title, subtitle, body, id, mediaURL].allSatisfy({ $0 == nil }) {
                throw CLIError.usage("no notification", hint: "give NOTIFICATION.json, - for standard input, or --title and --body")
            }
            if mediaSHA256 != nil, mediaURL == nil {
                throw CLIError.usage("--media-sha256 needs --media-url", hint: "give the URL of the file the digest is of")
            }
            if mediaURL != nil {
                // Security review F8: plain media without a digest could be swapped by the CDN.
                guard let hex = mediaSHA256 else {
                    throw CLIError.usage("--media-url needs --media-sha256 (the device checks it; without it the CDN can swap the media)",
                                         hint: "sha256sum FILE gives the digest; or seal an encrypted copy: push-seal media FILE --out BLOB --url URL")
                }
                guard let digest = Hex.decode(hex), digest.count == 32 else {
                    throw CLIError.usage("--media-sha256 needs 64 hexadecimal digits, got \(hex.utf8.count) characters")
                }
            }
            try seal.validate()
        }
    }

    func run(_ o: Options, _ context: CommandContext) throws -> ExitCode {
        let recipient = o.recipient
        var request: SealRequest
        if let path = o.file {
            let bytes = try InputReader.readAll(path, limitByteCount: 1 << 20)
            request = try mappingSenderErrors { try SealRequest(jsonBytes: bytes) }
        } else {
            request = SealRequest(PushNotification())
        }
        if let t = o.title { request.notification.title = t }
        if let t = o.subtitle { request.notification.subtitle = t }
        if let t = o.body { request.notification.body = t }
        if let t = o.id { request.notification.id = t }
        if let u = o.mediaURL, let digest = o.mediaSHA256.flatMap(Hex.decode) {  // validate() checked both
            request.notification.media = MediaDescriptor(url: u, sha256: digest)
        }

        let sealer = try o.seal.sealer()
        // seal(_:for:) checks the notification by the JSON form's rules, so --media-url and
        // the other flags are refused exactly as the same members in NOTIFICATION.json.
        let sealed = try mappingSenderErrors { try sealer.seal(request, for: recipient) }
        for change in sealed.changes { context.warn("fit: \(change)") }
        Output.stdout(bytes: sealedOutput(sealed, withHeaders: o.withHeaders))
        return .success
    }
}

