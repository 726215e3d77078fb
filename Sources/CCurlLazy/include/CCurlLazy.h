// libcurl for PushSealMediaFetch, loaded with dlopen on first use instead of linked: libcurl
// pulls in about 30 libraries (TLS, HTTP/2, IDN, LDAP, Kerberos, …), ~5 MiB of RSS and ~30 ms
// at every start of push-open, which a notification without media never needs.
//
// <curl/curl.h> gives the types and constants only; nothing here links libcurl. Call
// pushseal_lazy_curl_load() first: it loads the library and resolves the entry points in the
// list below, once per process; then every pushseal_lazy_curl_* function calls libcurl through
// that table. The typed setopt/getinfo wrappers come from pushseal_curl_calls.h, named
// pushseal_lazy_curl_<name>.
#ifndef PUSHSEAL_CCURL_LAZY_H
#define PUSHSEAL_CCURL_LAZY_H
#include <curl/curl.h>
#include <string.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>

/// The file dlopen loads: the soname of libcurl 7.16 to 8.x (ABI 4).
#if defined(__APPLE__)
#define PUSHSEAL_LAZY_CURL_LIBRARY "libcurl.4.dylib"
#else
#define PUSHSEAL_LAZY_CURL_LIBRARY "libcurl.so.4"
#endif

/// Loads libcurl (PUSHSEAL_LAZY_CURL_LIBRARY), resolves every entry point of the table and runs
/// curl_global_init(CURL_GLOBAL_DEFAULT), once per process (pthread_once; safe from any thread,
/// never retried). Returns 1 when every pushseal_lazy_curl_* function may be called (from any
/// thread that called this first), 0 when not: pushseal_lazy_curl_error() then says why.
int pushseal_lazy_curl_load(void);

/// Why pushseal_lazy_curl_load() returned 0 (dlerror's text, the missing symbol, or the failed
/// curl_global_init), NUL-terminated; "" when it returned 1 or was not called yet.
const char *pushseal_lazy_curl_error(void);

/// libcurl's non-variadic entry points PushSealMediaFetch calls: X(return type, name,
/// parameters, arguments) for functions with a result, V(name, parameters, arguments) for void
/// ones. Each gets a table entry and a wrapper pushseal_lazy_<name> with libcurl's signature.
#define PUSHSEAL_LAZY_CURL_FUNCTIONS(X, V) \
    X(curl_version_info_data *, curl_version_info, (CURLversion version), (version)) \
    X(CURL *, curl_easy_init, (void), ()) \
    V(curl_easy_cleanup, (CURL *handle), (handle)) \
    X(CURLM *, curl_multi_init, (void), ()) \
    X(CURLMcode, curl_multi_cleanup, (CURLM *multi), (multi)) \
    X(CURLMcode, curl_multi_add_handle, (CURLM *multi, CURL *handle), (multi, handle)) \
    X(CURLMcode, curl_multi_remove_handle, (CURLM *multi, CURL *handle), (multi, handle)) \
    X(CURLMcode, curl_multi_perform, (CURLM *multi, int *running), (multi, running)) \
    X(CURLMcode, curl_multi_poll, (CURLM *multi, struct curl_waitfd *extra, unsigned int count, int timeout_ms, int *numfds), \
      (multi, extra, count, timeout_ms, numfds)) \
    X(CURLMcode, curl_multi_wakeup, (CURLM *multi), (multi)) \
    X(CURLMsg *, curl_multi_info_read, (CURLM *multi, int *left), (multi, left)) \
    X(struct curl_slist *, curl_slist_append, (struct curl_slist *list, const char *text), (list, text)) \
    V(curl_slist_free_all, (struct curl_slist *list), (list)) \
    X(CURLU *, curl_url, (void), ()) \
    V(curl_url_cleanup, (CURLU *url), (url)) \
    X(CURLUcode, curl_url_set, (CURLU *url, CURLUPart part, const char *content, unsigned int flags), (url, part, content, flags)) \
    X(CURLUcode, curl_url_get, (const CURLU *url, CURLUPart part, char **content, unsigned int flags), (url, part, content, flags)) \
    V(curl_free, (void *pointer), (pointer))

/// The resolved entry points: the list above, plus the ones only the typed wrappers of
/// pushseal_curl_calls.h call (the variadic three, and curl_global_init, which the loader runs).
/// Written once by pushseal_lazy_curl_load (inside pthread_once), read-only afterwards.
struct pushseal_lazy_curl_functions {
#define PUSHSEAL_LAZY_CURL_ENTRY(type, name, parameters, arguments) type (*name) parameters;
#define PUSHSEAL_LAZY_CURL_VOID_ENTRY(name, parameters, arguments) void (*name) parameters;
    PUSHSEAL_LAZY_CURL_FUNCTIONS(PUSHSEAL_LAZY_CURL_ENTRY, PUSHSEAL_LAZY_CURL_VOID_ENTRY)
#undef PUSHSEAL_LAZY_CURL_ENTRY
#undef PUSHSEAL_LAZY_CURL_VOID_ENTRY
    CURLcode (*curl_global_init)(long flags);
    CURLcode (*curl_easy_setopt)(CURL *handle, CURLoption option, ...);
    CURLcode (*curl_easy_getinfo)(CURL *handle, CURLINFO info, ...);
    CURLMcode (*curl_multi_setopt)(CURLM *multi, CURLMoption option, ...);
};

/// The table; valid only after pushseal_lazy_curl_load() returned 1. Not for Swift.
extern struct pushseal_lazy_curl_functions pushseal_lazy_curl_table;

#define PUSHSEAL_LAZY_CURL_WRAP(type, name, parameters, arguments) \
    static inline type pushseal_lazy_##name parameters { return (pushseal_lazy_curl_table.name) arguments; }
#define PUSHSEAL_LAZY_CURL_VOID_WRAP(name, parameters, arguments) \
    static inline void pushseal_lazy_##name parameters { (pushseal_lazy_curl_table.name) arguments; }
PUSHSEAL_LAZY_CURL_FUNCTIONS(PUSHSEAL_LAZY_CURL_WRAP, PUSHSEAL_LAZY_CURL_VOID_WRAP)
#undef PUSHSEAL_LAZY_CURL_WRAP
#undef PUSHSEAL_LAZY_CURL_VOID_WRAP

// The typed wrappers (pushseal_lazy_curl_setopt_long, …), calling through the table.
#define PUSHSEAL_CURL_WRAPPER(name) pushseal_lazy_curl_##name
#define PUSHSEAL_CURL_CALL(function) (pushseal_lazy_curl_table.function)
#include "../pushseal_curl_calls.h"
#undef PUSHSEAL_CURL_WRAPPER
#undef PUSHSEAL_CURL_CALL

#endif
