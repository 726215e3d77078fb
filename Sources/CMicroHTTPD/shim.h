// libmicrohttpd's C API (pkg-config libmicrohttpd, Debian libmicrohttpd-dev) for PushSealHTTP.
// <microhttpd.h> needs the socket and select types declared first.
#ifndef PUSHSEAL_CMICROHTTPD_SHIM_H
#define PUSHSEAL_CMICROHTTPD_SHIM_H
#include <stdarg.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <microhttpd.h>
#endif
