@testable import PushSealWire
import Testing

/// A notification's text span outside its source is a broken invariant (only the scanner makes
/// spans, of the bytes it keeps as the source): reading or encoding it traps, rather than
/// quietly giving `""` and sealing an empty title (issue 27, step 4).
@Suite struct SpanInvariantTests {
    /// A scanned notification whose title span is then pointed past its source.
    static func brokenNotification() -> PushNotification {
        var n = PushNotification()
        #expect(PushNotification.scan(Array(#"{"title":"Hello","body":"World"}"#.utf8), into: &n))
        n.titleText = .span(start: 100, end: 120, hasEscapes: false, isMinimallyEscaped: true)
        return n
    }

    @Test func aSpanInsideItsSourceReadsAndEncodes() throws {
        var n = PushNotification()
        #expect(PushNotification.scan(Array(#"{"title":"Hello","body":"World"}"#.utf8), into: &n))
        #expect(n.title == "Hello")
        #expect(try n.encoded(padding: false) == Array(#"{"title":"Hello","body":"World"}"#.utf8))
    }

    @Test func readingASpanOutsideItsSourceTraps() async {
        await #expect(processExitsWith: .failure) {
            _ = SpanInvariantTests.brokenNotification().title
        }
    }

    @Test func encodingASpanOutsideItsSourceTraps() async {
        await #expect(processExitsWith: .failure) {
            _ = try? SpanInvariantTests.brokenNotification().encoded(padding: false)
        }
    }

    @Test func checkingTheVisibilityOfASpanOutsideItsSourceTraps() async {
        await #expect(processExitsWith: .failure) {
            _ = SpanInvariantTests.brokenNotification().hasVisibleText
        }
    }
}
