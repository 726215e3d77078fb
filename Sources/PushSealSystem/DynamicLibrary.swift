#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A shared library loaded at run time with `dlopen(RTLD_NOW | RTLD_LOCAL)`, never unloaded
/// (PushSeal loads its media fetcher this way, so a process that never shows media never maps
/// libcurl).
public struct DynamicLibrary: @unchecked Sendable {
    // @unchecked Sendable: the handle is an opaque, immutable token; dlsym is thread-safe.
    private let handle: UnsafeMutableRawPointer

    /// Loads the library at `path`.
    /// - Throws: ``SystemError`` `.notFound` when nothing is at `path`; `.io` with `dlerror()`'s
    ///   text when it does not load.
    public init(path: String) throws {
        guard access(path, F_OK) == 0 else { throw SystemError(.notFound, "not found", path: path, errno: errno) }
        guard let h = dlopen(path, RTLD_NOW | RTLD_LOCAL) else {
            throw SystemError(.io, dlerror().map { String(cString: $0) } ?? "dlopen failed", path: path)
        }
        handle = h
    }

    /// The address of the exported C symbol `name`, or `nil`. The caller casts it to the
    /// symbol's `@convention(c)` type (with `unsafeBitCast`, the one unavoidable unsafe step).
    public func symbol(named name: String) -> UnsafeMutableRawPointer? { dlsym(handle, name) }
}

/// The process environment.
public enum Environment {
    /// The value of environment variable `name`, or `nil` (`getenv`).
    public static func value(_ name: String) -> String? { getenv(name).map { String(cString: $0) } }

    /// Sets environment variable `name` to `value` (`setenv`, overwriting).
    public static func set(_ name: String, to value: String) { setenv(name, value, 1) }

    /// The directory of the running executable (`/proc/self/exe` resolved), or `nil`.
    public static func executableDirectory() -> String? {
        var buffer = [CChar](repeating: 0, count: 4097)
        let n = buffer.withUnsafeMutableBufferPointer { b -> Int in
            guard let base = b.baseAddress else { return -1 }
            return readlink("/proc/self/exe", base, 4096)
        }
        guard n > 0 else { return nil }
        let path = String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        guard let slash = path.lastIndex(of: "/") else { return nil }
        return String(path[..<slash])
    }
}
