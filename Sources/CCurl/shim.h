// libcurl's C API (pkg-config libcurl, Debian libcurl4-openssl-dev), linked at build time, for
// PushSealAPNs. The typed wrappers (pushseal_curl_setopt_long, …) are in pushseal_curl_calls.h,
// shared with CCurlLazy (PushSealMediaFetch's libcurl, loaded only on first use); here each
// wrapper calls libcurl directly.
#ifndef PUSHSEAL_CCURL_SHIM_H
#define PUSHSEAL_CCURL_SHIM_H
#include <curl/curl.h>
#include <string.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#define PUSHSEAL_CURL_WRAPPER(name) pushseal_curl_##name
#define PUSHSEAL_CURL_CALL(function) function
#include "pushseal_curl_calls.h"
#undef PUSHSEAL_CURL_WRAPPER
#undef PUSHSEAL_CURL_CALL

/// CURLOPT_READFUNCTION: the request body is given by this callback (PushSealAPNs: so that a
/// resend needs a rewind it can refuse, see CURLOPT_SEEKFUNCTION).
static inline CURLcode pushseal_curl_setopt_read_function(CURL *handle, curl_read_callback function) {
    return curl_easy_setopt(handle, CURLOPT_READFUNCTION, function);
}
/// CURLOPT_SEEKFUNCTION: libcurl asks it to rewind the body before it resends a request by itself.
static inline CURLcode pushseal_curl_setopt_seek_function(CURL *handle, curl_seek_callback function) {
    return curl_easy_setopt(handle, CURLOPT_SEEKFUNCTION, function);
}
/// CURLOPT_PREREQFUNCTION: called each time libcurl is about to send the request (its own
/// resends included), after the connection is set up.
static inline CURLcode pushseal_curl_setopt_prereq_function(CURL *handle, curl_prereq_callback function) {
    return curl_easy_setopt(handle, CURLOPT_PREREQFUNCTION, function);
}

/// CURLMOPT_SOCKETFUNCTION: libcurl names each socket to wait on and for what (the
/// curl_multi_socket_action API).
static inline CURLMcode pushseal_curl_multi_setopt_socket_function(CURLM *multi, curl_socket_callback function) {
    return curl_multi_setopt(multi, CURLMOPT_SOCKETFUNCTION, function);
}
/// CURLMOPT_TIMERFUNCTION: libcurl asks for curl_multi_socket_action(CURL_SOCKET_TIMEOUT) after a delay.
static inline CURLMcode pushseal_curl_multi_setopt_timer_function(CURLM *multi, curl_multi_timer_callback function) {
    return curl_multi_setopt(multi, CURLMOPT_TIMERFUNCTION, function);
}
/// A multi option taking a pointer (CURLMOPT_SOCKETDATA, CURLMOPT_TIMERDATA).
static inline CURLMcode pushseal_curl_multi_setopt_pointer(CURLM *multi, CURLMoption option, void *value) {
    return curl_multi_setopt(multi, option, value);
}

#endif
