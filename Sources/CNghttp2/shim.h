// libnghttp2 (pkg-config libnghttp2, Debian libnghttp2-dev): the HTTP/2 client session of PushSealAPNs.
#ifndef PUSHSEAL_CNGHTTP2_SHIM_H
#define PUSHSEAL_CNGHTTP2_SHIM_H
#include <nghttp2/nghttp2.h>
#endif
