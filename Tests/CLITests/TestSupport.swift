import Foundation

/// The shared test data at `relative` (e.g. `cases/notifications`) inside `$PUSHSEAL_SHARED`, else
/// `<repo>/../shared`: its URL when it exists, and the message a test gives when it does not (the
/// resolved path it looked in, and how to point at the data).
func sharedData(_ relative: String) -> (url: URL?, missing: String) {
    let env = ProcessInfo.processInfo.environment["PUSHSEAL_SHARED"] ?? ""
    let root = env.isEmpty
        ? URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("shared")
        : URL(fileURLWithPath: env)
    let url = root.appendingPathComponent(relative).standardized
    let found = FileManager.default.fileExists(atPath: url.path)
    return (found ? url : nil, "shared test data not found at \(url.path) (\(env.isEmpty ? "default <repo>/../shared" : "from PUSHSEAL_SHARED")): "
        + "run `make test SHARED=/path/to/shared`, or set PUSHSEAL_SHARED=/path/to/shared")
}
