// push-open: what a device would display for an APNs payload (the decrypting PushNotification
// Service Extension run in its emulated host). Thin dispatcher; the command is OpenCommand.swift.
import PushSealCLI
import PushSealSystem
#if os(Linux)

// Debian's libcurl (loaded only for media) links librtmp, which links GnuTLS, whose library
// constructor initialises GnuTLS on load (~0.6 MiB of RSS) though no GnuTLS code runs here
// (http(s) over OpenSSL). Skip that implicit init. Set here, while the process is still
// single-threaded, because setenv races with getenv in other threads; only if unset.
if Environment.value("GNUTLS_NO_IMPLICIT_INIT") == nil { Environment.set("GNUTLS_NO_IMPLICIT_INIT", to: "1") }
#endif

pushOpenTool.main()
