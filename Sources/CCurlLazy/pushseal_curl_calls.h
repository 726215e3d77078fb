// The typed wrappers over libcurl's C API for CCurlLazy (CCurlLazy.h): libcurl loaded with
// dlopen on first use, each call through the table of resolved entry points
// (PushSealMediaFetch). (PushSealAPNs linked libcurl with the same wrappers until it moved to
// libnghttp2; the macros below keep the wrappers independent of how libcurl is reached.)
// curl_easy_setopt, curl_easy_getinfo and curl_multi_setopt are variadic, which Swift cannot
// call: each wrapper passes its argument with the type libcurl expects for the option (a call
// through a variadic function pointer of the right type is the same call in C).
//
// Not a header of its own: the includer defines, before including it (no include guard: each
// includer has its own),
//   PUSHSEAL_CURL_WRAPPER(name)  the C name of wrapper `name` (e.g. pushseal_curl_##name);
//   PUSHSEAL_CURL_CALL(function) how to call libcurl's `function` (itself, or a table entry);
// and includes <curl/curl.h>, <string.h>, <sys/socket.h>, <netinet/in.h> and <arpa/inet.h>.
#if !defined(PUSHSEAL_CURL_WRAPPER) || !defined(PUSHSEAL_CURL_CALL)
#error "define PUSHSEAL_CURL_WRAPPER and PUSHSEAL_CURL_CALL before including pushseal_curl_calls.h"
#endif

/// curl_global_init(CURL_GLOBAL_DEFAULT): not thread-safe, call once (a Swift `static let`).
static inline CURLcode PUSHSEAL_CURL_WRAPPER(global_init)(void) { return PUSHSEAL_CURL_CALL(curl_global_init)(CURL_GLOBAL_DEFAULT); }

/// 1 when this libcurl can speak HTTP/2 (built with nghttp2), else 0.
static inline int PUSHSEAL_CURL_WRAPPER(has_http2)(void) {
    const curl_version_info_data *info = PUSHSEAL_CURL_CALL(curl_version_info)(CURLVERSION_NOW);
    return info != NULL && (info->features & CURL_VERSION_HTTP2) != 0;
}
/// An option taking a `long` (CURLOPTTYPE_LONG).
static inline CURLcode PUSHSEAL_CURL_WRAPPER(setopt_long)(CURL *handle, CURLoption option, long value) {
    return PUSHSEAL_CURL_CALL(curl_easy_setopt)(handle, option, value);
}
/// An option taking a `char *` or another object pointer (CURLOPTTYPE_STRINGPOINT, _OBJECTPOINT,
/// _SLISTPOINT, _CBPOINT); libcurl copies strings.
static inline CURLcode PUSHSEAL_CURL_WRAPPER(setopt_pointer)(CURL *handle, CURLoption option, const void *value) {
    return PUSHSEAL_CURL_CALL(curl_easy_setopt)(handle, option, value);
}
/// CURLOPT_WRITEFUNCTION or CURLOPT_HEADERFUNCTION.
static inline CURLcode PUSHSEAL_CURL_WRAPPER(setopt_write_function)(CURL *handle, CURLoption option, curl_write_callback function) {
    return PUSHSEAL_CURL_CALL(curl_easy_setopt)(handle, option, function);
}
/// CURLOPT_OPENSOCKETFUNCTION: every socket libcurl opens for a connection goes through it,
/// with the address it is about to connect to (after name resolution).
static inline CURLcode PUSHSEAL_CURL_WRAPPER(setopt_opensocket_function)(CURL *handle, curl_opensocket_callback function) {
    return PUSHSEAL_CURL_CALL(curl_easy_setopt)(handle, CURLOPT_OPENSOCKETFUNCTION, function);
}
/// An info of type `long` (CURLINFO_RESPONSE_CODE, …).
static inline CURLcode PUSHSEAL_CURL_WRAPPER(getinfo_long)(CURL *handle, CURLINFO info, long *value) {
    return PUSHSEAL_CURL_CALL(curl_easy_getinfo)(handle, info, value);
}
/// An info of type `curl_off_t` (CURLINFO_PRETRANSFER_TIME_T, CURLINFO_TOTAL_TIME_T, …).
static inline CURLcode PUSHSEAL_CURL_WRAPPER(getinfo_off_t)(CURL *handle, CURLINFO info, curl_off_t *value) {
    return PUSHSEAL_CURL_CALL(curl_easy_getinfo)(handle, info, value);
}
/// An info of type `char *` (CURLINFO_PRIVATE, CURLINFO_EFFECTIVE_URL, …).
static inline CURLcode PUSHSEAL_CURL_WRAPPER(getinfo_pointer)(CURL *handle, CURLINFO info, char **value) {
    return PUSHSEAL_CURL_CALL(curl_easy_getinfo)(handle, info, value);
}
/// A multi option taking a `long` (CURLMOPT_PIPELINING, CURLMOPT_MAX_HOST_CONNECTIONS, …).
static inline CURLMcode PUSHSEAL_CURL_WRAPPER(multi_setopt_long)(CURLM *multi, CURLMoption option, long value) {
    return PUSHSEAL_CURL_CALL(curl_multi_setopt)(multi, option, value);
}
/// The result code of a CURLMSG_DONE message (the `data` union of CURLMsg).
static inline CURLcode PUSHSEAL_CURL_WRAPPER(msg_result)(const CURLMsg *message) { return message->data.result; }

/// The IP address and port of a `curl_sockaddr`: copies the 4 (AF_INET) or 16 (AF_INET6)
/// address bytes to `bytes` (room for 16), the port in host order to `port`; returns 4 or 6,
/// or 0 for any other family or a length too short for it.
static inline int PUSHSEAL_CURL_WRAPPER(sockaddr_ip)(const struct curl_sockaddr *address, unsigned char *bytes, int *port) {
    if (address->family == AF_INET && address->addrlen >= sizeof(struct sockaddr_in)) {
        struct sockaddr_in in4;
        memcpy(&in4, &address->addr, sizeof in4);
        memcpy(bytes, &in4.sin_addr, 4);
        *port = ntohs(in4.sin_port);
        return 4;
    }
    if (address->family == AF_INET6 && address->addrlen >= sizeof(struct sockaddr_in6)) {
        struct sockaddr_in6 in6;
        memcpy(&in6, &address->addr, sizeof in6);
        memcpy(bytes, &in6.sin6_addr, 16);
        *port = ntohs(in6.sin6_port);
        return 6;
    }
    return 0;
}
