import PushSealJSON
import PushSealCLI
import PushSealWire
import PushSealSender

/// `push-seal retract --recipient R --id ID…`: seal a retract (FORMAT.md §5.1) that removes the
/// recipient's delivered notifications with these ids, and print the background payload.
struct RetractCommand: OptionsCommand {
    let path = ["retract"]

    static let recipient = KeysetOptions.recipientOption.withHelp("the recipient (one app installation) whose delivered notifications to remove (required)")
    static let id = Option.repeated("--id", "ID", "the id of a delivered notification to remove (1 to \(MessageKind.maxRetractIDs), repeat the option; the id the notification was sealed with)")
    static let retractID = Option.text("--retract-id", "ID", "the retract's own id, for the device's replay guard (default: a random one)")
    static let withHeaders = Option.flag("--with-headers", "print {\"headers\": {…}, \"payload\": {…}} instead of the payload alone (apns-push-type background, apns-priority 5)")

    let options: [OptionSpec] = SealOptionSpecs.keys + OptionSpec.list(Self.recipient, Self.id, Self.retractID, Self.withHeaders)
        + SealOptionSpecs.retractPayload

    let help = HelpText(
        overview: "seal a retract for one recipient: a background push that makes the app remove the delivered notifications with these ids (FORMAT.md §5.1), and print the APNs payload JSON",
        usage: [
            "push-seal retract --app-id APP --recipient R --keychain DIR --id ID [--id ID…] [options]",
        ],
        examples: [
            "push-seal retract --app-id com.example.app --recipient alice --keychain server-kc --id m-1 --id m-2 --with-headers",
        ],
        exitCodes: SealExit.sealHelpLines,
        notes: """
        RETRACT: the payload is a background push: aps is {"content-available":1} (no alert, no mutable-content), sent with apns-push-type background and apns-priority 5, so iOS hands it to the app (application(_:didReceiveRemoteNotification:fetchCompletionHandler:)), never to the extension, and nothing is shown. The ids are sealed like any notification (v1 or v2, as 'push-seal seal' chooses), so APNs learns only "a background push". The app removes the delivered notifications whose id is listed; ids it does not find are already gone.

        LIMITS: iOS may delay, coalesce or drop background pushes (Low Power Mode, a force-quit app, its budget): the app should also fetch the ids retracted since its last sync at its next launch. A batch line retracts with {"recipient": R, "retract": ["ID", …]}.
        """,
        jsonHelp: "report errors as one {\"error\": {\"code\", \"message\"}} object on stdout (the payload is JSON already)"
    )

    struct Options: CommandOptions {
        let recipient: String
        let ids: [String]
        let retractID: String?
        let seal: SealOptionGroup
        let withHeaders: Bool
        init(parsing a: Arguments) throws {
            _ = try Positionals(a, max: 0)
            typealias C = RetractCommand
            try requireInUsageOrder(a, [SealOptionSpecs.appID, C.recipient, SealOptionSpecs.keychain], helpCommand: "push-seal retract --help")
            recipient = try a.required(C.recipient)
            ids = a[C.id]
            retractID = a[C.retractID]
            seal = try SealOptionGroup(parsing: a)
            withHeaders = a[C.withHeaders]
        }
        func validate() throws {
            try checkKeysetNames(recipient: recipient)
            guard (1...MessageKind.maxRetractIDs).contains(ids.count) else {
                throw CLIError.usage("a retract names 1 to \(MessageKind.maxRetractIDs) ids, got \(ids.count)", hint: "give --id ID once per notification to remove")
            }
            try seal.validate()
        }
    }

    func run(_ o: Options, _ context: CommandContext) throws -> ExitCode {
        let sealer = try o.seal.sealer()
        let request = SealRequest(PushNotification.retract(ids: o.ids, id: o.retractID))
        let sealed = try mappingSenderErrors { try sealer.seal(request, for: o.recipient) }
        Output.stdout(bytes: sealedOutput(sealed, withHeaders: o.withHeaders))
        return .success
    }
}

/// The single seal's output: the payload and a newline, or with `withHeaders`
/// `{"headers": {…}, "payload": {…}}` and a newline.
func sealedOutput(_ sealed: SealedNotification, withHeaders: Bool) -> [UInt8] {
    guard withHeaders else { return sealed.payload + [0x0A] }
    var w = JSONWriter(reservingCapacity: sealed.payload.count + 256)
    w.beginObject()
    w.key(static: "headers")
    sealed.headers.write(to: &w)
    w.key(static: "payload")
    w.value(json: sealed.payload)
    w.endObject()
    w.raw("\n")
    return w.bytes
}
