// libcurl's C API (pkg-config libcurl, Debian libcurl4-openssl-dev) for PushSealMediaFetch and PushSealAPNs.
// curl_easy_setopt and curl_easy_getinfo are variadic, which Swift cannot call: the typed
// static inline wrappers below pass each argument with the type libcurl expects for the option.
#ifndef PUSHSEAL_CCURL_SHIM_H
#define PUSHSEAL_CCURL_SHIM_H
#include <curl/curl.h>
#include <string.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>

/// curl_global_init(CURL_GLOBAL_DEFAULT): not thread-safe, call once (a Swift `static let`).
static inline CURLcode pushseal_curl_global_init(void) { return curl_global_init(CURL_GLOBAL_DEFAULT); }

/// 1 when this libcurl can speak HTTP/2 (built with nghttp2), else 0.
static inline int pushseal_curl_has_http2(void) {
    const curl_version_info_data *info = curl_version_info(CURLVERSION_NOW);
    return info != NULL && (info->features & CURL_VERSION_HTTP2) != 0;
}
/// An option taking a `long` (CURLOPTTYPE_LONG).
static inline CURLcode pushseal_curl_setopt_long(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}
/// An option taking a `char *` or another object pointer (CURLOPTTYPE_STRINGPOINT, _OBJECTPOINT,
/// _SLISTPOINT, _CBPOINT); libcurl copies strings.
static inline CURLcode pushseal_curl_setopt_pointer(CURL *handle, CURLoption option, const void *value) {
    return curl_easy_setopt(handle, option, value);
}
/// CURLOPT_WRITEFUNCTION or CURLOPT_HEADERFUNCTION.
static inline CURLcode pushseal_curl_setopt_write_function(CURL *handle, CURLoption option, curl_write_callback function) {
    return curl_easy_setopt(handle, option, function);
}
/// CURLOPT_XFERINFOFUNCTION.
static inline CURLcode pushseal_curl_setopt_xferinfo_function(CURL *handle, curl_xferinfo_callback function) {
    return curl_easy_setopt(handle, CURLOPT_XFERINFOFUNCTION, function);
}
/// An info of type `long` (CURLINFO_RESPONSE_CODE, …).
static inline CURLcode pushseal_curl_getinfo_long(CURL *handle, CURLINFO info, long *value) {
    return curl_easy_getinfo(handle, info, value);
}
/// An info of type `curl_off_t` (CURLINFO_PRETRANSFER_TIME_T, CURLINFO_TOTAL_TIME_T, …).
static inline CURLcode pushseal_curl_getinfo_off_t(CURL *handle, CURLINFO info, curl_off_t *value) {
    return curl_easy_getinfo(handle, info, value);
}
/// An info of type `char *` (CURLINFO_PRIVATE, CURLINFO_EFFECTIVE_URL, …).
static inline CURLcode pushseal_curl_getinfo_pointer(CURL *handle, CURLINFO info, char **value) {
    return curl_easy_getinfo(handle, info, value);
}
/// A multi option taking a `long` (CURLMOPT_PIPELINING, CURLMOPT_MAX_HOST_CONNECTIONS, …).
static inline CURLMcode pushseal_curl_multi_setopt_long(CURLM *multi, CURLMoption option, long value) {
    return curl_multi_setopt(multi, option, value);
}
/// The result code of a CURLMSG_DONE message (the `data` union of CURLMsg).
static inline CURLcode pushseal_curl_msg_result(const CURLMsg *message) { return message->data.result; }

/// CURLOPT_OPENSOCKETFUNCTION: every socket libcurl opens for a connection goes through it,
/// with the address it is about to connect to (after name resolution).
static inline CURLcode pushseal_curl_setopt_opensocket_function(CURL *handle, curl_opensocket_callback function) {
    return curl_easy_setopt(handle, CURLOPT_OPENSOCKETFUNCTION, function);
}
/// The IP address and port of a `curl_sockaddr`: copies the 4 (AF_INET) or 16 (AF_INET6)
/// address bytes to `bytes` (room for 16), the port in host order to `port`; returns 4 or 6,
/// or 0 for any other family or a length too short for it.
static inline int pushseal_curl_sockaddr_ip(const struct curl_sockaddr *address, unsigned char *bytes, int *port) {
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

/// CURLOPT_READFUNCTION: the request body is given by this callback (PushSealAPNs: so that a
/// resend needs a rewind it can refuse, see CURLOPT_SEEKFUNCTION).
static inline CURLcode pushseal_curl_setopt_read_function(CURL *handle, curl_read_callback function) {
    return curl_easy_setopt(handle, CURLOPT_READFUNCTION, function);
}
/// CURLOPT_SEEKFUNCTION: libcurl asks it to rewind the body before it resends a request by itself.
static inline CURLcode pushseal_curl_setopt_seek_function(CURL *handle, curl_seek_callback function) {
    return curl_easy_setopt(handle, CURLOPT_SEEKFUNCTION, function);
}
/// CURLOPT_DEBUGFUNCTION (with CURLOPT_VERBOSE): libcurl's informational text for one transfer.
static inline CURLcode pushseal_curl_setopt_debug_function(CURL *handle, curl_debug_callback function) {
    return curl_easy_setopt(handle, CURLOPT_DEBUGFUNCTION, function);
}
/// CURLOPT_PREREQFUNCTION: called each time libcurl is about to send the request (its own
/// resends included), after the connection is set up.
static inline CURLcode pushseal_curl_setopt_prereq_function(CURL *handle, curl_prereq_callback function) {
    return curl_easy_setopt(handle, CURLOPT_PREREQFUNCTION, function);
}

#endif
