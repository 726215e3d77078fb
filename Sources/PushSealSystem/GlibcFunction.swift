#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A glibc function the Swift Glibc module does not export (a GNU extension: `syncfs`,
/// `pipe2`, `posix_spawn_file_actions_addclosefrom_np`, `posix_spawn_file_actions_addchdir_np`), looked up by name with `dlsym` in the
/// process's global scope and cast to its C signature `F`.
/// - Returns: the function, or `nil` when this libc does not have it (and on other systems).
func glibcFunction<F>(_ name: String, as type: F.Type) -> F? {
#if os(Linux)
    guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), name) else { return nil }
    return unsafeBitCast(symbol, to: type)
#else
    return nil
#endif
}
