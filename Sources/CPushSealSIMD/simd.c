// Vectorized base64 encoding and decoding and JSON string scanning; see include/pushseal_simd.h.
//
// Base64: the multiply-shift method of W. Muła and D. Lemire, "Faster Base64 Encoding and
// Decoding Using AVX2 Instructions", ACM TWEB 12(3), 2018: shuffle every 3 input bytes into a
// 32-bit lane as (b1, b0, b2, b1), pull out the four 6-bit indices with one 16-bit mulhi and
// one 16-bit mullo, then add a per-range offset chosen by a 16-entry byte shuffle.
#include "pushseal_simd.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>

#define PS_LEVEL_PORTABLE 0
#define PS_LEVEL_SSSE3 1
#define PS_LEVEL_AVX2 2

static _Atomic int detected_level = -1;

static int detect_level(void) {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    int level = PS_LEVEL_PORTABLE;
    if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_SSSE3)) {
        level = PS_LEVEL_SSSE3;
        // AVX2 needs the AVX bit (leaf 1, ECX bit 28), the AVX2 bit (leaf 7, EBX bit 5) and the
        // OS saving YMM state (OSXSAVE, then XCR0 bits 1 and 2) — Intel SDM vol. 1 §14.7.1.
        int osxsave = (ecx & bit_OSXSAVE) != 0 && (ecx & bit_AVX) != 0;
        if (osxsave && __get_cpuid_max(0, NULL) >= 7) {
            unsigned a7 = 0, b7 = 0, c7 = 0, d7 = 0;
            __cpuid_count(7, 0, a7, b7, c7, d7);
            unsigned lo = 0, hi = 0;
            __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
            if ((b7 & bit_AVX2) && (lo & 0x6) == 0x6) level = PS_LEVEL_AVX2;
        }
    }
    const char *cap = getenv("PUSHSEAL_SIMD");
    if (cap != NULL && cap[0] >= '0' && cap[0] <= '2' && cap[1] == '\0') {
        int c = cap[0] - '0';
        if (c < level) level = c;
    }
    return level;
}

int pushseal_simd_level(void) {
    int level = atomic_load_explicit(&detected_level, memory_order_relaxed);
    if (__builtin_expect(level < 0, 0)) {
        level = detect_level();
        atomic_store_explicit(&detected_level, level, memory_order_relaxed);
    }
    return level;
}

// The cached level, or `cap` when that is lower (tests); one relaxed load on the hot path.
static inline int level_capped(int cap) {
    int level = pushseal_simd_level();
    return cap < level ? cap : level;
}

// ---- base64 ----

__attribute__((target("ssse3")))
static inline __m128i b64_lane_ssse3(__m128i in) {
    const __m128i shuffle = _mm_setr_epi8(1, 0, 2, 1, 4, 3, 5, 4, 7, 6, 8, 7, 10, 9, 11, 10);
    const __m128i offsets = _mm_setr_epi8(71, -4, -4, -4, -4, -4, -4, -4, -4, -4, -4, -19, -16, 65, 0, 0);
    __m128i v = _mm_shuffle_epi8(in, shuffle);
    __m128i hi = _mm_mulhi_epu16(_mm_and_si128(v, _mm_set1_epi32(0x0fc0fc00)), _mm_set1_epi32(0x04000040));
    __m128i lo = _mm_mullo_epi16(_mm_and_si128(v, _mm_set1_epi32(0x003f03f0)), _mm_set1_epi32(0x01000010));
    __m128i idx = _mm_or_si128(hi, lo);  // one 6-bit index per byte
    // 0..25 -> 13 ('A'), 26..51 -> 0 ('a' - 26), 52..61 -> 1..10 ('0' - 52), 62 -> 11 ('+'), 63 -> 12 ('/')
    __m128i range = _mm_subs_epu8(idx, _mm_set1_epi8(51));
    range = _mm_or_si128(range, _mm_and_si128(_mm_cmpgt_epi8(_mm_set1_epi8(26), idx), _mm_set1_epi8(13)));
    return _mm_add_epi8(idx, _mm_shuffle_epi8(offsets, range));
}

__attribute__((target("ssse3")))
static size_t b64_ssse3(const uint8_t *src, size_t n, uint8_t *dst) {
    size_t i = 0, o = 0;
    // 16-byte loads, 12 bytes used: stop while 16 can still be read.
    while (i + 16 <= n) {
        __m128i in = _mm_loadu_si128((const __m128i *)(const void *)(src + i));
        _mm_storeu_si128((__m128i *)(void *)(dst + o), b64_lane_ssse3(in));
        i += 12;
        o += 16;
    }
    return i;
}

__attribute__((target("avx2")))
static inline __m256i b64_lanes_avx2(__m256i in) {
    const __m256i shuffle = _mm256_setr_epi8(1, 0, 2, 1, 4, 3, 5, 4, 7, 6, 8, 7, 10, 9, 11, 10,
                                             1, 0, 2, 1, 4, 3, 5, 4, 7, 6, 8, 7, 10, 9, 11, 10);
    const __m256i offsets = _mm256_setr_epi8(71, -4, -4, -4, -4, -4, -4, -4, -4, -4, -4, -19, -16, 65, 0, 0,
                                             71, -4, -4, -4, -4, -4, -4, -4, -4, -4, -4, -19, -16, 65, 0, 0);
    __m256i v = _mm256_shuffle_epi8(in, shuffle);
    __m256i hi = _mm256_mulhi_epu16(_mm256_and_si256(v, _mm256_set1_epi32(0x0fc0fc00)), _mm256_set1_epi32(0x04000040));
    __m256i lo = _mm256_mullo_epi16(_mm256_and_si256(v, _mm256_set1_epi32(0x003f03f0)), _mm256_set1_epi32(0x01000010));
    __m256i idx = _mm256_or_si256(hi, lo);
    __m256i range = _mm256_subs_epu8(idx, _mm256_set1_epi8(51));
    range = _mm256_or_si256(range, _mm256_and_si256(_mm256_cmpgt_epi8(_mm256_set1_epi8(26), idx), _mm256_set1_epi8(13)));
    return _mm256_add_epi8(idx, _mm256_shuffle_epi8(offsets, range));
}

__attribute__((target("avx2")))
static inline __m256i b64_load_avx2(const uint8_t *p) {
    // Each 128-bit lane takes 12 input bytes at its bytes 0..11: two 16-byte loads, 12 apart.
    __m128i lo = _mm_loadu_si128((const __m128i *)(const void *)p);
    __m128i hi = _mm_loadu_si128((const __m128i *)(const void *)(p + 12));
    return _mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1);
}

__attribute__((target("avx2")))
static size_t b64_avx2(const uint8_t *src, size_t n, uint8_t *dst) {
    size_t i = 0, o = 0;
    // Two vectors per step (48 bytes in, 64 out); the last load of a step reads src[i+36..<i+52].
    while (i + 52 <= n) {
        __m256i a = b64_lanes_avx2(b64_load_avx2(src + i));
        __m256i b = b64_lanes_avx2(b64_load_avx2(src + i + 24));
        _mm256_storeu_si256((__m256i *)(void *)(dst + o), a);
        _mm256_storeu_si256((__m256i *)(void *)(dst + o + 32), b);
        i += 48;
        o += 64;
    }
    while (i + 28 <= n) {
        _mm256_storeu_si256((__m256i *)(void *)(dst + o), b64_lanes_avx2(b64_load_avx2(src + i)));
        i += 24;
        o += 32;
    }
    return i + b64_ssse3(src + i, n - i, dst + o);
}

size_t pushseal_base64_encode_prefix_at_level(int level, const uint8_t *src, size_t n, uint8_t *dst) {
    switch (level_capped(level)) {
    case PS_LEVEL_AVX2: return b64_avx2(src, n, dst);
    case PS_LEVEL_SSSE3: return b64_ssse3(src, n, dst);
    default: return 0;
    }
}

// ---- base64 decoding ----
//
// The same paper's decoder: per byte, a shuffle on the high nibble and one on the low nibble give
// two bit sets whose AND is non-zero exactly for a byte outside A-Z a-z 0-9 + / (so a block
// holding anything else — '=', white space, '-', '_', a byte >= 0x80 — is left to the caller);
// a third shuffle gives the offset from the character to its 6-bit value ('/' shares its high
// nibble with '+' and is told apart by one compare); maddubs and madd pack four 6-bit values
// into three bytes per 32-bit lane; a shuffle (and for AVX2 a cross-lane permute) gathers them.

__attribute__((target("ssse3")))
static inline int b64d_block_ssse3(__m128i str, __m128i *out, __m128i *specials) {
    const __m128i lut_lo = _mm_setr_epi8(0x15, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x13, 0x1A, 0x1B, 0x1B, 0x1B, 0x1A);
    const __m128i lut_hi = _mm_setr_epi8(0x10, 0x10, 0x01, 0x02, 0x04, 0x08, 0x04, 0x08, 0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x10);
    const __m128i lut_roll = _mm_setr_epi8(0, 16, 19, 4, -65, -65, -71, -71, 0, 0, 0, 0, 0, 0, 0, 0);
    const __m128i mask_2f = _mm_set1_epi8(0x2F);
    __m128i hi_nibbles = _mm_and_si128(_mm_srli_epi32(str, 4), mask_2f);
    __m128i lo_nibbles = _mm_and_si128(str, mask_2f);
    __m128i hi = _mm_shuffle_epi8(lut_hi, hi_nibbles);
    __m128i lo = _mm_shuffle_epi8(lut_lo, lo_nibbles);
    if (_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_and_si128(lo, hi), _mm_setzero_si128())) != 0xFFFF) return 0;
    __m128i eq_2f = _mm_cmpeq_epi8(str, mask_2f);
    *specials = _mm_or_si128(*specials, _mm_or_si128(eq_2f, _mm_cmpeq_epi8(str, _mm_set1_epi8('+'))));
    __m128i v = _mm_add_epi8(str, _mm_shuffle_epi8(lut_roll, _mm_add_epi8(eq_2f, hi_nibbles)));
    __m128i ab_bc = _mm_maddubs_epi16(v, _mm_set1_epi32(0x01400140));
    __m128i abc = _mm_madd_epi16(ab_bc, _mm_set1_epi32(0x00011000));
    *out = _mm_shuffle_epi8(abc, _mm_setr_epi8(2, 1, 0, 6, 5, 4, 10, 9, 8, 14, 13, 12, -1, -1, -1, -1));
    return 1;
}

__attribute__((target("ssse3")))
static size_t b64d_ssse3(const uint8_t *src, size_t n, uint8_t *dst, int *saw_special) {
    size_t i = 0, o = 0;
    __m128i specials = _mm_setzero_si128();
    while (i + 16 <= n) {
        __m128i out;
        if (!b64d_block_ssse3(_mm_loadu_si128((const __m128i *)(const void *)(src + i)), &out, &specials)) break;
        // Exactly 12 bytes: 8, then 4.
        _mm_storel_epi64((__m128i *)(void *)(dst + o), out);
        uint32_t last = (uint32_t)_mm_cvtsi128_si32(_mm_srli_si128(out, 8));
        memcpy(dst + o + 8, &last, 4);
        i += 16;
        o += 12;
    }
    if (_mm_movemask_epi8(specials) != 0) *saw_special = 1;
    return i;
}

__attribute__((target("avx2")))
static size_t b64d_avx2(const uint8_t *src, size_t n, uint8_t *dst, int *saw_special) {
    const __m256i lut_lo = _mm256_setr_epi8(0x15, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x13, 0x1A, 0x1B, 0x1B, 0x1B, 0x1A,
                                            0x15, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x13, 0x1A, 0x1B, 0x1B, 0x1B, 0x1A);
    const __m256i lut_hi = _mm256_setr_epi8(0x10, 0x10, 0x01, 0x02, 0x04, 0x08, 0x04, 0x08, 0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x10,
                                            0x10, 0x10, 0x01, 0x02, 0x04, 0x08, 0x04, 0x08, 0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x10);
    const __m256i lut_roll = _mm256_setr_epi8(0, 16, 19, 4, -65, -65, -71, -71, 0, 0, 0, 0, 0, 0, 0, 0,
                                              0, 16, 19, 4, -65, -65, -71, -71, 0, 0, 0, 0, 0, 0, 0, 0);
    const __m256i mask_2f = _mm256_set1_epi8(0x2F);
    const __m256i pack = _mm256_setr_epi8(2, 1, 0, 6, 5, 4, 10, 9, 8, 14, 13, 12, -1, -1, -1, -1,
                                          2, 1, 0, 6, 5, 4, 10, 9, 8, 14, 13, 12, -1, -1, -1, -1);
    size_t i = 0, o = 0;
    __m256i specials = _mm256_setzero_si256();
    while (i + 32 <= n) {
        __m256i str = _mm256_loadu_si256((const __m256i *)(const void *)(src + i));
        __m256i hi_nibbles = _mm256_and_si256(_mm256_srli_epi32(str, 4), mask_2f);
        __m256i lo_nibbles = _mm256_and_si256(str, mask_2f);
        __m256i hi = _mm256_shuffle_epi8(lut_hi, hi_nibbles);
        __m256i lo = _mm256_shuffle_epi8(lut_lo, lo_nibbles);
        if (!_mm256_testz_si256(lo, hi)) break;
        __m256i eq_2f = _mm256_cmpeq_epi8(str, mask_2f);
        specials = _mm256_or_si256(specials, _mm256_or_si256(eq_2f, _mm256_cmpeq_epi8(str, _mm256_set1_epi8('+'))));
        __m256i v = _mm256_add_epi8(str, _mm256_shuffle_epi8(lut_roll, _mm256_add_epi8(eq_2f, hi_nibbles)));
        __m256i ab_bc = _mm256_maddubs_epi16(v, _mm256_set1_epi32(0x01400140));
        __m256i abc = _mm256_madd_epi16(ab_bc, _mm256_set1_epi32(0x00011000));
        __m256i out = _mm256_permutevar8x32_epi32(_mm256_shuffle_epi8(abc, pack), _mm256_setr_epi32(0, 1, 2, 4, 5, 6, 3, 7));
        // Exactly 24 bytes: 16, then 8.
        _mm_storeu_si128((__m128i *)(void *)(dst + o), _mm256_castsi256_si128(out));
        _mm_storel_epi64((__m128i *)(void *)(dst + o + 16), _mm256_extracti128_si256(out, 1));
        i += 32;
        o += 24;
    }
    if (_mm256_movemask_epi8(specials) != 0) *saw_special = 1;
    return i + b64d_ssse3(src + i, n - i, dst + o, saw_special);
}

size_t pushseal_base64_decode_prefix_at_level(int level, const uint8_t *src, size_t n, uint8_t *dst, int *saw_special) {
    switch (level_capped(level)) {
    case PS_LEVEL_AVX2: return b64d_avx2(src, n, dst, saw_special);
    case PS_LEVEL_SSSE3: return b64d_ssse3(src, n, dst, saw_special);
    default: return 0;
    }
}

// ---- JSON string scanning ----

// A byte needs a look when, as a signed byte, it is below 0x20 (controls and every byte >= 0x80)
// or equals '"' or '\'.

static size_t skip_sse2(const uint8_t *p, size_t i, size_t end) {
    const __m128i space = _mm_set1_epi8(0x20), quote = _mm_set1_epi8(0x22), backslash = _mm_set1_epi8(0x5C);
    while (i + 16 <= end) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(p + i));
        __m128i hit = _mm_or_si128(_mm_cmpgt_epi8(space, v), _mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)));
        unsigned mask = (unsigned)_mm_movemask_epi8(hit);
        if (mask != 0) return i + (size_t)__builtin_ctz(mask);
        i += 16;
    }
    return i;
}

__attribute__((target("avx2")))
static size_t skip_avx2(const uint8_t *p, size_t i, size_t end) {
    const __m256i space = _mm256_set1_epi8(0x20), quote = _mm256_set1_epi8(0x22), backslash = _mm256_set1_epi8(0x5C);
    while (i + 32 <= end) {
        __m256i v = _mm256_loadu_si256((const __m256i *)(const void *)(p + i));
        __m256i hit = _mm256_or_si256(_mm256_cmpgt_epi8(space, v),
                                      _mm256_or_si256(_mm256_cmpeq_epi8(v, quote), _mm256_cmpeq_epi8(v, backslash)));
        unsigned mask = (unsigned)_mm256_movemask_epi8(hit);
        if (mask != 0) return i + (size_t)__builtin_ctz(mask);
        i += 32;
    }
    return skip_sse2(p, i, end);
}

size_t pushseal_json_skip_plain_at_level(int level, const uint8_t *p, size_t i, size_t end) {
    switch (level_capped(level)) {
    case PS_LEVEL_AVX2: return skip_avx2(p, i, end);
    case PS_LEVEL_SSSE3: return skip_sse2(p, i, end);
    default: return i;
    }
}

#else  // not x86: the Swift callers do all the work.

int pushseal_simd_level(void) { return 0; }

size_t pushseal_base64_encode_prefix_at_level(int level, const uint8_t *src, size_t n, uint8_t *dst) {
    (void)level; (void)src; (void)n; (void)dst;
    return 0;
}

size_t pushseal_json_skip_plain_at_level(int level, const uint8_t *p, size_t i, size_t end) {
    (void)level; (void)p; (void)end;
    return i;
}

size_t pushseal_base64_decode_prefix_at_level(int level, const uint8_t *src, size_t n, uint8_t *dst, int *saw_special) {
    (void)level; (void)src; (void)n; (void)dst; (void)saw_special;
    return 0;
}

#endif

size_t pushseal_base64_decode_prefix(const uint8_t *src, size_t n, uint8_t *dst, int *saw_special) {
    return pushseal_base64_decode_prefix_at_level(2, src, n, dst, saw_special);
}

size_t pushseal_base64_encode_prefix(const uint8_t *src, size_t n, uint8_t *dst) {
    return pushseal_base64_encode_prefix_at_level(2, src, n, dst);
}

size_t pushseal_json_skip_plain(const uint8_t *p, size_t i, size_t end) {
    return pushseal_json_skip_plain_at_level(2, p, i, end);
}
