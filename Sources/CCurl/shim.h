// libcurl's C API (pkg-config libcurl, Debian libcurl4-openssl-dev) for PushSealMediaFetch.
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

#endif
