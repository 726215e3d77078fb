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

#endif
