public import PushSealSystem
public import Testing

/// Expects `body` to throw an `E` whose code is `code` (errors compare by code, never by text);
/// records an issue naming what happened otherwise.
/// - Returns: the error, for further checks (e.g. its suggestion), or `nil`.
@discardableResult
public func expectCode<E: CodedError, R>(_ code: ErrorCode<E>, sourceLocation: SourceLocation = #_sourceLocation,
                                          _ body: () throws -> R) -> E? where E.Code == ErrorCode<E> {
    do {
        _ = try body()
        Issue.record("expected \(E.domain) error \(code), got success", sourceLocation: sourceLocation)
    } catch let e as E {
        #expect(e.code == code, "got \(e.code): \(e.reason)", sourceLocation: sourceLocation)
        return e
    } catch {
        Issue.record("expected \(E.domain) error \(code), got \(error)", sourceLocation: sourceLocation)
    }
    return nil
}

/// The code of the `E` thrown by `body`; `nil` when it returned or threw something else.
public func thrownCode<E: CodedError>(_ type: E.Type, _ body: () throws -> Void) -> E.Code? {
    do {
        try body()
        return nil
    } catch let e as E {
        return e.code
    } catch {
        return nil
    }
}
