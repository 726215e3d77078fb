#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import PushSealCrypto
import PushSealSystem

/// A small JSON store in the App Group container (the replay guard's, the notification
/// center's): `<container>/<name>.json` on PushSealSystem's private-file rules (``PrivateFile``:
/// 0600, owned by this user, read without following a link, replaced atomically with a
/// temporary file, fsync and rename), changed only under an exclusive `flock` of
/// `<container>/<name>.lock`. Every failure is an `ExtensionError` with the store's own code.
struct ContainerStoreFile: Sendable {
    /// The store file.
    let fileURL: URL
    private let lockPath: String
    private let directoryPath: String
    private let stem: String
    private let code: ErrorCode<ExtensionError>
    private let what: String

    /// - Parameters:
    ///   - containerDirectory: the App Group container (an existing directory).
    ///   - stem: the file name without `.json` / `.lock`, e.g. `pushseal-replay-guard`.
    ///   - code: the error code of every failure.
    ///   - what: the store's name in reasons, e.g. `the replay guard`.
    init(containerDirectory: URL, stem: String, code: ErrorCode<ExtensionError>, what: String) {
        fileURL = containerDirectory.appendingPathComponent(stem + ".json")
        lockPath = containerDirectory.appendingPathComponent(stem + ".lock").path
        directoryPath = containerDirectory.path
        self.stem = stem
        self.code = code
        self.what = what
    }

    /// Runs `body` under the store's exclusive lock.
    func locked<T>(_ body: () throws -> T) throws -> T {
        do {
            return try PrivateFile.withExclusiveLock(lockPath, body)
        } catch let e as SystemError {
            throw ExtensionError(code, "cannot lock \(what): \(e.code.name)")
        }
    }

    /// The store's bytes (at most `maxByteCount`), or `nil` when it does not exist yet.
    func read(maxByteCount: Int) throws -> [UInt8]? {
        do {
            return try PrivateFile.read(fileURL.path, maxByteCount: maxByteCount)
        } catch let e as SystemError {
            throw ExtensionError(code, "cannot read \(what)'s store: \(e.code.name)")
        }
    }

    /// The error for a store that is not the documented shape.
    func damaged() -> ExtensionError { ExtensionError(code, "\(what)'s store is damaged") }

    /// Replaces the store with `bytes`.
    func replace(with bytes: [UInt8]) throws {
        do {
            let name = ".\(stem)-\(PrivateFile.processID)-\(Hex.encode(SecureRandom.bytes(8)))"
            try PrivateFile.replaceAtomically(bytes, at: fileURL.path, directory: directoryPath, uniqueName: name)
        } catch let e as SystemError {
            throw ExtensionError(code, "cannot write \(what)'s store: \(e.code.name)")
        }
    }
}
