import Foundation
import PushSealTestSupport
import Testing

/// Pointer code stays where it belongs (issue 27, step 4): pointer types (`UnsafePointer`,
/// `UnsafeMutableRawBufferPointer`, …) appear only in the modules and files made for them — the
/// system layer, the crypto wrapper, the JSON toolkit, the base64 codec and one connection file
/// /// per C library (nghttp2/TLS, libpq, libmicrohttpd, libcurl) — and never in the sender or
/// push-send. Comments are not read (a doc comment may name an API). The list of files still on
/// the way out emptied in the third release and is gone: a new pointer type elsewhere fails.
struct UnsafeContainmentTests {
    /// Where pointer types may appear: whole modules (`Sources/<name>/`) or single files.
    static let allowedModules: Set<String> = ["PushSealSystem", "PushSealCrypto", "PushSealJSON"]
    static let allowedFiles: Set<String> = [
        "Sources/PushSealWire/WireBase64.swift",            // the base64 codec (SIMD entry points)
        "Sources/PushSealAPNs/APNsConnection.swift",        // nghttp2 and TLS callbacks
        "Sources/PushSealAPNs/APNsHeaderBlock.swift",       // nghttp2 header vectors (~Copyable, deinit)
        "Sources/PushSealRegistry/PGConnection.swift",      // libpq: parameters and results
        "Sources/PushSealHTTP/HTTPServer.swift",            // libmicrohttpd: daemon and request callbacks
        "Sources/PushSealMediaFetch/CurlMediaFetcher.swift", // libcurl: transfer callbacks
    ]
    /// Modules that must hold no pointer code at all (no type and no `withUnsafe…` call either).
    static let pointerFreeModules: Set<String> = ["PushSealSender", "push-send"]

    /// A pointer type named in code.
    static let pointerType = try! NSRegularExpression(pattern: #"\bUnsafe(Mutable)?(Raw)?(Buffer)?Pointer\b"#)
    /// Pointer code of any kind: a pointer type, a `withUnsafe…` scope, an uninitialised array.
    static let pointerCode = try! NSRegularExpression(
        pattern: #"\bUnsafe(Mutable)?(Raw)?(Buffer)?Pointer\b|\bwithUnsafe\w*|unsafeUninitializedCapacity|\.pointee\b|assumingMemoryBound|bindMemory"#)

    /// `text` without comments: each line cut at its first `//` (a doc comment may name a
    /// pointer type; a string holding `//` only loses its end, which never hides a type here
    /// because no source line puts one after such a string).
    static func code(_ text: String) -> String {
        text.split(separator: "\n", omittingEmptySubsequences: false)
            .map { line in line.range(of: "//").map { String(line[..<$0.lowerBound]) } ?? String(line) }
            .joined(separator: "\n")
    }

    /// The number of matches of `pattern` in the code of `text`.
    static func count(_ pattern: NSRegularExpression, in text: String) -> Int {
        let c = code(text)
        return pattern.numberOfMatches(in: c, range: NSRange(c.startIndex..., in: c))
    }

    /// Every Swift file under `Sources/`, as its repository path.
    static func sourceFiles() -> [String] {
        let root = KeysCLI.repo.appendingPathComponent("Sources")
        guard let walker = FileManager.default.enumerator(at: root, includingPropertiesForKeys: nil) else { return [] }
        return walker.compactMap { $0 as? URL }.filter { $0.pathExtension == "swift" }
            .map { "Sources/" + $0.path.dropFirst(root.path.count + 1) }.sorted()
    }

    /// The module of a repository path `Sources/<module>/…`.
    static func module(of path: String) -> String {
        path.split(separator: "/").dropFirst().first.map(String.init) ?? ""
    }

    /// What breaks the rules, for the files and their texts given.
    static func problems(_ files: [(path: String, text: String)]) -> [String] {
        var problems: [String] = []
        for (path, text) in files {
            let module = module(of: path)
            let types = count(pointerType, in: text)
            let anyCode = count(pointerCode, in: text)
            let allowed = allowedModules.contains(module) || allowedFiles.contains(path)
            if pointerFreeModules.contains(module), anyCode > 0 {
                problems.append("\(path): \(anyCode) pointer uses in \(module), which must hold none: use the wire module's closure-scoped entries, spans or arrays")
            } else if !allowed, types > 0 {
                problems.append("\(path): \(types) pointer types outside PushSealSystem, PushSealCrypto, PushSealJSON, the base64 codec and the C libraries' connection files")
            }
        }
        return problems
    }

    @Test func pointerTypesOnlyInTheAllowedPlaces() throws {
        let paths = Self.sourceFiles()
        #expect(paths.count > 300, "Sources/ did not list")
        let files = try paths.map { ($0, try String(contentsOf: KeysCLI.repo.appendingPathComponent($0), encoding: .utf8)) }
        let listed = Set(paths)
        let missing = Self.allowedFiles.filter { !listed.contains($0) }.sorted()
        #expect(missing.isEmpty, "allowed files that do not exist: \(missing)")
        let problems = Self.problems(files)
        #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")
    }

    @Test func theRuleFindsPointerCodeOutsideTheAllowedPlaces() {
        let typed = "let b: UnsafeRawBufferPointer = x // UnsafePointer in a comment"
        let scoped = "try bytes.withUnsafeBytes { try seal($0) }"
        let commented = "/// Takes an ``UnsafeMutablePointer`` (doc comment only)\nlet a = 1"
        #expect(Self.problems([("Sources/PushSealCrypto/X.swift", typed)]).isEmpty)
        #expect(Self.problems([("Sources/PushSealWire/WireBase64.swift", typed)]).isEmpty)
        #expect(Self.problems([("Sources/PushSealWire/X.swift", typed)]).count == 1)
        #expect(Self.problems([("Sources/PushSealWire/X.swift", scoped)]).isEmpty)
        #expect(Self.problems([("Sources/PushSealSender/X.swift", scoped)]).count == 1)
        #expect(Self.problems([("Sources/push-send/X.swift", commented)]).isEmpty)
        #expect(Self.problems([("Sources/PushSealRegistry/PGConnection.swift", typed)]).isEmpty, "a C library's connection file")
        #expect(Self.problems([("Sources/PushSealRegistry/PostgresOutbox.swift", typed)]).count == 1, "the same module's other files")
        #expect(Self.problems([("Sources/PushSealWire/EnvelopeAlgorithm.swift", typed)]).count == 1)
    }
}
