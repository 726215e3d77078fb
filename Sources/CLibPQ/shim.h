// libpq's C API (pkg-config libpq, Debian libpq-dev) for PushSealRegistry.
#ifndef PUSHSEAL_CLIBPQ_SHIM_H
#define PUSHSEAL_CLIBPQ_SHIM_H
#include <libpq-fe.h>
#endif
