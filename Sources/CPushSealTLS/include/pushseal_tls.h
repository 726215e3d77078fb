// CPushSealTLS: a non-blocking TCP connection with OpenSSL TLS on it, for PushSealAPNs' HTTP/2
// connections (libnghttp2 speaks HTTP/2 over the bytes; this moves them). TLS 1.2 or later,
// ALPN "h2" required, the peer verified against the system's CA store or a CA file, SNI and
// the host name (or IP address) checked. No threads, no global state but OpenSSL's own.
#ifndef PUSHSEAL_TLS_H
#define PUSHSEAL_TLS_H
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/// What a TLS step returned, beyond a byte count.
enum {
    /// Done (handshake), or bytes moved (read/write return the count instead).
    PUSHSEAL_TLS_OK = 0,
    /// Call again when the socket is readable.
    PUSHSEAL_TLS_WANT_READ = -1,
    /// Call again when the socket is writable.
    PUSHSEAL_TLS_WANT_WRITE = -2,
    /// The peer closed the connection (TLS close_notify or end of stream).
    PUSHSEAL_TLS_CLOSED = -3,
    /// A TLS or socket error (the connection is unusable).
    PUSHSEAL_TLS_ERROR = -4,
    /// The peer's certificate did not verify (chain, host name or IP address).
    PUSHSEAL_TLS_VERIFY_FAILED = -5,
    /// The server did not agree to HTTP/2 (ALPN "h2").
    PUSHSEAL_TLS_NO_H2 = -6,
};

/// An opaque TLS client configuration (OpenSSL SSL_CTX).
typedef struct pushseal_tls_context pushseal_tls_context;
/// An opaque TLS connection (OpenSSL SSL on a socket).
typedef struct pushseal_tls_connection pushseal_tls_connection;

/// A client configuration: TLS 1.2+, peer verification on, ALPN "h2". `ca_file` is a PEM file
/// to trust instead of the system's store, or NULL. NULL on failure (`error` gets a reason,
/// NUL-terminated, at most `error_size` bytes).
pushseal_tls_context *pushseal_tls_context_new(const char *ca_file, char *error, size_t error_size);
void pushseal_tls_context_free(pushseal_tls_context *context);

/// Starts a non-blocking TCP connection to `host`:`port` (name or IP literal; the first
/// address getaddrinfo gives whose connect starts), TCP_NODELAY and keep-alive on. Returns the socket, or -errno
/// (-EAI_* values are mapped to -EHOSTUNREACH). The connection completes when the socket is
/// writable: then call pushseal_tcp_connect_result.
int pushseal_tcp_connect(const char *host, int port);
/// 0 when the connection started by pushseal_tcp_connect succeeded, else the errno.
int pushseal_tcp_connect_result(int fd);
/// Closes a socket that has no TLS connection yet.
void pushseal_tcp_close(int fd);
/// The local TCP port of `fd`, or 0.
int pushseal_tcp_local_port(int fd);

/// A TLS connection over the connected socket `fd` (taken: freed with the connection) to
/// `host` (SNI unless an IP literal; the certificate must name it). NULL on failure.
pushseal_tls_connection *pushseal_tls_connection_new(pushseal_tls_context *context, int fd, const char *host);
/// Closes the socket and frees the connection (no close_notify: the peer sees the TCP close).
void pushseal_tls_connection_free(pushseal_tls_connection *connection);
/// One step of the handshake: PUSHSEAL_TLS_OK when done (and "h2" agreed), a WANT code, or an error.
int pushseal_tls_handshake(pushseal_tls_connection *connection);
/// Reads up to `size` bytes: the count (> 0), or a WANT code, PUSHSEAL_TLS_CLOSED or an error.
ssize_t pushseal_tls_read(pushseal_tls_connection *connection, void *buffer, size_t size);
/// Writes up to `size` bytes: the count (> 0), or a WANT code or an error. Give the same bytes
/// again after a WANT code (OpenSSL's rule). A write to a connection the peer reset raises
/// SIGPIPE: call it from a thread that blocks SIGPIPE (PushSealAPNs' transfer thread blocks
/// every signal), which then only sees EPIPE.
ssize_t pushseal_tls_write(pushseal_tls_connection *connection, const void *buffer, size_t size);
/// Sends TLS close_notify (once, best effort) and ends the sending side of the TCP connection
/// (shutdown SHUT_WR): the peer sees an orderly close and answers with its own.
void pushseal_tls_shutdown(pushseal_tls_connection *connection);
/// The negotiated protocol version text ("TLSv1.3"), for diagnostics.
const char *pushseal_tls_version(pushseal_tls_connection *connection);
/// An HTTP date (RFC 9110 IMF-fixdate, "Sun, 06 Nov 1994 08:49:37 GMT", as in a retry-after
/// header) as seconds since 1970, UTC, by the C library's strptime and timegm; -1 when `text`
/// is not exactly that form.
int64_t pushseal_http_date_seconds(const char *text);
#endif
