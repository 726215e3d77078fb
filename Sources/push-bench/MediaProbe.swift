import PushSealSystem
import Foundation
import PushSealCrypto
import PushSealExtension
import PushSealWire
import PushSealCLI

/// `push-bench media URL [--key BASE64] [--sha256 HEX]`: downloads one media file with the
/// extension's ``MediaDownloader`` into a fresh temporary directory (removed afterwards) and
/// prints `RESULT impl=pushseal op=media …`. Run it under `/usr/bin/time -f %M` to read the
/// peak RSS of a plain or sealed download (issue #6: under 24 MiB with a 9 MB image).
/// - Returns: the process exit code (0 ok, 64 usage, 70 the download failed).
func runMediaProbe(_ arguments: [String]) -> Int32 {
    let hint = "push-bench media URL [--key BASE64] [--sha256 HEX]"
    guard let options = BenchOptions.parse(arguments, BenchOptions.media, positionals: 1, hint: hint) else { return 64 }
    if options[Arguments.helpFlag] {
        print(usage)
        return 0
    }
    guard let url = options.positionals.first else {
        writeStandardError("push-bench: error: media needs a URL\nhint: \(hint)\n")
        return 64
    }
    let (keyText, sha256) = (options[BenchOptions.key], options[BenchOptions.sha256])
    if let sha256, sha256.utf8.count != 64 || Hex.decode(sha256) == nil {
        // A usage error, not a failed download (which the check would report after fetching).
        writeStandardError("push-bench: error: --sha256 must be 64 hex digits, got \(sha256.utf8.count) characters\nhint: \(hint)\n")
        return 64
    }
    var key: SecretBytes?
    if let keyText {
        guard var bytes = try? WireBase64.decodeSecret(keyText) else {
            writeStandardError("push-bench: error: --key is not base64\n")
            return 64
        }
        key = SecretBytes(copying: bytes)
        SecretBytes.wipe(&bytes)
    }
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("push-bench-media-\(UUID().uuidString)")
    do {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    } catch {
        writeStandardError("push-bench: error: cannot create a temporary directory\n")
        return 73
    }
    defer { try? FileManager.default.removeItem(at: directory) }
    let downloader = MediaDownloader(containerDirectory: directory, allowInsecureLoopback: true)
    let start = monotonicNanoseconds()
    do {
        let media = try downloader.download(MediaDownload(url: url, sha256Hex: sha256, key: key), timeoutSeconds: 60)
        let elapsed = Double(monotonicNanoseconds() - start) / 1e6
        print("RESULT impl=pushseal op=media sealed=\(key != nil) bytes=\(media.byteCount) downloaded=\(media.downloadedByteCount) type=\(media.mediaType.rawValue) ms=\(format(elapsed, decimals: 1))")
        return 0
    } catch {
        writeStandardError("push-bench: error: download failed: \(error)\n")
        return 70
    }
}
