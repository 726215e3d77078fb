// OpenSSL's libcrypto (pkg-config libcrypto, Debian libssl-dev): EVP AEAD, HKDF, SHA-256, ECDSA P-256 (PEM, DER), errors.
#ifndef PUSHSEAL_COPENSSL_SHIM_H
#define PUSHSEAL_COPENSSL_SHIM_H
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/err.h>
#include <openssl/rand.h>
#include <openssl/sha.h>
#include <openssl/crypto.h>
#include <openssl/core_names.h>
#include <openssl/params.h>
#include <openssl/pem.h>
#include <openssl/bio.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/x509.h>
#endif
