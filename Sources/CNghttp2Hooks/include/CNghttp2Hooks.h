// Two nghttp2 entry points that libcurl 7.88 calls, interposed for PushSealAPNs (linked into
// the process that links libcurl; each forwards to libnghttp2's own, found with dlsym(RTLD_NEXT)):
//
// - nghttp2_session_callbacks_set_on_stream_close_callback: libcurl's stream-close callback is
//   wrapped so that a hook sees every HTTP/2 stream close with its error code (RFC 9113 §7:
//   0 NO_ERROR, 7 REFUSED_STREAM — sent by the server, or set by nghttp2 for the streams above a
//   GOAWAY's last stream id) and the stream's user data (libcurl 7.88: the easy handle), before
//   libcurl acts on it. libcurl has no API that says how a stream ended; this is the structured
//   signal that tells a refused stream (not processed, safe to resend) from a connection that
//   died with the request on it (nghttp2 closes no stream then: it frees them).
// - nghttp2_submit_rst_stream: libcurl 7.88 submits RST_STREAM(STREAM_CLOSED) for every stream it
//   finishes after the first on a connection, though the stream is closed already (it clears its
//   own `closed` flag when it reads the close). A server with nghttp2's rapid-reset limit
//   (nghttp2 ≥ 1.57, CVE-2023-44487: a burst of 1000, then 33 a second) answers that flood with
//   GOAWAY(INTERNAL_ERROR) after ~2,000 requests, killing the connection with requests on it. An
//   RST_STREAM(STREAM_CLOSED) for a stream nghttp2 no longer has open is dropped here; every
//   other one is sent.
#ifndef PUSHSEAL_CNGHTTP2_HOOKS_H
#define PUSHSEAL_CNGHTTP2_HOOKS_H
#include <stdint.h>

/// HTTP/2 error code REFUSED_STREAM (RFC 9113 §7): the stream was not processed.
#define PUSHSEAL_H2_REFUSED_STREAM 7u

/// Called on the thread that runs the nghttp2 session (inside curl_multi_perform) when a stream
/// closes: `stream_user_data` is the stream's user data (libcurl 7.88: its easy handle; never
/// NULL here), `error_code` the stream's HTTP/2 error code.
typedef void (*pushseal_h2_stream_closed_hook)(void *stream_user_data, uint32_t error_code);

/// Sets the hook (one per process; NULL removes it). Thread-safe.
void pushseal_h2_set_stream_closed_hook(pushseal_h2_stream_closed_hook hook);

/// 1 once libcurl's stream-close callback was wrapped (an HTTP/2 session was set up through the
/// interposed setter), else 0: when 0 after a connection, the interposition is not in effect.
int pushseal_h2_hooks_active(void);

/// RST_STREAM frames for already closed streams not sent, since the process started.
unsigned long pushseal_h2_suppressed_resets(void);

#endif
