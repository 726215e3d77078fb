import Foundation
import PushSealTestSupport
import Testing

/// The module graph of `Package.swift` is exact: every declared dependency of a Swift target is
/// imported by one of its files and every package target a file imports is declared; no library
/// module grows past 4,000 lines; and push-open, which never seals, links no server store.
struct ModuleGraphTests {
    /// A target of Package.swift: its kind, name, declared dependencies and source directory.
    struct Target {
        var kind: String
        var name: String
        var dependencies: [String]
        var directory: URL
    }

    /// The most lines a library module's Swift sources may have (issue 27: the keys module
    /// split at 5.8k lines; past this a module mixes concerns).
    static let maxLibraryLines = 4_000

    /// Every target of Package.swift (`path:` honoured; else `Sources/<name>`, `Tests/<name>`).
    static func targets() throws -> [Target] {
        let text = try String(contentsOf: KeysCLI.repo.appendingPathComponent("Package.swift"), encoding: .utf8)
        let pattern = try NSRegularExpression(
            pattern: #"\.(target|executableTarget|systemLibrary|testTarget)\(name:\s*"([^"]+)"(?:\s*,\s*dependencies:\s*\[([^\]]*)\])?([^\n]*(?:\n\s+path:[^\n]*)?)"#)
        let path = try NSRegularExpression(pattern: #"path:\s*"([^"]+)""#)
        var out: [Target] = []
        for match in pattern.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
            func group(_ i: Int) -> String? { Range(match.range(at: i), in: text).map { String(text[$0]) } }
            guard let kind = group(1), let name = group(2) else { continue }
            let deps = (group(3) ?? "").split(separator: ",")
                .map { $0.trimmingCharacters(in: .whitespacesAndNewlines).trimmingCharacters(in: CharacterSet(charactersIn: "\"")) }
                .filter { !$0.isEmpty }
            let rest = group(4) ?? ""
            var directory = KeysCLI.repo.appendingPathComponent(kind == "testTarget" ? "Tests/\(name)" : "Sources/\(name)")
            if let m = path.firstMatch(in: rest, range: NSRange(rest.startIndex..., in: rest)), let r = Range(m.range(at: 1), in: rest) {
                directory = KeysCLI.repo.appendingPathComponent(String(rest[r]))
            }
            out.append(Target(kind: kind, name: name, dependencies: deps, directory: directory))
        }
        return out
    }

    /// The Swift files under `directory` (symbolic links to files followed, as the build does).
    static func swiftFiles(in directory: URL) -> [URL] {
        guard let walker = FileManager.default.enumerator(at: directory, includingPropertiesForKeys: nil) else { return [] }
        return walker.compactMap { $0 as? URL }.filter { $0.pathExtension == "swift" }.sorted { $0.path < $1.path }
    }

    /// The modules a file imports: `import M`, `public import M`, `@testable import M`,
    /// `import enum M.Name`, `@_exported public import struct M.Name`, indented `#if` branches too.
    static func imports(of file: URL) throws -> Set<String> {
        let text = try String(contentsOf: file, encoding: .utf8)
        let line = try NSRegularExpression(
            pattern: #"^\s*(?:@\w+\s+)*(?:(?:public|package|internal|private|fileprivate)\s+)?import\s+(?:(?:struct|enum|class|protocol|func|var|let|typealias)\s+)?(\w+)"#,
            options: .anchorsMatchLines)
        var out = Set<String>()
        for m in line.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
            if let r = Range(m.range(at: 1), in: text) { out.insert(String(text[r])) }
        }
        return out
    }

    /// What is wrong with the edges of `targets`: a declared dependency no file imports, an
    /// imported package target (one of `names`) not declared. C targets (no Swift files:
    /// CPushSealSIMD, CCurlLazy, CPushSealTLS) reach theirs by `#include` and are skipped.
    static func edgeProblems(_ targets: [Target], names: Set<String>) throws -> (problems: [String], checked: Int) {
        var problems: [String] = []
        var checked = 0
        for target in targets where target.kind != "systemLibrary" {
            let files = Self.swiftFiles(in: target.directory)
            guard !files.isEmpty else { continue }
            checked += 1
            var imported = Set<String>()
            for file in files { imported.formUnion(try Self.imports(of: file)) }
            // An executable target is imported under its module name: `push-seal` as `push_seal`.
            let unused = target.dependencies.filter { !imported.contains($0.replacingOccurrences(of: "-", with: "_")) }
            let undeclared = imported.intersection(names).subtracting(target.dependencies).subtracting([target.name])
            if !unused.isEmpty {
                problems.append("\(target.name) declares \(unused) in Package.swift but none of its files imports it: remove the edge (and from docs/modules.md)")
            }
            if !undeclared.isEmpty {
                problems.append("\(target.name) imports \(undeclared.sorted()) without declaring it in Package.swift")
            }
        }
        return (problems, checked)
    }

    @Test func everyDeclaredDependencyIsImportedAndEveryImportDeclared() throws {
        let targets = try Self.targets()
        let names = Set(targets.map(\.name))
        #expect(names.contains("PushSealDeviceKeys") && names.contains("push-open"), "Package.swift did not parse")
        let (problems, checked) = try Self.edgeProblems(targets, names: names)
        #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")
        #expect(checked > 20)
    }

    /// The check finds an edge no file imports and an import no edge declares (a scratch target).
    @Test func anUnusedEdgeAndAnUndeclaredImportAreFound() throws {
        let dir = try TemporaryDirectory("module-graph")
        try "import enum PushSealCLI.PushSealVersion\n  @testable import PushSealWire\n// import PushSealJSON\n"
            .write(to: dir.appending("A.swift"), atomically: true, encoding: .utf8)
        #expect(try Self.imports(of: dir.appending("A.swift")) == ["PushSealCLI", "PushSealWire"])
        let names: Set<String> = ["PushSealCLI", "PushSealWire", "PushSealJSON", "scratch"]
        let exact = Target(kind: "target", name: "scratch", dependencies: ["PushSealCLI", "PushSealWire"], directory: dir.url)
        #expect(try Self.edgeProblems([exact], names: names).problems.isEmpty)
        let unused = Target(kind: "target", name: "scratch", dependencies: ["PushSealCLI", "PushSealWire", "PushSealJSON"], directory: dir.url)
        #expect(try Self.edgeProblems([unused], names: names).problems == [
            "scratch declares [\"PushSealJSON\"] in Package.swift but none of its files imports it: remove the edge (and from docs/modules.md)"])
        let undeclared = Target(kind: "target", name: "scratch", dependencies: ["PushSealCLI"], directory: dir.url)
        #expect(try Self.edgeProblems([undeclared], names: names).problems == ["scratch imports [\"PushSealWire\"] without declaring it in Package.swift"])
    }

    @Test func noLibraryModuleIsOver4000Lines() throws {
        let text = try String(contentsOf: KeysCLI.repo.appendingPathComponent("Package.swift"), encoding: .utf8)
        let products = try NSRegularExpression(pattern: #"\.library\(name:\s*"([^"]+)""#)
        let libraries = products.matches(in: text, range: NSRange(text.startIndex..., in: text)).compactMap { m in
            Range(m.range(at: 1), in: text).map { String(text[$0]) }
        }
        #expect(libraries.contains("PushSealServerKeys"))
        for library in libraries {
            var lines = 0
            for file in Self.swiftFiles(in: KeysCLI.repo.appendingPathComponent("Sources/\(library)")) {
                lines += try String(contentsOf: file, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false).count
            }
            #expect(lines > 0, "\(library) has no Swift sources under Sources/\(library)")
            #expect(lines <= Self.maxLibraryLines, "\(library) has \(lines) lines, over \(Self.maxLibraryLines): split it along a seam (docs/modules.md)")
        }
    }

    /// push-open opens notifications on the device side: its binary holds the device keys and
    /// none of the server's stores (the file KeyStore, ServerKeyring, PostgresKeyStore, the
    /// sealing providers). Swift symbols carry their module's name, so `nm` shows what was linked.
    @Test func pushOpenLinksNoServerStore() throws {
        let binary = try #require(builtTool("push-open"), "push-open is not built")
        let nm = try runTool(URL(fileURLWithPath: "/usr/bin/nm"), [binary.path])
        try #require(nm.status == 0, "nm failed: \(nm.stderr.prefix(300))")
        let symbols = nm.stdout.split(separator: "\n")
        // The mangled module names (length-prefixed, as in `$s18PushSealDeviceKeys…`).
        func count(_ module: String) -> Int { symbols.filter { $0.contains("\(module.utf8.count)\(module)") }.count }
        #expect(count("PushSealDeviceKeys") > 0, "push-open holds no PushSealDeviceKeys symbol: the check reads the wrong binary")
        for server in ["PushSealServerKeys", "PushSealServerKeyProviders", "PushSealRegistry"] {
            #expect(count(server) == 0, "push-open links \(server) (\(count(server)) symbols)")
        }
        #expect(!symbols.contains { $0.contains("PQconnectdb") }, "push-open links libpq")
    }
}
