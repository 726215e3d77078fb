public import Foundation

/// The repository root (two levels above `Tests/PushSealTestSupport`).
public let repositoryRoot: URL = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

/// The shared test data at `relative` (e.g. `cases/failures`, `vectors/hkdf/x.json`) inside
/// `$PUSHSEAL_SHARED`, else `<repo>/../shared`: its URL when it exists, and the message a test
/// gives when it does not (the resolved path it looked in, and how to point at the data).
///
/// Policy (one for every target): a test that needs shared data *fails* when it is absent, with
/// that message: call ``requireSharedData(_:)``. Never skip silently.
public func sharedData(_ relative: String) -> (url: URL?, missing: String) {
    let env = ProcessInfo.processInfo.environment["PUSHSEAL_SHARED"] ?? ""
    let root = env.isEmpty ? repositoryRoot.deletingLastPathComponent().appendingPathComponent("shared") : URL(fileURLWithPath: env)
    let url = root.appendingPathComponent(relative).standardized
    let found = FileManager.default.fileExists(atPath: url.path)
    return (found ? url : nil, "shared test data not found at \(url.path) (\(env.isEmpty ? "default <repo>/../shared" : "from PUSHSEAL_SHARED")): "
        + "run `make test SHARED=/path/to/shared`, or set PUSHSEAL_SHARED=/path/to/shared")
}

/// The URL of shared test data `relative` (see ``sharedData(_:)``).
/// - Throws: ``MissingSharedData`` naming the path looked in, so the test fails clearly.
public func requireSharedData(_ relative: String) throws -> URL {
    let (url, missing) = sharedData(relative)
    guard let url else { throw MissingSharedData(description: missing) }
    return url
}

/// Thrown (so the test fails, never silently passes) when the shared test data is absent.
public struct MissingSharedData: Error, CustomStringConvertible {
    /// Where it was looked for, and how to point at it.
    public let description: String
}
