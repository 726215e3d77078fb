/// The PushSeal release these sources are: the one version constant, printed by every tool's
/// `--version` (push-seal, push-open, push-keys, push-bench).
///
/// Semantic Versioning 2.0.0 (semver.org): while the major version is 0, a minor step may change
/// the library API; the wire formats and the CLIs' documented exit codes change only when the
/// CHANGELOG says so. A release is the git tag `v` + ``current`` (e.g. `v0.2.0`) on the commit
/// whose `CHANGELOG.md` has that version's section dated.
public enum PushSealVersion {
    /// This release's version, `MAJOR.MINOR.PATCH`: `0.2.0`.
    public static let current = "0.2.0"

    /// What `TOOL --version` prints (one line, without the newline), e.g.
    /// `push-seal 0.2.0 (PushSeal, wire formats v1 and v2)`.
    /// - Parameter tool: the tool's name, e.g. `push-seal`.
    /// - Returns: the tool's name, ``current`` and the wire formats the tools seal and open.
    public static func line(tool: String) -> String {
        "\(tool) \(current) (PushSeal, wire formats v1 and v2)"
    }
}
