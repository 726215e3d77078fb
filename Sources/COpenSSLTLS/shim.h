// OpenSSL's libssl (pkg-config libssl, Debian libssl-dev): TLS for PushSealAPNs' connections,
// used through CPushSealTLS.
#ifndef PUSHSEAL_COPENSSLTLS_SHIM_H
#define PUSHSEAL_COPENSSLTLS_SHIM_H
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#endif
