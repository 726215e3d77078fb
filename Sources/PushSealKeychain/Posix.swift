#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import PushSealCrypto
import PushSealSystem
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The keychain's file store on PushSealSystem's private-file rules (``PrivateFile``): whole-file
/// reads with permission checks, atomic durable writes, flock, directories. Every failure becomes
/// a `KeychainError` naming the path and the errno text (never data), with the keychain's own
/// suggestions (`chmod 600 FILE`, `chmod 700 DIR`).
enum Posix {
    static func errnoText(_ e: Int32 = errno) -> String { String(cString: strerror(e)).lowercased() }

    /// The keychain's error for a failure of PushSealSystem: its wording and suggestions.
    /// - Parameter isDirectory: the path is a directory (the suggestion is then `chmod 700`).
    static func keychainError(_ e: SystemError, isDirectory: Bool = false) -> KeychainError {
        switch e.code {
        case .symbolicLink:
            // ELOOP from O_NOFOLLOW is a link only when lstat confirms it (else a loop above).
            var st = stat()
            if e.errno == 0 || (lstat(e.path, &st) == 0 && st.st_mode & S_IFMT == S_IFLNK) { return linkInsideError(e.path) }
            return KeychainError(.io, e.reason)
        case .wrongOwner:
            return KeychainError(.insecurePermissions, e.reason,
                                 suggestion: "use the keychain as its owner (uid \(e.fileOwner ?? 0)); it must be owned by the user that opens it")
        case .insecureMode:
            return KeychainError(.insecurePermissions, e.reason,
                                 suggestion: "chmod \(isDirectory ? "700" : "600") \(shellQuoted(e.path))  # a keychain's files must be 0600, its directories 0700")
        case .notRegularFile, .tooLarge: return KeychainError(.corrupt, e.reason)
        case .alreadyExists: return KeychainError(.alreadyExists, e.reason)
        case .permissionDenied: return KeychainError(.insecurePermissions, e.reason)
        default: return KeychainError(.io, e.reason)
        }
    }

    /// Runs `body`, turning a ``SystemError`` into the keychain's error (``keychainError(_:isDirectory:)``).
    static func mapped<R>(isDirectory: Bool = false, _ body: () throws -> R) throws -> R {
        do { return try body() } catch let e as SystemError { throw keychainError(e, isDirectory: isDirectory) }
    }

    static func ioError(_ what: String, _ path: String, _ e: Int32 = errno) -> KeychainError {
        if e == EACCES || e == EPERM {
            return KeychainError(.insecurePermissions, "cannot \(what) \(path): \(errnoText(e))")
        }
        return KeychainError(.io, "cannot \(what) \(path): \(errnoText(e))")
    }

    /// Refuses a file or directory that is owned by another user or group/world-accessible; the
    /// error's suggestion names the fix for that one path (`chmod 600 FILE`, `chmod 700 DIR`).
    static func checkOwnership(_ st: PrivateFile.Status, _ path: String) throws {
        try mapped(isDirectory: isDirectory(st)) { try PrivateFile.checkOwnership(st, path) }
    }

    /// `path` as one shell word: as it is when it holds only `A-Z a-z 0-9 _ . / - + : @ % , =`,
    /// else in single quotes (a `'` inside written `'\''`).
    static func shellQuoted(_ path: String) -> String {
        let plain = !path.isEmpty && path.unicodeScalars.allSatisfy { c in
            c.isASCII && (("a"..."z").contains(c) || ("A"..."Z").contains(c) || ("0"..."9").contains(c) || "_./-+:@%,=".unicodeScalars.contains(c))
        }
        return plain ? path : "'" + path.split(separator: "'", omittingEmptySubsequences: false).joined(separator: "'\\''") + "'"
    }

    static func isSymbolicLink(_ st: PrivateFile.Status) -> Bool { st.kind == .symbolicLink }

    /// The error for a keychain directory given as a symbolic link: the keychain directory
    /// itself and everything inside it must not be links (the link's target could be changed
    /// under a running tool); directories above it may be. Suggests the link's target, if it
    /// resolves.
    static func symbolicLinkError(_ path: String, _ code: KeychainError.Code) -> KeychainError {
        var suggestion: String?
        if let resolved = resolvedPath(path) {
            suggestion = "give the keychain's real path: \(shellQuoted(resolved))"
        }
        return KeychainError(code,
            "\(path) is a symbolic link: the keychain directory itself and everything inside it must not be links (directories above it may be)",
            suggestion: suggestion)
    }

    /// The error for a file or directory inside a keychain that is a symbolic link
    /// (`.symbolicLink`): such links are refused, never followed. Names the link's target, if it
    /// resolves.
    static func linkInsideError(_ path: String) -> KeychainError {
        let target = resolvedPath(path).map { " (\(shellQuoted($0)))" } ?? ""
        return KeychainError(.symbolicLink, "\(path) is a symbolic link: links inside a keychain are refused, never followed",
                             suggestion: "replace the link with the file or directory it points to\(target): a keychain holds only real files and directories")
    }

    /// `realpath(3)` of `path`, or `nil` when it does not resolve.
    static func resolvedPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// `lstat`, or `nil` when the path does not exist.
    static func status(_ path: String) throws -> PrivateFile.Status? {
        try mapped { try PrivateFile.status(path) }
    }

    static func isDirectory(_ st: PrivateFile.Status) -> Bool { st.kind == .directory }

    /// Refuses a keychain whose parent directories someone else could change, as ssh's
    /// `StrictModes` does (F21): each directory above `path` (links followed, as the kernel does)
    /// must be owned by the caller or root, and not group- or world-writable unless it has the
    /// sticky bit (`/tmp`). Otherwise another user could swap the keychain between two opens.
    /// - Throws: `.insecurePermissions` naming the directory, with a `chmod` suggestion; `.io`.
    static func checkParents(of path: String) throws {
        var dir = path
        while let slash = dir.lastIndex(of: "/") {
            dir = slash == dir.startIndex ? "/" : String(dir[..<slash])
            var st = stat()
            guard stat(dir, &st) == 0 else { throw ioError("stat", dir) }
            if st.st_uid != 0 && st.st_uid != geteuid() {
                throw KeychainError(.insecurePermissions, "\(dir), a parent of the keychain, is owned by another user (uid \(st.st_uid))",
                                    suggestion: "keep the keychain below directories owned by you or root (as ssh's StrictModes asks)")
            }
            if st.st_mode & 0o022 != 0, st.st_mode & S_ISVTX == 0 {
                throw KeychainError(.insecurePermissions,
                    "\(dir), a parent of the keychain, is writable by group or others (mode \(String(st.st_mode & 0o7777, radix: 8))) without the sticky bit",
                    suggestion: "chmod go-w \(shellQuoted(dir))  # or move the keychain: others could replace it (as ssh's StrictModes refuses)")
            }
            if dir == "/" { break }
        }
    }

    /// Checks that `path` is a 0700-style directory owned by us.
    /// - Returns: `false` when it does not exist.
    static func checkDirectory(_ path: String) throws -> Bool {
        guard let st = try status(path) else { return false }
        if isSymbolicLink(st) { throw linkInsideError(path) }
        guard isDirectory(st) else { throw KeychainError(.corrupt, "\(path) is not a directory") }
        try checkOwnership(st, path)
        return true
    }

    /// Reads a whole regular file after checking owner and mode.
    /// - Returns: `nil` when the file does not exist.
    /// - Throws: `.symbolicLink`, `.insecurePermissions`, `.corrupt` (not a regular file, over
    ///   `maxByteCount`), `.io`.
    static func readFile(_ path: String, maxByteCount: Int) throws -> [UInt8]? {
        try mapped { try PrivateFile.read(path, maxByteCount: maxByteCount) }
    }

    static func fsyncPath(_ path: String) throws {
        try mapped { try PrivateFile.synchronizeDirectory(path) }
    }

    /// Creates `path` with `bytes`, mode 0600, failing if it exists (`O_EXCL`), then fsyncs it.
    static func createExclusive(_ path: String, _ bytes: [UInt8]) throws {
        try mapped { try PrivateFile.createExclusive(path, bytes) }
    }

    /// Atomic, durable replace: unique temp file in `tempDirectory` (same file system), write,
    /// fsync, rename over `path`, fsync the directory of `path`.
    static func writeAtomically(_ bytes: [UInt8], to path: String, directory: String, tempDirectory: String) throws {
        let name = ".tmp-\(getpid())-\(Hex.encode(SecureRandom.bytes(8)))"
        try mapped { try PrivateFile.replaceAtomically(bytes, at: path, directory: directory, tempDirectory: tempDirectory, uniqueName: name) }
    }

    /// Removes every entry of `directory` (left-over temp files of killed writers). Call only
    /// while holding the writer lock: then no live writer owns one.
    static func removeAll(in directory: String) throws {
        guard let d = opendir(directory) else { throw ioError("open", directory) }
        defer { closedir(d) }
        while let entry = readdir(d) {
            let name = entryName(entry)
            if name == "." || name == ".." { continue }
            unlink("\(directory)/\(name)")
        }
    }

    /// The name of one `readdir` entry, read in place.
    ///
    /// glibc's entries are variable-length (`d_reclen` bytes, the name padded only to 8 bytes),
    /// so the last entry of a buffer can be shorter than `MemoryLayout<dirent>.size`: copying
    /// `entry.pointee.d_name` (a 256-byte tuple) reads past the allocation (found by ASan).
    /// Taking the field's address through the pointer does not copy; the name is NUL-terminated.
    static func entryName(_ entry: UnsafeMutablePointer<dirent>) -> String {
        withUnsafeMutablePointer(to: &entry.pointee.d_name) { tuple in
            // A homogeneous tuple of CChar is bound to CChar, so this assumes nothing new.
            String(cString: UnsafeRawPointer(tuple).assumingMemoryBound(to: CChar.self))
        }
    }

    /// Names in `directory` (not `.`/`..`).
    static func list(_ directory: String) throws -> [String] {
        guard let d = opendir(directory) else {
            if errno == ENOENT { throw KeychainError(.corrupt, "\(directory) is missing") }
            throw ioError("open", directory)
        }
        defer { closedir(d) }
        var names: [String] = []
        while let entry = readdir(d) {
            let name = entryName(entry)
            if name == "." || name == ".." { continue }
            names.append(name)
        }
        return names
    }

    static func makeDirectory(_ path: String) throws {
        if mkdir(path, 0o700) != 0 {
            if errno == EEXIST {
                guard try checkDirectory(path) else { throw ioError("create", path) }
                return
            }
            throw ioError("create directory", path)
        }
        // mkdir is subject to the umask; make the mode exact.
        guard chmod(path, 0o700) == 0 else { throw ioError("chmod", path) }
    }

    /// Checks a file of the keychain that may be absent (a lock file, the audit log) by the
    /// rules of item files: not a link, a regular file, owned by the caller, 0600.
    /// - Throws: `.symbolicLink`, `.corrupt` (not a regular file), `.insecurePermissions`, `.io`.
    static func checkPrivateFile(_ path: String) throws {
        try mapped { try PrivateFile.checkIfPresent(path) }
    }

    /// Opens a file of the keychain (created 0600 with `.create`) under the rules of
    /// ``checkPrivateFile(_:)``, checked before the open (a FIFO would block it) and again on
    /// the open descriptor (the file may have been replaced in between).
    /// - Parameters:
    ///   - path: the file.
    ///   - options: open options; `O_CLOEXEC | O_NOFOLLOW` are added.
    ///   - what: the file's role in messages, e.g. `lock file`.
    /// - Returns: the open descriptor (closed when released).
    /// - Throws: as ``checkPrivateFile(_:)``.
    static func openPrivateFile(_ path: String, options: FileDescriptor.Options, what: String) throws -> FileDescriptor {
        try mapped { try PrivateFile.open(path, options, what: what) }
    }

    /// Runs `body` holding an exclusive `flock` on `lockPath` (created 0600 if absent; refused
    /// when it is a link, not a regular file, or group- or world-accessible). The kernel
    /// releases the lock when the holder exits or is killed, so a dead holder never blocks.
    static func withExclusiveLock<R>(_ lockPath: String, _ body: () throws -> R) throws -> R {
        let file = try openPrivateFile(lockPath, options: [.readWrite, .create], what: "lock file")
        do { try file.lockExclusive() } catch let e as SystemError { throw keychainError(e) }
        defer { file.unlock() }
        return try body()
    }
}
