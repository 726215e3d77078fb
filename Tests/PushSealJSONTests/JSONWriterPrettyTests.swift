import PushSealJSON
import PushSealTestSupport
import Testing

@Suite struct JSONWriterPrettyTests {
    @Test func prettySortedKeysLaysOutFilesPeopleRead() throws {
        let value: JSONValue = .object(["version": .integer(1), "classKeys": .object(["metadata": .string("a/b"), "afterFirstUnlock": .string("x\"y")]),
                                        "list": .array([.integer(1), .bool(true)]), "empty": .object([:]), "none": .array([])])
        let text = String(decoding: try JSONWriter.serialize(value, style: .prettySortedKeys), as: UTF8.self)
        #expect(text == """
        {
          "classKeys" : {
            "afterFirstUnlock" : "x\\"y",
            "metadata" : "a/b"
          },
          "empty" : {},
          "list" : [
            1,
            true
          ],
          "none" : [],
          "version" : 1
        }
        """)
        #expect(try JSONReader.parse(text) == sortedKeys(value))
    }

    @Test func prettyRandomTreesReadBackEqual() throws {
        var rng = SeededGenerator(stream: 7)
        for _ in 0..<200 {
            let value = RandomJSON.value(&rng)
            let pretty = try JSONWriter.serialize(value, style: .prettySortedKeys)
            #expect(try JSONReader.parse(pretty) == sortedKeys(value), seedNote())
        }
    }
}

/// `value` with every object's members in sorted key order (what `.prettySortedKeys` writes).
func sortedKeys(_ value: JSONValue) -> JSONValue {
    switch value {
    case .object(let o): return .object(JSONObject(o.members.sorted { $0.key < $1.key }.map { ($0.key, sortedKeys($0.value)) }))
    case .array(let a): return .array(a.map(sortedKeys))
    default: return value
    }
}
