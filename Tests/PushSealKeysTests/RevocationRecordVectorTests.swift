import Foundation
import PushSealKeyRecords
import PushSealTestSupport
import Testing

/// Revocation records (FORMAT.md §V.12) against the language-neutral vectors the Python
/// reference wrote (`Tests/Interop/pushseal_ref.py vectors-revocation`), and the reference
/// itself run over every vector, so the two readers agree case by case.
@Suite("Revocation record vectors")
struct RevocationRecordVectorTests {
    struct File: Decodable {
        struct Case: Decodable {
            let name: String, record: String, expect: String
            let appId: String?, keyIds: [String]?, revokedAt: Int64?
        }
        let cases: [Case]
    }

    static func cases() throws -> [File.Case] {
        let data = try Data(contentsOf: repositoryRoot.appendingPathComponent("Tests/Vectors/revocation-records.json"))
        return try JSONDecoder().decode(File.self, from: data).cases
    }

    @Test("every vector parses to its values or fails with its code")
    func vectors() throws {
        let cases = try Self.cases()
        #expect(cases.count >= 20)
        for c in cases {
            do {
                let r = try RevocationRecord(json: Array(c.record.utf8))
                #expect(c.expect == "valid", "\(c.name) parsed but expects \(c.expect)")
                #expect(r.appID == c.appId && r.keyIDs == c.keyIds && r.revokedAt == c.revokedAt, "\(c.name)")
            } catch let e as KeysError {
                #expect(e.code.name == c.expect, "\(c.name): \(e.code.name) (\(e.reason)), expected \(c.expect)")
            }
        }
    }

    @Test("the Python reference reads each vector as the file says")
    func pythonReference() throws {
        let reference = repositoryRoot.appendingPathComponent("Tests/Interop/pushseal_ref.py")
        for c in try Self.cases() {
            guard let r = runPython(file: reference, ["revocation"], input: Data(c.record.utf8)) else {
                Issue.record("python3 with cryptography is missing")
                return
            }
            if c.expect == "valid" {
                #expect(r.status == 0, "\(c.name): \(r.errors)")
            } else {
                #expect(r.status == 65 && r.errors.contains(": \(c.expect):"), "\(c.name): \(r.errors)")
            }
        }
    }

    @Test("a record written by the library reads back the same")
    func roundTrip() throws {
        let record = RevocationRecord(appID: "com.example.app", keyIDs: ["7t2IPaCpRRWT3Ao4", "WMSaTIkB"], revokedAt: 1_796_000_000)
        #expect(try RevocationRecord(json: try record.encoded()) == record)
    }
}
