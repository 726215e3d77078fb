#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import PushSealCrypto
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Thin POSIX helpers: whole-file reads with permission checks, atomic durable writes, flock.
/// Every failure becomes a `KeychainError` naming the path and the errno text (never data).
enum Posix {
    static func errnoText(_ e: Int32 = errno) -> String { String(cString: strerror(e)).lowercased() }

    static func ioError(_ what: String, _ path: String, _ e: Int32 = errno) -> KeychainError {
        if e == EACCES || e == EPERM {
            return KeychainError(.insecurePermissions, "cannot \(what) \(path): \(errnoText(e))")
        }
        return KeychainError(.io, "cannot \(what) \(path): \(errnoText(e))")
    }

    /// Refuses a file or directory that is owned by another user or group/world-accessible; the
    /// error's suggestion names the fix for that one path (`chmod 600 FILE`, `chmod 700 DIR`).
    static func checkOwnership(_ st: stat, _ path: String) throws {
        if st.st_uid != geteuid() {
            throw KeychainError(.insecurePermissions, "\(path) is owned by another user (uid \(st.st_uid))",
                                suggestion: "use the keychain as its owner (uid \(st.st_uid)); it must be owned by the user that opens it")
        }
        if st.st_mode & 0o077 != 0 {
            throw KeychainError(.insecurePermissions,
                "\(path) is accessible by group or others (mode \(String(st.st_mode & 0o777, radix: 8)))",
                suggestion: "chmod \(isDirectory(st) ? "700" : "600") \(shellQuoted(path))  # a keychain's files must be 0600, its directories 0700")
        }
    }

    /// `path` as one shell word: as it is when it holds only `A-Z a-z 0-9 _ . / - + : @ % , =`,
    /// else in single quotes (a `'` inside written `'\''`).
    static func shellQuoted(_ path: String) -> String {
        let plain = !path.isEmpty && path.unicodeScalars.allSatisfy { c in
            c.isASCII && (("a"..."z").contains(c) || ("A"..."Z").contains(c) || ("0"..."9").contains(c) || "_./-+:@%,=".unicodeScalars.contains(c))
        }
        return plain ? path : "'" + path.split(separator: "'", omittingEmptySubsequences: false).joined(separator: "'\\''") + "'"
    }

    static func isSymbolicLink(_ st: stat) -> Bool { st.st_mode & S_IFMT == S_IFLNK }

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

    /// The error for an `open(O_NOFOLLOW)` of `path` that failed with `e`: ``linkInsideError(_:)``
    /// when `path` is a link (`ELOOP`, confirmed by `lstat`), else ``ioError(_:_:_:)``.
    static func openError(_ what: String, _ path: String, _ e: Int32) -> KeychainError {
        var st = stat()
        if e == ELOOP, lstat(path, &st) == 0, isSymbolicLink(st) { return linkInsideError(path) }
        return ioError(what, path, e)
    }

    /// `lstat`, or `nil` when the path does not exist.
    static func status(_ path: String) throws -> stat? {
        var st = stat()
        if lstat(path, &st) == 0 { return st }
        if errno == ENOENT || errno == ENOTDIR { return nil }
        throw ioError("stat", path)
    }

    static func isDirectory(_ st: stat) -> Bool { st.st_mode & S_IFMT == S_IFDIR }
    static func isRegular(_ st: stat) -> Bool { st.st_mode & S_IFMT == S_IFREG }

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
        // O_NONBLOCK: a FIFO put in place of a file must not block the open (fstat refuses it).
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        if fd < 0 {
            if errno == ENOENT { return nil }
            throw openError("open", path, errno)
        }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw ioError("stat", path) }
        guard isRegular(st) else { throw KeychainError(.corrupt, "\(path) is not a regular file") }
        try checkOwnership(st, path)
        let size = Int(st.st_size)
        guard size <= maxByteCount else { throw KeychainError(.corrupt, "\(path) is \(size) bytes, more than the \(maxByteCount) allowed") }
        var buffer = [UInt8](repeating: 0, count: size + 1)
        var total = 0
        while true {
            let n = buffer.withUnsafeMutableBytes { b in read(fd, b.baseAddress.map { $0 + total }, b.count - total) }
            if n < 0 {
                if errno == EINTR { continue }
                throw ioError("read", path)
            }
            if n == 0 { break }
            total += n
            if total == buffer.count {
                throw KeychainError(.corrupt, "\(path) grew while being read")
            }
        }
        buffer.removeLast(buffer.count - total)
        return buffer
    }

    static func writeAll(_ fd: Int32, _ bytes: [UInt8], _ path: String) throws {
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeBytes { b in write(fd, b.baseAddress.map { $0 + done }, b.count - done) }
            if n < 0 {
                if errno == EINTR { continue }
                throw ioError("write", path)
            }
            done += n
        }
    }

    static func fsyncPath(_ path: String) throws {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_DIRECTORY)
        guard fd >= 0 else { throw ioError("open", path) }
        defer { close(fd) }
        guard fsync(fd) == 0 else { throw ioError("fsync", path) }
    }

    /// Creates `path` with `bytes`, mode 0600, failing if it exists (`O_EXCL`), then fsyncs it.
    static func createExclusive(_ path: String, _ bytes: [UInt8]) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else {
            if errno == EEXIST { throw KeychainError(.alreadyExists, "\(path) already exists") }
            throw ioError("create", path)
        }
        defer { close(fd) }
        try writeAll(fd, bytes, path)
        guard fsync(fd) == 0 else { throw ioError("fsync", path) }
    }

    /// Atomic, durable replace: unique temp file in `tempDirectory` (same file system), write,
    /// fsync, rename over `path`, fsync the directory of `path`.
    static func writeAtomically(_ bytes: [UInt8], to path: String, directory: String, tempDirectory: String) throws {
        let name = "\(tempDirectory)/.tmp-\(getpid())-\(SecureRandom.bytes(8).map { String($0, radix: 16) }.joined())"
        try createExclusive(name, bytes)
        guard rename(name, path) == 0 else {
            let e = errno
            unlink(name)
            throw ioError("rename into", path, e)
        }
        try fsyncPath(directory)
        if tempDirectory != directory { try fsyncPath(tempDirectory) }
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
        guard let st = try status(path) else { return }
        if isSymbolicLink(st) { throw linkInsideError(path) }
        guard isRegular(st) else { throw KeychainError(.corrupt, "\(path) is not a regular file") }
        try checkOwnership(st, path)
    }

    /// Opens a file of the keychain (created 0600 with `O_CREAT` in `flags`) under the rules of
    /// ``checkPrivateFile(_:)``, checked before the open (a FIFO would block it) and again on
    /// the open descriptor (the file may have been replaced in between).
    /// - Parameters:
    ///   - path: the file.
    ///   - flags: `open(2)` flags; `O_CLOEXEC | O_NOFOLLOW` are added.
    ///   - what: the file's role in messages, e.g. `lock file`.
    /// - Returns: the open descriptor (the caller closes it).
    /// - Throws: as ``checkPrivateFile(_:)``.
    static func openPrivateFile(_ path: String, flags: Int32, what: String) throws -> Int32 {
        try checkPrivateFile(path)
        let fd = open(path, flags | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw openError("open \(what)", path, errno) }
        var st = stat()
        do {
            guard fstat(fd, &st) == 0 else { throw ioError("stat", path) }
            guard isRegular(st) else { throw KeychainError(.corrupt, "\(path) is not a regular file") }
            try checkOwnership(st, path)
        } catch {
            close(fd)
            throw error
        }
        return fd
    }

    /// Runs `body` holding an exclusive `flock` on `lockPath` (created 0600 if absent; refused
    /// when it is a link, not a regular file, or group- or world-accessible). The kernel
    /// releases the lock when the holder exits or is killed, so a dead holder never blocks.
    static func withExclusiveLock<R>(_ lockPath: String, _ body: () throws -> R) throws -> R {
        let fd = try openPrivateFile(lockPath, flags: O_RDWR | O_CREAT, what: "lock file")
        defer { close(fd) }
        while flock(fd, LOCK_EX) != 0 {
            if errno == EINTR { continue }
            throw ioError("lock", lockPath)
        }
        defer { flock(fd, LOCK_UN) }
        return try body()
    }
}

