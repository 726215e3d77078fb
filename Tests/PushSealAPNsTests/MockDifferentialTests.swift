import Foundation
import Testing
import PushSealTestSupport
@testable import PushSealAPNs

/// The two mock APNs kept in step: the same requests to the Node mock (the reference, with the
/// fault scripts) and the native mock (the benchmark's), the same answers and record lines.
@Suite("Mock APNs: the native mock answers as the Node mock", .serialized,
       .enabled(if: MockAPNs.nativeAvailable, "the native mock APNs could not be built (scripts/build-mock-apns.sh; make test builds it first)"))
struct MockDifferentialTests {
    /// One request through APNsClient: what to send, and the answer both mocks must give.
    struct ClientCase {
        let notification: APNsNotification
        let status: Int
        let reason: String?
    }

    static let unregisteredToken = token(901), expiredToken = token(902), badToken = token(903)
    static var config: [String: Any] { [
        "unregistered": [unregisteredToken: 1_700_000_000_123], "expiredTokens": [expiredToken: 1_700_000_000_456],
        "badTokens": [badToken], "topics": [MockAPNs.topic, "com.example.second"],
    ] }

    static func clientCases() -> [ClientCase] {
        let hi = Array("{\"aps\":{\"alert\":\"hi\"}}".utf8)
        func n(_ t: String, _ payload: [UInt8] = hi, pushType: APNsPushType = .alert, topic: String = MockAPNs.topic, priority: Int? = 10,
               expiration: Int64? = 0, collapseID: String? = nil, apnsID: String? = nil) -> APNsNotification {
            APNsNotification(deviceToken: t, payload: payload, pushType: pushType, topic: topic, priority: priority, expiration: expiration,
                             collapseID: collapseID, apnsID: apnsID)
        }
        return [
            ClientCase(notification: n(token(1)), status: 200, reason: nil),
            ClientCase(notification: n(token(2), priority: nil, expiration: nil), status: 200, reason: nil),
            ClientCase(notification: n(token(3), collapseID: "c-3", apnsID: "3F2504E0-4F89-41D3-9A0C-0305E82C3301"), status: 200, reason: nil),
            ClientCase(notification: n(token(4, length: 200)), status: 200, reason: nil),
            ClientCase(notification: n(token(5), topic: "com.example.second"), status: 200, reason: nil),
            ClientCase(notification: n(unregisteredToken), status: 410, reason: "Unregistered"),
            ClientCase(notification: n(expiredToken), status: 410, reason: "ExpiredToken"),
            ClientCase(notification: n(badToken), status: 400, reason: "BadDeviceToken"),
            ClientCase(notification: n(token(9), topic: "com.other.app"), status: 400, reason: "TopicDisallowed"),
            ClientCase(notification: n(token(10), [UInt8](repeating: 0x20, count: 5000), pushType: .voip, topic: MockAPNs.topic + ".voip"),
                       status: 200, reason: nil),
            ClientCase(notification: n(token(11), pushType: .background, priority: 5), status: 200, reason: nil),
            ClientCase(notification: n(token(12), pushType: .liveactivity, topic: MockAPNs.topic + ".push-type.liveactivity"), status: 200, reason: nil),
            // 60 bytes of UTF-8 (30 characters): within APNs' 64 bytes.
            ClientCase(notification: n(token(13), collapseID: String(repeating: "é", count: 30)), status: 200, reason: nil),
            ClientCase(notification: n(token(14), [UInt8](repeating: 0x20, count: 4096)), status: 200, reason: nil),
            ClientCase(notification: n(token(15), collapseID: String(repeating: "c", count: 64)), status: 200, reason: nil),
        ]
    }

    /// A comparable line per outcome: tag, kind, status, reason, timestamp, attempts.
    static func summary(_ c: Collected) -> [String] {
        c.outcomes.sorted { $0.tag < $1.tag }.map {
            "\($0.tag) \($0.kind) \($0.status.map(String.init) ?? "-") \($0.reason ?? "-") \($0.timestampMilliseconds.map(String.init) ?? "-") ×\($0.attempts)"
        }
    }

    /// Requests APNsClient refuses to send, through Tests/MockAPNs/raw_h2_requests.py (Python's h2),
    /// each with the (status, reason) both mocks must answer.
    static func rawCases() -> [(request: [String: Any], status: Int, reason: String?)] {
        let valid: [String: Any] = ["kid": MockAPNs.keyID, "iss": MockAPNs.teamID, "iatAgo": 100]
        let topic = ["apns-topic": MockAPNs.topic]
        func r(_ connection: Int, _ path: String = "/3/device/" + token(50), method: String = "POST", headers: [String: String] = topic,
               body: Int = 20, token: [String: Any]? = valid, authorization: String? = nil) -> [String: Any] {
            var o: [String: Any] = ["connection": connection, "method": method, "path": path, "headers": headers, "bodyBytes": body]
            if let token { o["token"] = token }
            if let authorization { o["authorization"] = authorization; o["token"] = nil }
            return o
        }
        let noToken: [String: Any]? = nil
        return [
            (r(1), 200, nil),
            (r(1, "/3/device/zz11aa"), 400, "BadDeviceToken"),
            (r(1, "/3/device/abc"), 400, "BadDeviceToken"),
            (r(1, "/3/device/"), 400, "MissingDeviceToken"),
            (r(1, "/2/device/" + token(50)), 404, "BadPath"),
            (r(1, method: "GET", body: 0), 405, "MethodNotAllowed"),
            (r(1, headers: topic.merging(["apns-push-type": "sms"]) { $1 }), 400, "InvalidPushType"),
            (r(1, headers: topic.merging(["apns-push-type": "constructor"]) { $1 }), 400, "InvalidPushType"),
            (r(1, headers: [:]), 400, "MissingTopic"),
            (r(1, headers: ["apns-topic": MockAPNs.topic, "apns-push-type": "voip"]), 400, "TopicDisallowed"),
            (r(1, headers: topic.merging(["apns-push-type": "background", "apns-priority": "10"]) { $1 }), 400, "BadPriority"),
            (r(1, headers: topic.merging(["apns-priority": "7"]) { $1 }), 400, "BadPriority"),
            (r(1, headers: topic.merging(["apns-expiration": "-1"]) { $1 }), 400, "BadExpirationDate"),
            (r(1, headers: topic.merging(["apns-expiration": "soon"]) { $1 }), 400, "BadExpirationDate"),
            (r(1, headers: topic.merging(["apns-collapse-id": String(repeating: "c", count: 65)]) { $1 }), 400, "BadCollapseId"),
            (r(1, headers: topic.merging(["apns-collapse-id": String(repeating: "é", count: 33)]) { $1 }), 400, "BadCollapseId"),
            (r(1, headers: topic.merging(["apns-id": "not-a-uuid"]) { $1 }), 400, "BadMessageId"),
            (r(1, body: 0), 400, "PayloadEmpty"),
            (r(1, body: 4097), 413, "PayloadTooLarge"),
            (r(1, headers: ["apns-topic": MockAPNs.topic + ".voip", "apns-push-type": "voip"], body: 5121), 413, "PayloadTooLarge"),
            (r(1, headers: ["apns-topic": MockAPNs.topic + ".voip", "apns-push-type": "voip"], body: 5120), 200, nil),
            // Provider tokens: missing, malformed, wrong kid / iss / alg; the stream limit follows (1 → 1000 → 1 → 1000).
            (r(2, token: noToken), 403, "MissingProviderToken"),
            (r(2, authorization: "Bearer abc.def.ghi"), 403, "MissingProviderToken"),
            (r(2, authorization: "bearer abc"), 403, "InvalidProviderToken"),
            (r(2, authorization: "bearer e30.e30.e30"), 403, "InvalidProviderToken"),
            (r(2, token: ["kid": "WRONGKID12", "iss": MockAPNs.teamID]), 403, "InvalidProviderToken"),
            (r(2, token: ["kid": MockAPNs.keyID, "iss": "OTHERTEAM1"]), 403, "InvalidProviderToken"),
            (r(2, token: ["kid": MockAPNs.keyID, "iss": MockAPNs.teamID, "alg": "HS256"]), 403, "InvalidProviderToken"),
            (r(2), 200, nil),
            (r(2, authorization: "bearer abc"), 403, "InvalidProviderToken"),
            (r(2), 200, nil),
            // A newer token on one connection within tokenUpdateSeconds; an older one; one past 60 minutes.
            (r(3, token: ["kid": MockAPNs.keyID, "iss": MockAPNs.teamID, "iatAgo": 100]), 200, nil),
            (r(3, token: ["kid": MockAPNs.keyID, "iss": MockAPNs.teamID, "iatAgo": 50]), 429, "TooManyProviderTokenUpdates"),
            (r(3, token: ["kid": MockAPNs.keyID, "iss": MockAPNs.teamID, "iatAgo": 100]), 200, nil),
            (r(3, token: ["kid": MockAPNs.keyID, "iss": MockAPNs.teamID, "iatAgo": 3700]), 403, "ExpiredProviderToken"),
            (r(4, token: ["kid": MockAPNs.keyID, "iss": MockAPNs.teamID, "iatAgo": 3700]), 403, "ExpiredProviderToken"),
        ]
    }

    /// What one mock answered: the client's outcomes per run, the raw answers, the record lines.
    struct Answers {
        var client: [[String]] = []
        var raw: [[String: Any]] = []
        var records: [String] = []
    }

    static func run(_ kind: MockAPNs.Kind, p8Path: String, otherP8Path: String) throws -> Answers {
        let mock = try MockAPNs(config, p8Path: p8Path, kind: kind)
        var answers = Answers()
        // Through the real client: the valid requests and the answers it can meet.
        let (c, _) = try sendAll(clientCases().map(\.notification), to: mock)
        answers.client.append(summary(c))
        // Provider tokens it would mint with a wrong key id, team id, key, or an iat 62 minutes old.
        let keys = [
            try ProviderKey(p8Path: p8Path, keyID: "WRONGKID12", teamID: MockAPNs.teamID),
            try ProviderKey(p8Path: p8Path, keyID: MockAPNs.keyID, teamID: "OTHERTEAM1"),
            try ProviderKey(p8Path: otherP8Path, keyID: MockAPNs.keyID, teamID: MockAPNs.teamID),
        ]
        for key in keys {
            let (k, _) = try sendAll([notification(60)], to: mock, tokens: ProviderTokenCache(key: key))
            answers.client.append(summary(k))
        }
        let skewed = ProviderTokenCache(key: try ProviderKey(p8Path: p8Path, keyID: MockAPNs.keyID, teamID: MockAPNs.teamID),
                                        clock: ShiftedClock(base: TestClock(), wallShift: -3720))
        let (s, _) = try sendAll([notification(61)], to: mock, tokens: skewed)
        answers.client.append(summary(s))
        // The requests the client refuses to send.
        answers.raw = try sendRaw(rawCases().map(\.request), to: mock, p8Path: p8Path)
        mock.stop()
        // Record lines without what differs between runs: the time, connection and stream numbers, apns-id.
        let text = String(decoding: FileManager.default.contents(atPath: mock.recordPath) ?? Data(), as: UTF8.self)
        answers.records = text.split(separator: "\n").map {
            String($0).replacingOccurrences(of: #"^\{"t":[0-9]+,"session":[0-9]+,"stream":[0-9]+,"#, with: "{", options: .regularExpression)
                .replacingOccurrences(of: #""apnsId":(null|"[^"]*"),"#, with: "", options: .regularExpression)
        }.sorted()
        return answers
    }

    /// Sends `requests` through Tests/MockAPNs/raw_h2_requests.py and returns its answers (status, body, headers, stream limit).
    static func sendRaw(_ requests: [[String: Any]], to mock: MockAPNs, p8Path: String) throws -> [[String: Any]] {
        let input = try JSONSerialization.data(withJSONObject: requests)
        let script = MockAPNs.mockDirectory.appendingPathComponent("raw_h2_requests.py")
        let result = try #require(runPython(file: script, [String(mock.port), mock.caFile, p8Path], input: input))
        #expect(result.status == 0, "raw_h2_requests.py against the \(mock.kind) mock: \(result.errors)")
        return (try JSONSerialization.jsonObject(with: Data(result.output.utf8)) as? [[String: Any]]) ?? []
    }

    @Test("the same requests (valid, and one for each rejection the native mock implements) get the same status, reason, timestamp, headers and record lines from both mocks")
    func sameAnswers() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("mock-diff-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let p8 = dir.appendingPathComponent("AuthKey.p8").path, other = dir.appendingPathComponent("Other.p8").path
        try TestKey.write(to: p8)
        try TestKey.write(to: other)
        let node = try Self.run(.node, p8Path: p8, otherP8Path: other)
        let native = try Self.run(.native, p8Path: p8, otherP8Path: other)

        // The client's outcomes: as the table says, and the same from both.
        let cases = Self.clientCases()
        #expect(node.client.count == 5 && native.client.count == 5)
        let expected = cases.enumerated().map { i, c in (i + 1, c.status, c.reason) }
        for (kind, answers) in [("node", node), ("native", native)] {
            let lines = answers.client.first ?? []
            #expect(lines.count == cases.count, "\(kind): \(lines)")
            for (line, e) in zip(lines, expected) {
                #expect(line.hasPrefix("\(e.0) ") && line.contains(" \(e.1) \(e.2 ?? "-") "), "\(kind): got \(line), expected \(e)")
            }
            for line in answers.client.dropFirst() {
                #expect(line.count == 1 && (line.first?.contains("rejected 403") ?? false), "\(kind): \(line)")
            }
        }
        #expect(node.client == native.client)
        #expect(node.client.first?.contains { $0.contains("Unregistered 1700000000123") } ?? false)

        // The raw requests: status, body, header names, the stream limit after each answer.
        let raw = Self.rawCases()
        #expect(node.raw.count == raw.count && native.raw.count == raw.count)
        for (i, c) in raw.enumerated() where i < node.raw.count && i < native.raw.count {
            let a = node.raw[i], b = native.raw[i]
            let body = (try? JSONSerialization.jsonObject(with: Data(((a["body"] as? String) ?? "").utf8))) as? [String: Any]
            #expect(a["status"] as? Int == c.status && body?["reason"] as? String == c.reason, "request \(i + 1) to node: \(a), expected \(c.status) \(c.reason ?? "-")")
            #expect(a["status"] as? Int == b["status"] as? Int, "request \(i + 1): node \(a), native \(b)")
            #expect(a["body"] as? String == b["body"] as? String, "request \(i + 1): node \(a), native \(b)")
            #expect(a["maxConcurrentStreams"] as? Int == b["maxConcurrentStreams"] as? Int, "request \(i + 1) stream limit: node \(a), native \(b)")
            let ha = (a["headers"] as? [String: String]) ?? [:], hb = (b["headers"] as? [String: String]) ?? [:]
            #expect(Set(ha.keys) == Set(hb.keys), "request \(i + 1) header names: node \(ha.keys.sorted()), native \(hb.keys.sorted())")
            #expect(ha["content-type"] == hb["content-type"])
            if let sent = (c.request["headers"] as? [String: String])?["apns-id"] {
                #expect(ha["apns-id"] == sent && hb["apns-id"] == sent, "the apns-id sent is echoed")
            }
        }
        // One stream until a valid token, 1000 after, 1 again after a 403 for the token.
        #expect(node.raw.compactMap { $0["maxConcurrentStreams"] as? Int }.contains(1000))

        // Every stream recorded, each line the same but for time, connection, stream and apns-id.
        #expect(node.records.count == cases.count + 4 + raw.count, "node recorded \(node.records.count) streams")
        let onlyNode = node.records.filter { !native.records.contains($0) }, onlyNative = native.records.filter { !node.records.contains($0) }
        let same = node.records == native.records  // both sorted: the same lines, each as often
        #expect(same,
                "record lines differ (\(node.records.count) from node, \(native.records.count) from native):\nnode only: \(onlyNode.prefix(5))\nnative only: \(onlyNative.prefix(5))")
    }

    @Test("2,000 notifications through APNsClient to the native mock: all accepted on one connection, no stream refused (its limit of 1 before the first valid token kept), each recorded once")
    func nativeStreamLimit() throws {
        let mock = try MockAPNs(kind: .native)
        let (c, stats) = try sendAll((1...2000).map { notification($0, length: $0 % 3 == 0 ? 100 : 64) }, to: mock) { $0.maxInFlight = 1000 }
        mock.stop()
        #expect(c.outcomes.count == 2000 && Set(c.outcomes.map(\.tag)).count == 2000)
        #expect(c.outcomes.allSatisfy { $0.kind == .accepted && $0.attempts == 1 && $0.apnsUniqueID != nil })
        #expect(stats.connectionsOpened == 1 && stats.refusedStreamsResent == 0, "\(stats.connectionsOpened) connections, \(stats.refusedStreamsResent) refused")
        let answered = answeredCount(try mock.answered())
        #expect(answered.count == 2000 && answered.values.allSatisfy { $0 == 1 })
    }

    @Test("initialStreams, maxStreams and tokenUpdateSeconds set: the same stream limits and answers from both mocks")
    func streamAndTokenUpdateSettings() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("mock-diff-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let p8 = dir.appendingPathComponent("AuthKey.p8").path
        try TestKey.write(to: p8)
        func token(_ ago: Int) -> [String: Any] { ["kid": MockAPNs.keyID, "iss": MockAPNs.teamID, "iatAgo": ago] }
        let path = "/3/device/" + PushSealAPNsTests.token(70)
        let requests: [[String: Any]] = [
            ["connection": 1, "path": path, "headers": ["apns-topic": MockAPNs.topic], "bodyBytes": 10, "token": token(300)],
            ["connection": 1, "path": path, "headers": ["apns-topic": MockAPNs.topic], "bodyBytes": 10, "authorization": "bearer x.y.z"],
            // A newer token at once: allowed with tokenUpdateSeconds 0.
            ["connection": 1, "path": path, "headers": ["apns-topic": MockAPNs.topic], "bodyBytes": 10, "token": token(200)],
            ["connection": 1, "path": path, "headers": ["apns-topic": MockAPNs.topic], "bodyBytes": 10, "token": token(100)],
        ]
        var answers: [MockAPNs.Kind: [[String: Any]]] = [:]
        for kind in MockAPNs.Kind.allCases {
            let mock = try MockAPNs(["initialStreams": 3, "maxStreams": 50, "tokenUpdateSeconds": 0], p8Path: p8, kind: kind)
            answers[kind] = try Self.sendRaw(requests, to: mock, p8Path: p8)
            mock.stop()
        }
        let node = answers[.node] ?? [], native = answers[.native] ?? []
        #expect(node.compactMap { $0["status"] as? Int } == [200, 403, 200, 200])
        #expect(node.compactMap { $0["maxConcurrentStreams"] as? Int } == [50, 3, 50, 50])
        #expect(node.count == 4 && native.count == 4)
        for (a, b) in zip(node, native) {
            #expect(a["status"] as? Int == b["status"] as? Int && a["body"] as? String == b["body"] as? String
                    && a["maxConcurrentStreams"] as? Int == b["maxConcurrentStreams"] as? Int, "node \(a), native \(b)")
        }
    }

    @Test("the native mock refuses to start with a config member it does not implement, naming it",
          arguments: ["faults", "script", "dropAfter"])
    func refusesUnimplementedMembers(member: String) throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("mock-refuse-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let config = dir.appendingPathComponent("config.json")
        let members: [String: Any] = ["keys": [] as [Any], member: [String: Any]()]
        try JSONSerialization.data(withJSONObject: members).write(to: config)
        let r = try runTool(URL(fileURLWithPath: try MockAPNs.nativeBuild.get()), ["--config", config.path, "--detached"])
        let errors = r.stderr
        #expect(r.status == 78 && !r.signaled, "exit status \(r.status): \(errors)")
        #expect(r.stdoutBytes.isEmpty, "it must not start listening")
        #expect(errors.hasPrefix("mock-apns-native: error: config member \"\(member)\""), "\(errors)")
    }
}
