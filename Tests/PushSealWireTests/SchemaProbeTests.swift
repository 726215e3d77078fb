import Foundation
import PushSealTestSupport
import Testing
@testable import PushSealWire

/// The plaintext schema is one exhaustive table (issue 27 step 3): `scripts/schema-probe.sh`
/// type-checks PushSealWire with the test-only member `NotificationMember.schemaProbe`
/// (`-D PUSHSEAL_SCHEMA_PROBE`) and passes only when every codec's `schema-switch:` fails to
/// compile (and the module compiles without the probe).
@Suite struct SchemaProbeTests {
    @Test func aMemberNoCodecHandlesFailsToCompileInEveryCodec() throws {
        let script = WireTestSupport.repoRoot.appendingPathComponent("scripts/schema-probe.sh")
        let result = try runTool(URL(fileURLWithPath: "/bin/bash"), [script.path], cwd: WireTestSupport.repoRoot)
        let out = String(decoding: result.stdoutBytes, as: UTF8.self)
        let err = String(decoding: result.stderrBytes, as: UTF8.self)
        try #require(result.status != 66, "no debug build to type-check against: \(err)")
        #expect(result.status == 0, "\(out)\n\(err)")
        for codec in ["receiving decoder", "sending decoder", "scanner", "encoder", "validation", "equality", "size estimate"] {
            #expect(out.contains("ok: \(codec) ("), "\(codec) is not held by the probe:\n\(out)")
        }
    }

    @Test func membersAreFormatSectionFivesTable() {
        #expect(NotificationMember.allCases.map(\.name) == ["title", "subtitle", "body", "media", "localizations", "data", "aps",
                                                           "iat", "exp", "id", "kind", "ids"])
    }
}
