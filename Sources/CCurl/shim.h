// libcurl's C API (pkg-config libcurl, Debian libcurl4-openssl-dev) for PushSealMediaFetch and PushSealAPNs.
// curl_easy_setopt and curl_easy_getinfo are variadic, which Swift cannot call: the typed
// static inline wrappers below pass each argument with the type libcurl expects for the option.
#ifndef PUSHSEAL_CCURL_SHIM_H
#define PUSHSEAL_CCURL_SHIM_H
#include <curl/curl.h>

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

#endif
