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

    /// The error for a keychain path that is a symbolic link: keychains are opened only by their
    /// real path (the link's target could be changed under a running tool, and everything
    /// inside a keychain is opened with `O_NOFOLLOW` too). Suggests the link's target, if it
    /// resolves.
    static func symbolicLinkError(_ path: String, _ code: KeychainError.Code) -> KeychainError {
        var suggestion: String?
        if let resolved = realpath(path, nil) {
            suggestion = "give the keychain's real path: \(shellQuoted(String(cString: resolved)))"
            free(resolved)
        }
        return KeychainError(code, "\(path) is a symbolic link: a keychain is opened only by its real path, never through a link",
                             suggestion: suggestion)
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
        guard isDirectory(st) else { throw KeychainError(.corrupt, "\(path) is not a directory") }
        try checkOwnership(st, path)
        return true
    }

    /// Reads a whole regular file after checking owner and mode.
    /// - Returns: `nil` when the file does not exist.
    /// - Throws: `.insecurePermissions`, `.corrupt` (not a regular file, over `maxByteCount`), `.io`.
    static func readFile(_ path: String, maxByteCount: Int) throws -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        if fd < 0 {
            if errno == ENOENT { return nil }
            if errno == ELOOP { throw KeychainError(.corrupt, "\(path) is a symbolic link") }
            throw ioError("open", path)
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

    /// Runs `body` holding an exclusive `flock` on `lockPath` (created 0600 if absent). The kernel
    /// releases the lock when the holder exits or is killed, so a dead holder never blocks.
    static func withExclusiveLock<R>(_ lockPath: String, _ body: () throws -> R) throws -> R {
        let fd = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw ioError("open lock file", lockPath) }
        defer { close(fd) }
        while flock(fd, LOCK_EX) != 0 {
            if errno == EINTR { continue }
            throw ioError("lock", lockPath)
        }
        defer { flock(fd, LOCK_UN) }
        return try body()
    }
}

