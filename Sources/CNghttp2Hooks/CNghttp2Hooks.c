// See include/CNghttp2Hooks.h. No nghttp2 header is needed (Debian's libnghttp2-dev is not a
// dependency): the few types are opaque pointers and the ABI of these functions is nghttp2's
// stable C API (libnghttp2.so.14).
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdatomic.h>
#include <stddef.h>
#include "CNghttp2Hooks.h"

typedef struct nghttp2_session nghttp2_session;
typedef struct nghttp2_session_callbacks nghttp2_session_callbacks;
typedef int (*on_stream_close_callback)(nghttp2_session *session, int32_t stream_id, uint32_t error_code, void *user_data);

/// NGHTTP2_STREAM_CLOSED (RFC 9113 §7).
#define H2_STREAM_CLOSED 5u

static _Atomic(pushseal_h2_stream_closed_hook) stream_closed_hook;
/// The callback libcurl set (the same function for every session libcurl makes).
static _Atomic(on_stream_close_callback) libcurl_on_stream_close;
static atomic_ulong suppressed_resets;

// libnghttp2's own entry points (the next definition after this object: libnghttp2.so.14).
// Resolved on first use; a race resolves the same address twice.
static void *next_symbol(const char *name) { return dlsym(RTLD_NEXT, name); }

static void *(*stream_user_data(void))(nghttp2_session *, int32_t) {
    static void *(*_Atomic resolved)(nghttp2_session *, int32_t);
    void *(*f)(nghttp2_session *, int32_t) = atomic_load(&resolved);
    if (!f) {
        f = (void *(*)(nghttp2_session *, int32_t))next_symbol("nghttp2_session_get_stream_user_data");
        atomic_store(&resolved, f);
    }
    return f;
}

static int wrapped_on_stream_close(nghttp2_session *session, int32_t stream_id, uint32_t error_code, void *user_data) {
    pushseal_h2_stream_closed_hook hook = atomic_load(&stream_closed_hook);
    void *(*get)(nghttp2_session *, int32_t) = stream_user_data();
    if (hook && get) {
        void *data = get(session, stream_id);
        if (data) hook(data, error_code);
    }
    on_stream_close_callback original = atomic_load(&libcurl_on_stream_close);
    return original ? original(session, stream_id, error_code, user_data) : 0;
}

void nghttp2_session_callbacks_set_on_stream_close_callback(nghttp2_session_callbacks *callbacks, on_stream_close_callback callback) {
    void (*real)(nghttp2_session_callbacks *, on_stream_close_callback) =
        (void (*)(nghttp2_session_callbacks *, on_stream_close_callback))next_symbol("nghttp2_session_callbacks_set_on_stream_close_callback");
    if (!real) return;
    on_stream_close_callback expected = NULL;
    // Wrap the first caller's callback (libcurl's); another caller's callback is set unwrapped.
    if (callback && (atomic_compare_exchange_strong(&libcurl_on_stream_close, &expected, callback) || expected == callback)) {
        real(callbacks, wrapped_on_stream_close);
    } else {
        real(callbacks, callback);
    }
}

int nghttp2_submit_rst_stream(nghttp2_session *session, uint8_t flags, int32_t stream_id, uint32_t error_code) {
    static int (*_Atomic real)(nghttp2_session *, uint8_t, int32_t, uint32_t);
    static void *(*_Atomic find)(nghttp2_session *, int32_t);
    int (*submit)(nghttp2_session *, uint8_t, int32_t, uint32_t) = atomic_load(&real);
    if (!submit) {
        submit = (int (*)(nghttp2_session *, uint8_t, int32_t, uint32_t))next_symbol("nghttp2_submit_rst_stream");
        atomic_store(&real, submit);
    }
    void *(*find_stream)(nghttp2_session *, int32_t) = atomic_load(&find);
    if (!find_stream) {
        find_stream = (void *(*)(nghttp2_session *, int32_t))next_symbol("nghttp2_session_find_stream");
        atomic_store(&find, find_stream);
    }
    if (!submit) return -501;  // NGHTTP2_ERR_INVALID_ARGUMENT: cannot happen with libnghttp2 loaded
    // A stream nghttp2 closed and freed already: the RST_STREAM would only feed the server's
    // rapid-reset limit (RFC 9113 §5.1: no frames but PRIORITY on a closed stream).
    if (error_code == H2_STREAM_CLOSED && stream_id > 0 && find_stream && find_stream(session, stream_id) == NULL) {
        atomic_fetch_add(&suppressed_resets, 1);
        return 0;
    }
    return submit(session, flags, stream_id, error_code);
}

void pushseal_h2_set_stream_closed_hook(pushseal_h2_stream_closed_hook hook) { atomic_store(&stream_closed_hook, hook); }

int pushseal_h2_hooks_active(void) { return atomic_load(&libcurl_on_stream_close) != NULL; }

unsigned long pushseal_h2_suppressed_resets(void) { return atomic_load(&suppressed_resets); }
