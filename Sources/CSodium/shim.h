// libsodium (pkg-config libsodium, Debian libsodium-dev): randomness, memzero, constant-time compare, base64, Argon2id.
#ifndef PUSHSEAL_CSODIUM_SHIM_H
#define PUSHSEAL_CSODIUM_SHIM_H
#include <sodium.h>
#endif
