import Foundation
import PushSealFormat
import Testing
@testable import PushSealExtension

/// The shared test data: `$PUSHSEAL_SHARED`, else the `shared` folder beside the repository.
let sharedDirectory: URL? = {
    let fm = FileManager.default
    if let env = ProcessInfo.processInfo.environment["PUSHSEAL_SHARED"], !env.isEmpty {
        return fm.fileExists(atPath: env) ? URL(fileURLWithPath: env) : nil
    }
    let repo = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    let beside = repo.deletingLastPathComponent().appendingPathComponent("shared")
    return fm.fileExists(atPath: beside.path) ? beside : nil
}()

func sharedPayload(_ relativePath: String) throws -> JSONValue {
    let dir = try #require(sharedDirectory, "shared cases not found: set PUSHSEAL_SHARED to the shared folder")
    let bytes = try Data(contentsOf: dir.appendingPathComponent("cases").appendingPathComponent(relativePath))
    return try JSONReader.parse(Array(bytes))
}

/// A host whose extension marks that it ran; the not-invoked cases must never reach it.
private final class MarkerExtension: UNNotificationServiceExtension, @unchecked Sendable {
    override func didReceive(_ request: UNNotificationRequest, withContentHandler contentHandler: ContentHandler) {
        var c = request.content.mutableCopy()
        c.title = "EXTENSION RAN"
        contentHandler(c)
    }
}

@Suite(.enabled(if: sharedDirectory != nil, "shared cases not found: set PUSHSEAL_SHARED to the shared folder"))
struct SharedNotInvokedCasesTests {
    @Test(arguments: [("mutable-content-true", "true (boolean)"), ("mutable-content-string", "\"1\" (string)"),
                      ("mutable-content-zero", "0 (integer)")])
    func wrongFlagShowsAlertAsSent(_ name: String, _ named: String) throws {
        let payload = try sharedPayload("failures/\(name).payload.json")
        let r = ExtensionHost(budgetSeconds: 1) { _ in MarkerExtension() }.run(UNNotificationRequest(identifier: name, apnsPayload: payload))
        #expect(r.outcome == .notInvoked)
        #expect(r.reason.contains(named), "reason: \(r.reason)")
        #expect(r.content?.title == "New message")
        #expect(r.content?.body == "Open the app to read it")
    }

    @Test func backgroundPushShowsNothing() throws {
        let payload = try sharedPayload("failures/no-alert.payload.json")
        let r = ExtensionHost(budgetSeconds: 1) { _ in MarkerExtension() }.run(UNNotificationRequest(identifier: "bg", apnsPayload: payload))
        #expect(r.outcome == .notInvoked)
        #expect(r.content == nil)
        #expect(r.reason.contains("alert"))
    }
}
