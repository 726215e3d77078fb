// CPushSealSIMD: the byte loops of the sender's and the receiver's hot paths, vectorized (SSE2/SSSE3/AVX2 on
// x86-64, chosen once at run time from CPUID). Public data only: nothing here is constant-time,
// so it never sees a key. Each function does the whole blocks it can and returns how far it
// got; the Swift caller finishes the rest with its portable code, so on other CPUs (or with
// PUSHSEAL_SIMD=0 in the environment) both return their starting point and Swift does it all.
#ifndef PUSHSEAL_SIMD_H
#define PUSHSEAL_SIMD_H

#include <stddef.h>
#include <stdint.h>

/// Standard base64 (RFC 4648 §4, alphabet A-Z a-z 0-9 + /) of a prefix of `src[0..<n]`,
/// written to `dst`: encodes whole 3-byte groups only, never reads past `src + n` and writes
/// exactly 4/3 of the bytes it consumed. Returns the number of input bytes consumed (a
/// multiple of 3, possibly 0); the caller encodes `src[result..<n]` (and the padding) itself.
size_t pushseal_base64_encode_prefix(const uint8_t *src, size_t n, uint8_t *dst);

/// Decodes a prefix of the base64 text `src[0..<n]` into `dst`: whole blocks (32 characters
/// with AVX2, then 16) made only of the standard alphabet (A-Z a-z 0-9 + /), stopping at the
/// first block that holds any other byte ('=', white space, '-', '_', anything else) or when
/// fewer than 16 characters are left. Never reads past `src + n`; writes exactly 3/4 of the
/// characters it consumed. Sets `*saw_special` to 1 when a consumed block held '+' or '/'
/// (never clears it). Returns the characters consumed (a multiple of 16, possibly 0); the caller
/// decodes `src[result..<n]` itself, at a group boundary.
size_t pushseal_base64_decode_prefix(const uint8_t *src, size_t n, uint8_t *dst, int *saw_special);

/// The index of the first byte in `p[i..<end]` that a JSON string reader must look at:
/// a byte >= 0x80 (non-ASCII), < 0x20 (control), `"` or `\`. Stops early, at an index with
/// fewer than 16 bytes left, when it found none (AVX2 steps 32 bytes, then SSE2 16); never
/// reads past `p + end`. Returns `i` unchanged when `i >= end` or at level 0.
size_t pushseal_json_skip_plain(const uint8_t *p, size_t i, size_t end);

/// The functions above and below with their level capped at `level` (see below): each level can be
/// tested on a machine that has a higher one. A level above the machine's is lowered to it.
size_t pushseal_base64_encode_prefix_at_level(int level, const uint8_t *src, size_t n, uint8_t *dst);
size_t pushseal_json_skip_plain_at_level(int level, const uint8_t *p, size_t i, size_t end);
size_t pushseal_base64_decode_prefix_at_level(int level, const uint8_t *src, size_t n, uint8_t *dst, int *saw_special);

/// Which code the functions above use: 0 portable (they return their start), 1 SSSE3 (the
/// scan needs only SSE2, but one level keeps it simple: every x86-64 CPU since 2006 has SSSE3),
/// 2 AVX2. Read once, on first use, from CPUID and XGETBV; `PUSHSEAL_SIMD=0|1|2` in the
/// environment at that moment caps it (other values are ignored). Benchmarks use the cap to
/// time each path; tests call the `_at_level` functions.
int pushseal_simd_level(void);

#endif
