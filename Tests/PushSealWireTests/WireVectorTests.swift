import PushSealSystem
import PushSealJSON
import Foundation
import Testing
@testable import PushSealWire
import PushSealCrypto

/// One file of Tests/Vectors: `name: value` header lines, a blank line, the payload JSON.
struct WireVector: CustomStringConvertible, Sendable {
    let name: String
    let headers: [String: String]
    let payload: [UInt8]

    var description: String { name }

    static let directory = WireTestSupport.repoRoot.appendingPathComponent("Tests/Vectors")

    static func all() -> [WireVector] {
        let files = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        return files.filter { $0.hasSuffix(".vector") }.sorted().compactMap { file in
            guard let bytes = try? WireTestSupport.read(directory.appendingPathComponent(file)) else { return nil }
            return parse(name: file, bytes)
        }
    }

    static func parse(name: String, _ bytes: [UInt8]) -> WireVector? {
        // Split at the first empty line ("\n\n").
        var split: Int?
        for i in 0..<(bytes.count - 1) where bytes[i] == 0x0A && bytes[i + 1] == 0x0A { split = i; break }
        guard let split else { return nil }
        var headers: [String: String] = [:]
        for line in String(decoding: bytes[..<split], as: UTF8.self).split(separator: "\n") {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[String(line[..<colon])] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return WireVector(name: name, headers: headers, payload: Array(bytes[(split + 2)...]))
    }

    /// What a receiver holding `key` (v2: `device-key`) under `key-id` for app `app-id` gets,
    /// reading with `registry`: `open` or `error <code>`. A payload naming a key id the
    /// receiver does not hold is `error unknownKeyID` (FORMAT.md §8).
    func run(keyHeader: String = "key", registry: EnvelopeRegistry = .standard) throws -> (outcome: String, plaintext: [UInt8]?) {
        guard let keyHex = headers[keyHeader], let keyBytes = WireTestSupport.hex(keyHex), let keyID = headers["key-id"],
              let appID = headers["app-id"] else {
            return ("malformed vector header", nil)
        }
        let key = SecretBytes(copying: keyBytes)
        do {
            let sealed = try SealedPayload(payload: try JSONReader.parse(payload), registry: registry)
            guard sealed.keyID == keyID else { return ("error unknownKeyID", nil) }
            let raw = try sealed.openBytes(with: key, appID: appID)
            _ = try PushNotification(jsonBytes: raw)
            return ("open", raw)
        } catch let e as FormatError {
            return ("error \(e.code.name)", nil)
        }
    }
}

@Suite("Wire format v1: Tests/Vectors")
struct WireVectorTests {
    @Test func vectorsArePresent() {
        let all = WireVector.all()
        #expect(all.count >= 40, "Tests/Vectors should hold the generated vectors (python3 Tests/Interop/pushseal_ref.py vectors --out Tests/Vectors)")
        #expect(all.contains { $0.headers["expect"] == "open" })
        #expect(all.contains { $0.headers["expect"]?.hasPrefix("error ") == true })
    }

    @Test(arguments: WireVector.all())
    func vectorGivesItsExpectation(_ v: WireVector) throws {
        let result = try v.run()
        #expect(result.outcome == v.headers["expect"], "\(v.name): \(v.headers["comment"] ?? "")")
        if result.outcome == "open", let hex = v.headers["plaintext-hex"] {
            #expect(result.plaintext == WireTestSupport.hex(hex), "\(v.name): opened bytes differ from plaintext-hex")
        }
    }
}

@Suite("Wire format 1.1: the message kind round-trips with the Python reference")
struct KindVectorTests {
    /// Tests/Vectors/ok-retract.vector, written by pushseal_ref.py: it opens here, reads as a
    /// retract, and the Swift encoder writes exactly the plaintext bytes Python sealed.
    @Test func theRetractVectorOpensAndReEncodesToPythonsBytes() throws {
        let v = try #require(WireVector.all().first { $0.name == "ok-retract.vector" }, "run pushseal_ref.py vectors")
        let result = try v.run()
        #expect(result.outcome == "open")
        let raw = try #require(result.plaintext)
        let n = try PushNotification(jsonBytes: raw)
        #expect(n.kind == .retract && n.ids == ["m-1", "r-1"] && n.id == "x-1" && n.title == nil)
        #expect(try n.encoded(padding: true) == raw)
        // The display default is not written: the same plaintext bytes as before kinds.
        let display = try #require(WireVector.all().first { $0.name == "ok-kind-display.vector" })
        let shown = try PushNotification(jsonBytes: try #require(try display.run().plaintext))
        #expect(shown.kind == .display && shown.title == "Lunch?")
        #expect(try String(decoding: shown.encoded(padding: false), as: UTF8.self) == #"{"title":"Lunch?"}"#)
    }
}
