import Foundation
import Testing

/// docs/modules.md draws the graph of `Package.swift`: the same nodes and the same edges.
struct ModulesDocTests {
    /// Targets the drawing leaves out on purpose (a test helper and an example; test targets
    /// and PushSealTestSupport are left out by kind).
    static let undrawn: Set<String> = ["keychain-stress", "registry-stress", "outbox-stress", "seal-server-example", "PushSealTestSupport"]

    /// Every target of Package.swift but the test targets: name → dependencies.
    static func packageGraph() throws -> [String: Set<String>] {
        let text = try String(contentsOf: KeysCLI.repo.appendingPathComponent("Package.swift"), encoding: .utf8)
        let pattern = try NSRegularExpression(pattern: #"\.(target|executableTarget|systemLibrary|testTarget)\(name:\s*"([^"]+)"(?:\s*,\s*dependencies:\s*\[([^\]]*)\])?"#)
        var graph: [String: Set<String>] = [:]
        for match in pattern.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
            func group(_ i: Int) -> String? { Range(match.range(at: i), in: text).map { String(text[$0]) } }
            guard group(1) != "testTarget", let name = group(2), !undrawn.contains(name) else { continue }
            let deps = (group(3) ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespacesAndNewlines).trimmingCharacters(in: CharacterSet(charactersIn: "\"")) }
            graph[name] = Set(deps.filter { !$0.isEmpty && !undrawn.contains($0) })
        }
        return graph
    }

    /// The mermaid block of docs/modules.md: node label → the labels it points to. A node is
    /// `id` or `id[label]`; an edge line is `a --> b & c`.
    static func drawnGraph() throws -> (graph: [String: Set<String>], dashed: [String]) {
        let text = try String(contentsOf: KeysCLI.repo.appendingPathComponent("docs/modules.md"), encoding: .utf8)
        let block = try #require(text.components(separatedBy: "```mermaid\n").dropFirst().first?.components(separatedBy: "```").first)
        let lines = block.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        var labels: [String: String] = [:]
        let node = try NSRegularExpression(pattern: #"^(\w+)\[([^\]]+)\]"#)
        func parse(_ token: String) -> String {
            let t = token.trimmingCharacters(in: .whitespaces)
            if let m = node.firstMatch(in: t, range: NSRange(t.startIndex..., in: t)),
               let id = Range(m.range(at: 1), in: t), let label = Range(m.range(at: 2), in: t) {
                labels[String(t[id])] = String(t[label])
                return String(t[id])
            }
            return t
        }
        var edges: [(String, String)] = []
        var nodes: Set<String> = []
        var dashed: [String] = []
        for line in lines where !line.isEmpty && !line.hasPrefix("graph") && !line.hasPrefix("subgraph") && line != "end" {
            if line.contains("-.->") { dashed.append(line); continue }
            let parts = line.components(separatedBy: "-->")
            let from = parse(parts[0])
            nodes.insert(from)
            if parts.count == 2 {
                for to in parts[1].split(separator: "&") {
                    let id = parse(String(to))
                    nodes.insert(id)
                    edges.append((from, id))
                }
            }
        }
        func label(_ id: String) -> String { labels[id] ?? id }
        var graph: [String: Set<String>] = [:]
        for id in nodes { graph[label(id), default: []] = graph[label(id)] ?? [] }
        for (a, b) in edges { graph[label(a), default: []].insert(label(b)) }
        return (graph, dashed)
    }

    @Test func theDrawingHasEveryTargetAndEveryEdgeOfPackageSwift() throws {
        let package = try Self.packageGraph()
        let (drawn, dashed) = try Self.drawnGraph()
        #expect(package["PushSealMediaFetch"] != nil && package["push-open"] != nil, "Package.swift did not parse")
        #expect(Set(drawn.keys) == Set(package.keys),
                "only drawn: \(Set(drawn.keys).subtracting(package.keys).sorted()); only in Package.swift: \(Set(package.keys).subtracting(drawn.keys).sorted())")
        for (name, deps) in package.sorted(by: { $0.key < $1.key }) {
            let shown = drawn[name] ?? []
            #expect(shown == deps, "\(name): drawn but not declared \(shown.subtracting(deps).sorted()), declared but not drawn \(deps.subtracting(shown).sorted())")
        }
        // Every edge is a build-time dependency: no run-time-only (dashed) edge is left.
        #expect(dashed.isEmpty, "\(dashed)")
    }
}
