/* The native mock APNs: the provider API (HTTP/2 over TLS) of Tests/MockAPNs/mock-apns.mjs, in C on
 * libnghttp2's server API and OpenSSL 3, for the benchmark (Node's http2 costs ~90 µs of CPU per
 * request; this one a few). Same command line, ready line, config and answers as the Node mock
 * (the reference; Tests/PushSealAPNsTests/MockDifferentialTests.swift sends both the same requests
 * and compares answers and record lines). Single-threaded epoll loop, non-blocking sockets,
 * TLS 1.2+ with ALPN h2 only, 127.0.0.1 only.
 *
 *   mock-apns-native --config CONFIG.json [--port 0] [--detached]
 *
 * Stops on SIGTERM/SIGINT, or when standard input ends unless --detached is given. Prints
 * `listening PORT CAFILE` when ready (a throwaway CA and server certificate for 127.0.0.1 /
 * localhost, made by the openssl command line at start).
 *
 * Config members: keys, topics, unregistered, expiredTokens, badTokens, record, initialStreams,
 * maxStreams, tokenUpdateSeconds, with the Node mock's meaning. The fault members (`faults`,
 * `script`) are not implemented here: a config naming them, or any other member, is refused at
 * start (exit 78) — use the Node mock for fault tests. */
#define _GNU_SOURCE
#include "json.h"

#include <nghttp2/nghttp2.h>
#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define EX_USAGE 64
#define EX_SOFTWARE 70
#define EX_OSERR 71
#define EX_CONFIG 78

static void die(int code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("mock-apns-native: error: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(code);
}

static void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) die(EX_OSERR, "out of memory");
    return p;
}

static char *xstrndup(const char *s, size_t n) {
    char *p = xmalloc(n + 1);
    memcpy(p, s, n);
    p[n] = 0;
    return p;
}

/* ---- A string-keyed hash table (open addressing) ---------------------------------------- */

typedef struct { char *key; size_t key_length; double number; int index; } slot;
typedef struct { slot *slots; size_t capacity, count; } table;

static uint64_t hash_bytes(const char *s, size_t n) {
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++) { h ^= (unsigned char)s[i]; h *= 1099511628211ULL; }
    return h;
}

static slot *table_find(const table *t, const char *key, size_t n) {
    if (!t->capacity) return NULL;
    for (size_t i = hash_bytes(key, n) & (t->capacity - 1);; i = (i + 1) & (t->capacity - 1)) {
        slot *s = &t->slots[i];
        if (!s->key) return NULL;
        if (s->key_length == n && memcmp(s->key, key, n) == 0) return s;
    }
}

static slot *table_put(table *t, const char *key, size_t n) {
    slot *s = table_find(t, key, n);
    if (s) return s;
    if ((t->count + 1) * 2 > t->capacity) {
        table bigger = { NULL, t->capacity ? t->capacity * 2 : 64, 0 };
        bigger.slots = calloc(bigger.capacity, sizeof(slot));
        if (!bigger.slots) die(EX_OSERR, "out of memory");
        for (size_t i = 0; i < t->capacity; i++) {
            slot *o = &t->slots[i];
            if (!o->key) continue;
            size_t j = hash_bytes(o->key, o->key_length) & (bigger.capacity - 1);
            while (bigger.slots[j].key) j = (j + 1) & (bigger.capacity - 1);
            bigger.slots[j] = *o;
            bigger.count++;
        }
        free(t->slots);
        *t = bigger;
    }
    size_t i = hash_bytes(key, n) & (t->capacity - 1);
    while (t->slots[i].key) i = (i + 1) & (t->capacity - 1);
    s = &t->slots[i];
    s->key = xstrndup(key, n);
    s->key_length = n;
    t->count++;
    return s;
}

static void table_clear(table *t) {
    for (size_t i = 0; i < t->capacity; i++) free(t->slots[i].key);
    memset(t->slots, 0, t->capacity * sizeof(slot));
    t->count = 0;
}

/* ---- The config ---------------------------------------------------------------------------- */

typedef struct { char *key_id; char *team_id; EVP_PKEY *public_key; } provider_key;

static provider_key *keys;
static size_t key_count;
static table topics, unregistered, expired_tokens, bad_tokens;
static int record_fd = -1;
static uint32_t initial_streams = 1, max_streams = 1000;
static double token_update_ms = 1200 * 1000;

static const char *implemented_members[] = {
    "keys", "topics", "unregistered", "expiredTokens", "badTokens", "record", "initialStreams", "maxStreams",
    "tokenUpdateSeconds", NULL,
};

static const json *member(const json *config, const char *name, enum json_type type, const char *what) {
    const json *v = json_get(config, name);
    if (!v || v->type == JSON_NULL) return NULL;  /* absent or null: the default, as `??` and `||` in the Node mock */
    if (v->type != type) die(EX_CONFIG, "config member \"%s\" must be %s", name, what);
    return v;
}

static EVP_PKEY *load_public_key(const char *p8) {
    FILE *f = fopen(p8, "r");
    if (!f) die(EX_CONFIG, "cannot read the provider key %s: %s", p8, strerror(errno));
    EVP_PKEY *key = PEM_read_PrivateKey(f, NULL, NULL, NULL);
    fclose(f);
    if (!key || EVP_PKEY_get_base_id(key) != EVP_PKEY_EC) die(EX_CONFIG, "%s is not a PKCS#8 P-256 private key (.p8)", p8);
    /* Only the public half is kept (as the Node mock's createPublicKey). */
    unsigned char *der = NULL;
    int n = i2d_PUBKEY(key, &der);
    EVP_PKEY_free(key);
    const unsigned char *p = der;
    EVP_PKEY *pub = n > 0 ? d2i_PUBKEY(NULL, &p, n) : NULL;
    OPENSSL_free(der);
    if (!pub) die(EX_CONFIG, "cannot take the public key of %s", p8);
    return pub;
}

static void token_table(const json *config, const char *name, table *t) {
    const json *v = member(config, name, JSON_OBJECT, "an object {TOKEN: milliseconds since 1970}");
    if (!v) return;
    for (size_t i = 0; i < v->count; i++) {
        if (v->items[i]->type != JSON_NUMBER) die(EX_CONFIG, "config member \"%s\": the value of %s must be a number (ms)", name, v->keys[i]);
        table_put(t, v->keys[i], strlen(v->keys[i]))->number = v->items[i]->number;
    }
}

static void string_set(const json *config, const char *name, table *t) {
    const json *v = member(config, name, JSON_ARRAY, "an array of strings");
    if (!v) return;
    for (size_t i = 0; i < v->count; i++) {
        if (v->items[i]->type != JSON_STRING) die(EX_CONFIG, "config member \"%s\" must hold strings only", name);
        table_put(t, v->items[i]->string, v->items[i]->string_length);
    }
}

static uint32_t stream_count(const json *config, const char *name, uint32_t fallback) {
    const json *v = member(config, name, JSON_NUMBER, "a number");
    if (!v) return fallback;
    if (v->number < 0 || v->number > 0x7fffffff || v->number != floor(v->number))
        die(EX_CONFIG, "config member \"%s\" must be a whole number of streams", name);
    return (uint32_t)v->number;
}

static void load_config(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) die(EX_CONFIG, "cannot read the config %s: %s", path, strerror(errno));
    char *text = NULL;
    size_t length = 0, cap = 0;
    for (;;) {
        if (length == cap) { cap = cap ? cap * 2 : 4096; text = realloc(text, cap); if (!text) die(EX_OSERR, "out of memory"); }
        size_t n = fread(text + length, 1, cap - length, f);
        if (n == 0) break;
        length += n;
    }
    fclose(f);
    json *config = json_parse(text, length);
    free(text);
    if (!config || config->type != JSON_OBJECT) die(EX_CONFIG, "the config %s is not a JSON object", path);
    for (size_t i = 0; i < config->count; i++) {
        const char *name = config->keys[i];
        bool known = false;
        for (const char **m = implemented_members; *m; m++) if (strcmp(*m, name) == 0) known = true;
        if (!known) {
            if (strcmp(name, "faults") == 0 || strcmp(name, "script") == 0)
                die(EX_CONFIG, "config member \"%s\" (fault scripts) is not implemented by the native mock\n"
                    "hint: use Tests/MockAPNs/mock-apns.mjs (Node) for fault tests", name);
            die(EX_CONFIG, "config member \"%s\" is not implemented by the native mock", name);
        }
    }
    const json *k = member(config, "keys", JSON_ARRAY, "an array of {keyId, teamId, p8}");
    if (k) {
        keys = xmalloc(k->count * sizeof *keys);
        for (size_t i = 0; i < k->count; i++) {
            const json *id = json_get(k->items[i], "keyId"), *team = json_get(k->items[i], "teamId"), *p8 = json_get(k->items[i], "p8");
            if (!id || id->type != JSON_STRING || !team || team->type != JSON_STRING || !p8 || p8->type != JSON_STRING)
                die(EX_CONFIG, "config member \"keys\": each key needs string members keyId, teamId and p8");
            keys[key_count].key_id = xstrndup(id->string, id->string_length);
            keys[key_count].team_id = xstrndup(team->string, team->string_length);
            keys[key_count].public_key = load_public_key(p8->string);
            key_count++;
        }
    }
    string_set(config, "topics", &topics);
    string_set(config, "badTokens", &bad_tokens);
    token_table(config, "unregistered", &unregistered);
    token_table(config, "expiredTokens", &expired_tokens);
    const json *record = member(config, "record", JSON_STRING, "a file path");
    if (record) {
        record_fd = open(record->string, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0666);
        if (record_fd < 0) die(EX_CONFIG, "cannot open the record file %s: %s", record->string, strerror(errno));
    }
    initial_streams = stream_count(config, "initialStreams", 1);
    max_streams = stream_count(config, "maxStreams", 1000);
    const json *update = member(config, "tokenUpdateSeconds", JSON_NUMBER, "a number of seconds");
    if (update) token_update_ms = update->number * 1000;
    json_free(config);
}

/* ---- Time, ids, text ------------------------------------------------------------------------ */

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return floor((double)ts.tv_sec * 1000 + (double)(ts.tv_nsec / 1000000));
}

/* A random (version 4) UUID in lower case, as Node's crypto.randomUUID(). */
static void random_uuid(char out[37]) {
    static unsigned char pool[4096];
    static size_t used = sizeof pool;
    if (used + 16 > sizeof pool) {
        if (RAND_bytes(pool, sizeof pool) != 1) die(EX_SOFTWARE, "RAND_bytes failed");
        used = 0;
    }
    unsigned char *b = pool + used;
    used += 16;
    b[6] = (unsigned char)((b[6] & 0x0F) | 0x40);
    b[8] = (unsigned char)((b[8] & 0x3F) | 0x80);
    static const char digits[] = "0123456789abcdef";
    int o = 0;
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10) out[o++] = '-';
        out[o++] = digits[b[i] >> 4];
        out[o++] = digits[b[i] & 15];
    }
    out[36] = 0;
}

/* A growable byte buffer. */
typedef struct { char *data; size_t length, capacity, offset; } buffer;

static void buffer_reserve(buffer *b, size_t extra) {
    if (b->length + extra <= b->capacity) return;
    size_t cap = b->capacity ? b->capacity : 4096;
    while (cap < b->length + extra) cap *= 2;
    b->data = realloc(b->data, cap);
    if (!b->data) die(EX_OSERR, "out of memory");
    b->capacity = cap;
}

static void buffer_add(buffer *b, const void *p, size_t n) {
    buffer_reserve(b, n);
    memcpy(b->data + b->length, p, n);
    b->length += n;
}

static void buffer_str(buffer *b, const char *s) { buffer_add(b, s, strlen(s)); }

/* A number as JavaScript prints it (integers without a fraction, else the shortest text that reads back). */
static void buffer_number(buffer *b, double v) {
    char text[40];
    if (v == floor(v) && fabs(v) < 1e21) snprintf(text, sizeof text, "%.0f", v);
    else for (int precision = 1; precision <= 17; precision++) {
        snprintf(text, sizeof text, "%.*g", precision, v);
        if (strtod(text, NULL) == v) break;
    }
    buffer_str(b, text);
}

/* JSON.stringify of a header value as Node's http2 gives it: each byte one character (latin1). */
static void buffer_quoted(buffer *b, const char *s, size_t n) {
    buffer_reserve(b, n * 6 + 2);
    char *o = b->data + b->length;
    *o++ = '"';
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') { *o++ = '\\'; *o++ = (char)c; }
        else if (c >= 0x80) { *o++ = (char)(0xC0 | (c >> 6)); *o++ = (char)(0x80 | (c & 0x3F)); }
        else if (c >= 0x20) *o++ = (char)c;
        else {
            *o++ = '\\';
            switch (c) {
            case '\b': *o++ = 'b'; break;
            case '\f': *o++ = 'f'; break;
            case '\n': *o++ = 'n'; break;
            case '\r': *o++ = 'r'; break;
            case '\t': *o++ = 't'; break;
            default: o += sprintf(o, "u%04x", c);
            }
        }
    }
    *o++ = '"';
    b->length = (size_t)(o - b->data);
}

/* ---- Provider tokens ------------------------------------------------------------------------ */

/* A token's verdict: valid (key, iat), else the answer (403 InvalidProviderToken). */
typedef struct { bool valid; int key; double iat; } verdict;

static table verified;  /* jwt → key index (slot.index) and iat (slot.number): valid tokens only */

static size_t base64url_decode(const char *s, size_t n, unsigned char *out, bool *ok) {
    uint32_t acc = 0;
    int bits = 0;
    size_t o = 0;
    *ok = true;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        int v;
        if (c >= 'A' && c <= 'Z') v = c - 'A';
        else if (c >= 'a' && c <= 'z') v = c - 'a' + 26;
        else if (c >= '0' && c <= '9') v = c - '0' + 52;
        else if (c == '-' || c == '+') v = 62;
        else if (c == '_' || c == '/') v = 63;
        else if (c == '=') break;
        else { *ok = false; return 0; }
        acc = (acc << 6) | (uint32_t)v;
        bits += 6;
        if (bits >= 8) { bits -= 8; out[o++] = (unsigned char)(acc >> bits); }
    }
    return o;
}

static json *base64_json(const char *s, size_t n) {
    unsigned char *bytes = xmalloc(n);
    bool ok;
    size_t len = base64url_decode(s, n, bytes, &ok);
    json *v = ok ? json_parse((const char *)bytes, len) : NULL;
    free(bytes);
    return v;
}

static bool verify_signature(EVP_PKEY *key, const char *signed_part, size_t signed_length, const char *sig64, size_t sig_length) {
    unsigned char raw[128];
    if (sig_length > 172) return false;
    bool ok;
    size_t n = base64url_decode(sig64, sig_length, raw, &ok);
    if (!ok || n != 64) return false;  /* IEEE P1363: r ‖ s, 32 bytes each */
    ECDSA_SIG *sig = ECDSA_SIG_new();
    BIGNUM *r = BN_bin2bn(raw, 32, NULL), *s = BN_bin2bn(raw + 32, 32, NULL);
    if (!sig || !r || !s || !ECDSA_SIG_set0(sig, r, s)) { ECDSA_SIG_free(sig); BN_free(r); BN_free(s); return false; }
    unsigned char *der = NULL;
    int der_length = i2d_ECDSA_SIG(sig, &der);
    ECDSA_SIG_free(sig);
    if (der_length <= 0) return false;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    bool good = ctx && EVP_DigestVerifyInit(ctx, NULL, EVP_sha256(), NULL, key) == 1 &&
                EVP_DigestVerify(ctx, der, (size_t)der_length, (const unsigned char *)signed_part, signed_length) == 1;
    EVP_MD_CTX_free(ctx);
    OPENSSL_free(der);
    ERR_clear_error();
    return good;
}

static verdict verify_token(const char *jwt, size_t n) {
    verdict bad = { false, -1, 0 };
    const char *dot1 = memchr(jwt, '.', n);
    if (!dot1) return bad;
    const char *dot2 = memchr(dot1 + 1, '.', (size_t)(jwt + n - dot1 - 1));
    if (!dot2 || memchr(dot2 + 1, '.', (size_t)(jwt + n - dot2 - 1))) return bad;
    json *header = base64_json(jwt, (size_t)(dot1 - jwt));
    json *claims = header ? base64_json(dot1 + 1, (size_t)(dot2 - dot1 - 1)) : NULL;
    verdict v = bad;
    if (!header || !claims || header->type != JSON_OBJECT || claims->type != JSON_OBJECT) goto done;
    const json *kid = json_get(header, "kid"), *alg = json_get(header, "alg");
    int key = -1;
    if (kid && kid->type == JSON_STRING)
        for (size_t i = 0; i < key_count; i++)
            if (strlen(keys[i].key_id) == kid->string_length && memcmp(keys[i].key_id, kid->string, kid->string_length) == 0) key = (int)i;
    if (!alg || alg->type != JSON_STRING || strcmp(alg->string, "ES256") != 0 || alg->string_length != 5 || key < 0) goto done;
    const json *iss = json_get(claims, "iss");
    if (!iss || iss->type != JSON_STRING || iss->string_length != strlen(keys[key].team_id) ||
        memcmp(iss->string, keys[key].team_id, iss->string_length) != 0) goto done;
    if (!verify_signature(keys[key].public_key, jwt, (size_t)(dot2 - jwt), dot2 + 1, (size_t)(jwt + n - dot2 - 1))) goto done;
    const json *iat = json_get(claims, "iat");
    if (!iat || iat->type != JSON_NUMBER || !isfinite(iat->number) || iat->number != floor(iat->number)) goto done;
    v.valid = true;
    v.key = key;
    v.iat = iat->number;
done:
    json_free(header);
    json_free(claims);
    return v;
}

/* ---- Connections and streams ---------------------------------------------------------------- */

enum { H_METHOD, H_PATH, H_AUTHORIZATION, H_PUSH_TYPE, H_TOPIC, H_PRIORITY, H_EXPIRATION, H_COLLAPSE_ID, H_APNS_ID, H_COUNT };
static const char *header_names[H_COUNT] = {
    ":method", ":path", "authorization", "apns-push-type", "apns-topic", "apns-priority", "apns-expiration", "apns-collapse-id", "apns-id",
};

static size_t header_name_lengths[H_COUNT];

typedef struct { char *value; size_t length; } header_value;  /* value NULL: absent */

typedef struct stream_data {
    int32_t id;
    header_value h[H_COUNT];
    size_t bytes;
    char body[160];
    size_t body_length, body_offset;
    size_t arena_used;
    unsigned heap_values;  /* bit i: h[i] has its own allocation */
    char arena[1024];  /* the header values, when they fit (else each its own allocation) */
} stream_data;

typedef struct { int key; double iat, seen_at; } session_token;

typedef struct connection {
    int fd;
    SSL *ssl;
    nghttp2_session *h2;
    bool handshaken, closing, dirty, write_blocked;
    uint32_t events;
    int id;
    buffer out;
    struct connection *next_dirty;
    /* Provider token state (as the Node mock's session fields). */
    char *last_authorization;
    size_t last_authorization_length;
    verdict last_entry;
    session_token *tokens;
    size_t token_count;
    bool token_valid;
    uint32_t current_limit;
} connection;

static int epoll_fd;
static int session_count;
static connection *dirty_list;
static buffer record_lines;
static char temp_dir[4096];

static void mark_dirty(connection *c) {
    if (c->dirty) return;
    c->dirty = true;
    c->next_dirty = dirty_list;
    dirty_list = c;
}

static void set_limit(connection *c, uint32_t limit) {
    if (c->current_limit == limit) return;
    c->current_limit = limit;
    nghttp2_settings_entry e = { NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, limit };
    nghttp2_submit_settings(c->h2, NGHTTP2_FLAG_NONE, &e, 1);
}

typedef struct { int status; const char *reason; bool has_timestamp; double timestamp; } answer;  /* status 0: 200 */

static answer reject(int status, const char *reason) { answer a = { status, reason, false, 0 }; return a; }

static bool is_hex(const char *s, size_t n) {
    if (n == 0) return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))) return false;
    }
    return true;
}

static bool header_is(const header_value *h, const char *text) {
    return h->value && h->length == strlen(text) && memcmp(h->value, text, h->length) == 0;
}

static answer check_token(connection *c, const header_value *auth) {
    answer none = { 0, NULL, false, 0 };
    if (!auth->value || auth->length < 7 || memcmp(auth->value, "bearer ", 7) != 0) return reject(403, "MissingProviderToken");
    /* The verdict of the last token string on this connection, else of any seen before: the
     * ES256 signature is verified once per distinct token string; the checks below that depend
     * on time and on the connection run for every request. */
    verdict entry;
    if (c->last_authorization && auth->length == c->last_authorization_length &&
        memcmp(auth->value, c->last_authorization, auth->length) == 0) {
        entry = c->last_entry;
    } else {
        const char *jwt = auth->value + 7;
        size_t n = auth->length - 7;
        slot *s = table_find(&verified, jwt, n);
        if (s) { entry.valid = true; entry.key = s->index; entry.iat = s->number; }
        else {
            entry = verify_token(jwt, n);
            if (entry.valid) {
                if (verified.count > 10000) table_clear(&verified);
                s = table_put(&verified, jwt, n);
                s->index = entry.key;
                s->number = entry.iat;
            }
        }
        if (!entry.valid) return reject(403, "InvalidProviderToken");
        free(c->last_authorization);
        c->last_authorization = xstrndup(auth->value, auth->length);
        c->last_authorization_length = auth->length;
        c->last_entry = entry;
    }
    double now = now_ms();
    /* A connection whose provider token changes more often than every tokenUpdateSeconds. */
    session_token *newest = NULL;
    for (size_t i = 0; i < c->token_count; i++) if (c->tokens[i].key == entry.key) newest = &c->tokens[i];
    if (newest && newest->iat != entry.iat && entry.iat > newest->iat) {
        if (now - newest->seen_at < token_update_ms) return reject(429, "TooManyProviderTokenUpdates");
    }
    if (!newest) {
        c->tokens = realloc(c->tokens, (c->token_count + 1) * sizeof *c->tokens);
        if (!c->tokens) die(EX_OSERR, "out of memory");
        newest = &c->tokens[c->token_count++];
        newest->key = entry.key;
        newest->iat = entry.iat;
        newest->seen_at = now;
    } else if (entry.iat > newest->iat) {
        newest->iat = entry.iat;
        newest->seen_at = now;
    }
    if (now / 1000 - entry.iat > 3600) return reject(403, "ExpiredProviderToken");
    return none;
}

static const struct { const char *type, *suffix; } push_types[] = {
    { "alert", "" }, { "background", "" }, { "location", ".location-query" }, { "voip", ".voip" },
    { "complication", ".complication" }, { "fileprovider", ".pushkit.fileprovider" }, { "mdm", "" },
    { "liveactivity", ".push-type.liveactivity" }, { "pushtotalk", ".voip-ptt" }, { "widgets", ".push-type.widgets" },
    { "controls", ".push-type.controls" },
};

static answer check_headers(const stream_data *st, const char *push_type, size_t push_type_length) {
    answer none = { 0, NULL, false, 0 };
    const char *suffix = NULL;
    for (size_t i = 0; i < sizeof push_types / sizeof push_types[0]; i++)
        if (strlen(push_types[i].type) == push_type_length && memcmp(push_types[i].type, push_type, push_type_length) == 0)
            suffix = push_types[i].suffix;
    if (!suffix) return reject(400, "InvalidPushType");
    const header_value *topic = &st->h[H_TOPIC];
    if (!topic->value || topic->length == 0) return reject(400, "MissingTopic");
    size_t sl = strlen(suffix);
    if (topic->length < sl || memcmp(topic->value + topic->length - sl, suffix, sl) != 0 ||
        !table_find(&topics, topic->value, topic->length - sl)) return reject(400, "TopicDisallowed");
    const header_value *priority = &st->h[H_PRIORITY];
    if (priority->value && !header_is(priority, "10") && !header_is(priority, "5") && !header_is(priority, "1"))
        return reject(400, "BadPriority");
    if (push_type_length == 10 && memcmp(push_type, "background", 10) == 0 && priority->value && !header_is(priority, "5"))
        return reject(400, "BadPriority");
    const header_value *expiration = &st->h[H_EXPIRATION];
    if (expiration->value) {
        bool digits = expiration->length > 0;
        for (size_t i = 0; i < expiration->length; i++) if (expiration->value[i] < '0' || expiration->value[i] > '9') digits = false;
        if (!digits) return reject(400, "BadExpirationDate");
    }
    if (st->h[H_COLLAPSE_ID].value && st->h[H_COLLAPSE_ID].length > 64) return reject(400, "BadCollapseId");
    return none;
}

static bool is_uuid(const header_value *h) {
    if (h->length != 36) return false;
    for (size_t i = 0; i < 36; i++) {
        char c = h->value[i];
        if (i == 8 || i == 13 || i == 18 || i == 23) { if (c != '-') return false; }
        else if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))) return false;
    }
    return true;
}

/* The APNs answer for a complete request (status 0: 200), in the Node mock's order of checks. */
static answer validate(connection *c, const stream_data *st, const char *token, size_t token_length) {
    answer none = { 0, NULL, false, 0 };
    if (!header_is(&st->h[H_METHOD], "POST")) return reject(405, "MethodNotAllowed");
    const header_value *path = &st->h[H_PATH];
    if (!path->value || path->length < 10 || memcmp(path->value, "/3/device/", 10) != 0) return reject(404, "BadPath");
    if (token_length == 0) return reject(400, "MissingDeviceToken");
    if (!is_hex(token, token_length) || token_length % 2 != 0) return reject(400, "BadDeviceToken");
    answer auth = check_token(c, &st->h[H_AUTHORIZATION]);
    if (auth.status) return auth;
    const char *push_type = st->h[H_PUSH_TYPE].value ? st->h[H_PUSH_TYPE].value : "alert";
    size_t push_type_length = st->h[H_PUSH_TYPE].value ? st->h[H_PUSH_TYPE].length : 5;
    answer headers = check_headers(st, push_type, push_type_length);
    if (headers.status) return headers;
    if (st->h[H_APNS_ID].value && !is_uuid(&st->h[H_APNS_ID])) return reject(400, "BadMessageId");
    if (st->bytes == 0) return reject(400, "PayloadEmpty");
    bool voip = push_type_length == 4 && memcmp(push_type, "voip", 4) == 0;
    if (st->bytes > (voip ? 5120u : 4096u)) return reject(413, "PayloadTooLarge");
    if (table_find(&bad_tokens, token, token_length)) return reject(400, "BadDeviceToken");
    slot *s = table_find(&unregistered, token, token_length);
    if (s) { answer a = { 410, "Unregistered", true, s->number }; return a; }
    s = table_find(&expired_tokens, token, token_length);
    if (s) { answer a = { 410, "ExpiredToken", true, s->number }; return a; }
    return none;
}

static void record_value(const header_value *h) {
    if (h->value) buffer_quoted(&record_lines, h->value, h->length);
    else buffer_str(&record_lines, "null");
}

static void write_record(void) {
    if (record_fd < 0 || record_lines.length == 0) return;
    size_t done = 0;
    while (done < record_lines.length) {
        ssize_t n = write(record_fd, record_lines.data + done, record_lines.length - done);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) die(EX_OSERR, "cannot write the record: %s", strerror(errno));
        done += (size_t)n;
    }
    record_lines.length = 0;
}

/* The HTTP date of now (Node's http2 adds a `date` header to every response). */
static const char *http_date(void) {
    static char text[40];
    static time_t last;
    time_t t = time(NULL);
    if (t != last) {
        struct tm tm;
        gmtime_r(&t, &tm);
        strftime(text, sizeof text, "%a, %d %b %Y %H:%M:%S GMT", &tm);
        last = t;
    }
    return text;
}

static ssize_t read_body(nghttp2_session *session, int32_t stream_id, uint8_t *buf, size_t length, uint32_t *flags,
                         nghttp2_data_source *source, void *user) {
    (void)session; (void)stream_id; (void)user;
    stream_data *st = source->ptr;
    size_t n = st->body_length - st->body_offset;
    if (n > length) n = length;
    memcpy(buf, st->body + st->body_offset, n);
    st->body_offset += n;
    if (st->body_offset == st->body_length) *flags |= NGHTTP2_DATA_FLAG_EOF;
    return (ssize_t)n;
}

/* An answer about the provider token (the Node mock: reason ends in ProviderToken, or TooManyProviderTokenUpdates). */
static bool is_provider_token_answer(const char *reason) {
    size_t n = strlen(reason);
    return (n >= 13 && memcmp(reason + n - 13, "ProviderToken", 13) == 0) || (n == 27 && memcmp(reason, "TooManyProviderTokenUpdates", 27) == 0);
}

#define NV(name, value, value_length) { (uint8_t *)(name), (uint8_t *)(value), sizeof(name) - 1, (value_length), NGHTTP2_NV_FLAG_NO_COPY_NAME }

static void request_ended(connection *c, stream_data *st) {
    const header_value *path = &st->h[H_PATH];
    bool device = path->value && path->length >= 10 && memcmp(path->value, "/3/device/", 10) == 0;
    const char *token = device ? path->value + 10 : "";
    size_t token_length = device ? path->length - 10 : 0;
    double t = record_fd >= 0 ? now_ms() : 0;
    answer a = validate(c, st, token, token_length);
    bool auth = a.status && is_provider_token_answer(a.reason);
    if (!a.status || !auth) { if (!c->token_valid) { c->token_valid = true; set_limit(c, max_streams); } }
    else if (a.status == 403) { c->token_valid = false; set_limit(c, initial_streams); }
    int status = a.status ? a.status : 200;
    if (record_fd >= 0) {
        buffer *b = &record_lines;
        buffer_str(b, "{\"t\":");
        buffer_number(b, t);
        char numbers[64];
        snprintf(numbers, sizeof numbers, ",\"session\":%d,\"stream\":%d,\"token\":", c->id, (int)st->id);
        buffer_str(b, numbers);
        buffer_quoted(b, token, token_length);
        buffer_str(b, ",\"apnsId\":");
        record_value(&st->h[H_APNS_ID]);
        buffer_str(b, ",\"collapseId\":");
        record_value(&st->h[H_COLLAPSE_ID]);
        snprintf(numbers, sizeof numbers, ",\"status\":%d,\"reason\":", status);
        buffer_str(b, numbers);
        if (a.status) buffer_quoted(b, a.reason, strlen(a.reason)); else buffer_str(b, "null");
        buffer_str(b, ",\"pushType\":");
        record_value(&st->h[H_PUSH_TYPE]);
        buffer_str(b, ",\"topic\":");
        record_value(&st->h[H_TOPIC]);
        buffer_str(b, ",\"priority\":");
        record_value(&st->h[H_PRIORITY]);
        buffer_str(b, ",\"expiration\":");
        record_value(&st->h[H_EXPIRATION]);
        snprintf(numbers, sizeof numbers, ",\"bytes\":%zu}\n", st->bytes);
        buffer_str(b, numbers);
    }
    char uuid[37], unique[37], status_text[4];
    snprintf(status_text, sizeof status_text, "%d", status);
    const char *apns_id = st->h[H_APNS_ID].value;
    size_t apns_id_length = st->h[H_APNS_ID].length;
    if (!apns_id) { random_uuid(uuid); apns_id = uuid; apns_id_length = 36; }
    const char *date = http_date();
    if (a.status) {
        buffer body = { 0 };
        buffer_str(&body, "{\"reason\":");
        buffer_quoted(&body, a.reason, strlen(a.reason));
        if (a.status == 410) { buffer_str(&body, ",\"timestamp\":"); buffer_number(&body, a.timestamp); }
        buffer_str(&body, "}");
        size_t n = body.length < sizeof st->body ? body.length : sizeof st->body;
        memcpy(st->body, body.data, n);
        free(body.data);
        st->body_length = n;
        st->body_offset = 0;
        nghttp2_nv nva[] = {
            NV(":status", status_text, strlen(status_text)), NV("apns-id", apns_id, apns_id_length),
            NV("content-type", "application/json", 16), NV("date", date, strlen(date)),
        };
        nghttp2_data_provider provider = { .source.ptr = st, .read_callback = read_body };
        nghttp2_submit_response(c->h2, st->id, nva, 4, &provider);
    } else {
        random_uuid(unique);
        nghttp2_nv nva[] = {
            NV(":status", status_text, 3), NV("apns-id", apns_id, apns_id_length), NV("apns-unique-id", unique, 36),
            NV("date", date, strlen(date)),
        };
        nghttp2_submit_response(c->h2, st->id, nva, 4, NULL);
    }
}

static int on_begin_headers(nghttp2_session *session, const nghttp2_frame *frame, void *user) {
    (void)user;
    if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;
    stream_data *st = malloc(sizeof *st);
    if (!st) return NGHTTP2_ERR_CALLBACK_FAILURE;
    memset(st, 0, offsetof(stream_data, arena));
    st->id = frame->hd.stream_id;
    nghttp2_session_set_stream_user_data(session, frame->hd.stream_id, st);
    return 0;
}

static int on_header(nghttp2_session *session, const nghttp2_frame *frame, const uint8_t *name, size_t name_length,
                     const uint8_t *value, size_t value_length, uint8_t flags, void *user) {
    (void)flags; (void)user;
    if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;  /* trailers: not headers */
    stream_data *st = nghttp2_session_get_stream_user_data(session, frame->hd.stream_id);
    if (!st) return 0;
    for (int i = 0; i < H_COUNT; i++) {
        if (header_name_lengths[i] != name_length || memcmp(header_names[i], name, name_length) != 0) continue;
        if (st->h[i].value) return 0;  /* repeated: the first value counts */
        if (value_length < sizeof st->arena - st->arena_used) {
            char *p = st->arena + st->arena_used;
            memcpy(p, value, value_length);
            p[value_length] = 0;
            st->arena_used += value_length + 1;
            st->h[i].value = p;
        } else {
            st->h[i].value = xstrndup((const char *)value, value_length);
            st->heap_values |= 1u << i;
        }
        st->h[i].length = value_length;
        return 0;
    }
    return 0;
}

static int on_data_chunk(nghttp2_session *session, uint8_t flags, int32_t stream_id, const uint8_t *data, size_t length, void *user) {
    (void)flags; (void)data; (void)user;
    stream_data *st = nghttp2_session_get_stream_user_data(session, stream_id);
    if (st) st->bytes += length;  /* only the body's length is needed: counted, not kept */
    return 0;
}

static int on_frame_recv(nghttp2_session *session, const nghttp2_frame *frame, void *user) {
    if ((frame->hd.type != NGHTTP2_HEADERS && frame->hd.type != NGHTTP2_DATA) || !(frame->hd.flags & NGHTTP2_FLAG_END_STREAM)) return 0;
    stream_data *st = nghttp2_session_get_stream_user_data(session, frame->hd.stream_id);
    if (st) request_ended(user, st);
    return 0;
}

static int on_stream_close(nghttp2_session *session, int32_t stream_id, uint32_t error_code, void *user) {
    (void)error_code; (void)user;
    stream_data *st = nghttp2_session_get_stream_user_data(session, stream_id);
    if (!st) return 0;
    for (int i = 0; i < H_COUNT; i++)
        if (st->heap_values & (1u << i)) free(st->h[i].value);
    free(st);
    nghttp2_session_set_stream_user_data(session, stream_id, NULL);
    return 0;
}

static nghttp2_session_callbacks *callbacks;
static SSL_CTX *tls;

static void update_events(connection *c, uint32_t events) {
    if (c->events == events) return;
    struct epoll_event e = { .events = events, .data.ptr = c };
    epoll_ctl(epoll_fd, EPOLL_CTL_MOD, c->fd, &e);
    c->events = events;
}

static void close_connection(connection *c) {
    if (c->h2) nghttp2_session_del(c->h2);  /* closes its streams: on_stream_close frees them */
    SSL_free(c->ssl);
    epoll_ctl(epoll_fd, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    free(c->out.data);
    free(c->last_authorization);
    free(c->tokens);
    free(c);
}

static int alpn_select(SSL *ssl, const unsigned char **out, unsigned char *out_length, const unsigned char *in, unsigned in_length, void *arg) {
    (void)ssl; (void)arg;
    for (unsigned i = 0; i + 1 <= in_length; i += 1u + in[i]) {
        if (in[i] == 2 && i + 3 <= in_length && memcmp(in + i + 1, "h2", 2) == 0) { *out = in + i + 1; *out_length = 2; return SSL_TLSEXT_ERR_OK; }
    }
    return SSL_TLSEXT_ERR_ALERT_FATAL;  /* h2 only, as APNs */
}

static bool start_session(connection *c) {
    const unsigned char *protocol = NULL;
    unsigned length = 0;
    SSL_get0_alpn_selected(c->ssl, &protocol, &length);
    if (length != 2 || memcmp(protocol, "h2", 2) != 0) return false;
    if (nghttp2_session_server_new(&c->h2, callbacks, c) != 0) return false;
    c->id = ++session_count;
    c->current_limit = initial_streams;
    nghttp2_settings_entry settings[] = {
        { NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, initial_streams }, { NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 1 << 20 },
    };
    nghttp2_submit_settings(c->h2, NGHTTP2_FLAG_NONE, settings, 2);
    nghttp2_session_set_local_window_size(c->h2, NGHTTP2_FLAG_NONE, 0, 32 << 20);
    return true;
}

/* Reads what the socket has and feeds it to the HTTP/2 session; false when the connection is over. */
static bool connection_read(connection *c) {
    if (!c->handshaken) {
        int r = SSL_do_handshake(c->ssl);
        if (r != 1) {
            int e = SSL_get_error(c->ssl, r);
            if (e == SSL_ERROR_WANT_READ) { update_events(c, EPOLLIN); return true; }
            if (e == SSL_ERROR_WANT_WRITE) { update_events(c, EPOLLIN | EPOLLOUT); return true; }
            ERR_clear_error();
            return false;
        }
        c->handshaken = true;
        update_events(c, EPOLLIN);
        if (!start_session(c)) return false;
        mark_dirty(c);
    }
    static uint8_t data[1 << 16];
    for (;;) {
        int n = SSL_read(c->ssl, data, sizeof data);
        if (n <= 0) {
            int e = SSL_get_error(c->ssl, n);
            if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) return true;
            ERR_clear_error();
            return false;
        }
        if (nghttp2_session_mem_recv(c->h2, data, (size_t)n) < 0) return false;
        mark_dirty(c);
    }
}

/* Sends what the HTTP/2 session has queued; false when the connection is over. */
static bool connection_send(connection *c) {
    if (!c->h2) return true;
    for (;;) {
        if (c->out.offset < c->out.length) {
            int n = SSL_write(c->ssl, c->out.data + c->out.offset, (int)(c->out.length - c->out.offset));
            if (n > 0) { c->out.offset += (size_t)n; continue; }
            int e = SSL_get_error(c->ssl, n);
            if (e == SSL_ERROR_WANT_WRITE || e == SSL_ERROR_WANT_READ) {
                c->write_blocked = true;
                update_events(c, EPOLLIN | EPOLLOUT);
                return true;
            }
            ERR_clear_error();
            return false;
        }
        c->out.offset = c->out.length = 0;
        while (c->out.length < (1 << 16)) {
            const uint8_t *p;
            ssize_t n = nghttp2_session_mem_send(c->h2, &p);
            if (n < 0) return false;
            if (n == 0) break;
            buffer_add(&c->out, p, (size_t)n);
        }
        if (c->out.length == 0) break;
    }
    if (c->write_blocked) { c->write_blocked = false; update_events(c, EPOLLIN); }
    return nghttp2_session_want_read(c->h2) || nghttp2_session_want_write(c->h2);
}

static void accept_connections(int listener) {
    for (;;) {
        int fd = accept4(listener, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) return;
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        connection *c = calloc(1, sizeof *c);
        if (!c) die(EX_OSERR, "out of memory");
        c->fd = fd;
        c->ssl = SSL_new(tls);
        if (!c->ssl) { close(fd); free(c); continue; }
        SSL_set_fd(c->ssl, fd);
        SSL_set_accept_state(c->ssl);
        c->events = EPOLLIN;
        struct epoll_event e = { .events = EPOLLIN, .data.ptr = c };
        epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &e);
    }
}

/* ---- Certificates, start and stop ----------------------------------------------------------- */

static void run_openssl(const char *const argv[]) {
    char log[4200];
    snprintf(log, sizeof log, "%s/openssl.log", temp_dir);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 2, log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    pid_t pid;
    int r = posix_spawnp(&pid, "openssl", &actions, NULL, (char *const *)argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    if (r != 0) die(EX_OSERR, "cannot run openssl: %s", strerror(r));
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) die(EX_SOFTWARE, "openssl %s failed (see %s)", argv[1], log);
    unlink(log);
}

static char *in_temp(const char *name) {
    static char paths[8][4200];
    static int next;
    char *p = paths[next++ % 8];
    snprintf(p, 4200, "%s/%s", temp_dir, name);
    return p;
}

static void make_certificates(void) {
    const char *tmp = getenv("TMPDIR");
    snprintf(temp_dir, sizeof temp_dir, "%s/mock-apns-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(temp_dir)) die(EX_OSERR, "cannot make a temporary directory: %s", strerror(errno));
    char ca_key[4200], ca_pem[4200], server_key[4200], csr[4200], ext[4200], server_pem[4200];
    snprintf(ca_key, sizeof ca_key, "%s", in_temp("ca.key"));
    snprintf(ca_pem, sizeof ca_pem, "%s", in_temp("ca.pem"));
    snprintf(server_key, sizeof server_key, "%s", in_temp("server.key"));
    snprintf(csr, sizeof csr, "%s", in_temp("server.csr"));
    snprintf(ext, sizeof ext, "%s", in_temp("ext.cnf"));
    snprintf(server_pem, sizeof server_pem, "%s", in_temp("server.pem"));
    const char *ca[] = { "openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2",
                         "-subj", "/CN=PushSeal mock APNs CA", "-keyout", ca_key, "-out", ca_pem,
                         "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign", NULL };
    run_openssl(ca);
    const char *req[] = { "openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=localhost",
                          "-keyout", server_key, "-out", csr, NULL };
    run_openssl(req);
    FILE *f = fopen(ext, "w");
    if (!f) die(EX_OSERR, "cannot write %s", ext);
    fputs("subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n", f);
    fclose(f);
    const char *sign[] = { "openssl", "x509", "-req", "-in", csr, "-CA", ca_pem, "-CAkey", ca_key, "-CAcreateserial",
                           "-days", "2", "-extfile", ext, "-out", server_pem, NULL };
    run_openssl(sign);
    tls = SSL_CTX_new(TLS_server_method());
    if (!tls) die(EX_SOFTWARE, "SSL_CTX_new failed");
    SSL_CTX_set_min_proto_version(tls, TLS1_2_VERSION);
    SSL_CTX_set_options(tls, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
    SSL_CTX_set_mode(tls, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    /* Read what the socket has in one read(2), not each TLS record's header and body apart. */
    SSL_CTX_set_read_ahead(tls, 1);
    SSL_CTX_set_default_read_buffer_len(tls, 1 << 16);
    if (SSL_CTX_use_certificate_file(tls, server_pem, SSL_FILETYPE_PEM) != 1 ||
        SSL_CTX_use_PrivateKey_file(tls, server_key, SSL_FILETYPE_PEM) != 1)
        die(EX_SOFTWARE, "cannot load the server certificate");
    SSL_CTX_set_alpn_select_cb(tls, alpn_select, NULL);
}

static void remove_temp_dir(void) {
    DIR *d = opendir(temp_dir);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d))) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
            unlinkat(dirfd(d), e->d_name, 0);
        }
        closedir(d);
    }
    rmdir(temp_dir);
}

static void stop(void) {
    write_record();
    if (record_fd >= 0) close(record_fd);
    remove_temp_dir();
    exit(0);
}

int main(int argc, char **argv) {
    const char *config_path = NULL;
    long port = 0;
    bool detached = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--config") == 0 && i + 1 < argc) config_path = argv[++i];
        else if (strcmp(argv[i], "--port") == 0 && i + 1 < argc) {
            char *end;
            port = strtol(argv[++i], &end, 10);
            if (*end || port < 0 || port > 65535) die(EX_USAGE, "--port takes 0 to 65535, not %s", argv[i]);
        } else if (strcmp(argv[i], "--detached") == 0) detached = true;
        else die(EX_USAGE, "unknown argument %s\nhint: mock-apns-native --config CONFIG.json [--port 0] [--detached]", argv[i]);
    }
    if (!config_path) die(EX_USAGE, "--config CONFIG.json is required");
    signal(SIGPIPE, SIG_IGN);
    for (int i = 0; i < H_COUNT; i++) header_name_lengths[i] = strlen(header_names[i]);
    load_config(config_path);
    make_certificates();

    nghttp2_session_callbacks_new(&callbacks);
    nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks, on_begin_headers);
    nghttp2_session_callbacks_set_on_header_callback(callbacks, on_header);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, on_data_chunk);
    nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, on_frame_recv);
    nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, on_stream_close);

    int listener = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in address = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);  /* 127.0.0.1 only */
    if (listener < 0 || bind(listener, (struct sockaddr *)&address, sizeof address) != 0 || listen(listener, 128) != 0)
        die(EX_OSERR, "cannot listen on 127.0.0.1:%ld: %s", port, strerror(errno));
    socklen_t length = sizeof address;
    getsockname(listener, (struct sockaddr *)&address, &length);

    epoll_fd = epoll_create1(EPOLL_CLOEXEC);
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGTERM);
    sigaddset(&signals, SIGINT);
    sigprocmask(SIG_BLOCK, &signals, NULL);
    int signal_fd = signalfd(-1, &signals, SFD_NONBLOCK | SFD_CLOEXEC);
    static int listener_tag, signal_tag, stdin_tag;
    struct epoll_event e = { .events = EPOLLIN, .data.ptr = &listener_tag };
    epoll_ctl(epoll_fd, EPOLL_CTL_ADD, listener, &e);
    e.data.ptr = &signal_tag;
    epoll_ctl(epoll_fd, EPOLL_CTL_ADD, signal_fd, &e);
    bool watch_stdin = false;
    if (!detached) {  /* the parent went away: its pipe to our stdin closed */
        e.data.ptr = &stdin_tag;
        if (epoll_ctl(epoll_fd, EPOLL_CTL_ADD, 0, &e) == 0) watch_stdin = true;
        else {  /* a file or /dev/null: read to its end now */
            char sink[4096];
            while (read(0, sink, sizeof sink) > 0) {}
            printf("listening %d %s\n", ntohs(address.sin_port), in_temp("ca.pem"));
            fflush(stdout);
            stop();
        }
    }
    printf("listening %d %s\n", ntohs(address.sin_port), in_temp("ca.pem"));
    fflush(stdout);

    struct epoll_event events[256];
    for (;;) {
        int n = epoll_wait(epoll_fd, events, 256, -1);
        if (n < 0 && errno == EINTR) continue;
        for (int i = 0; i < n; i++) {
            void *tag = events[i].data.ptr;
            if (tag == &listener_tag) { accept_connections(listener); continue; }
            if (tag == &signal_tag) stop();
            if (tag == &stdin_tag) {
                char sink[4096];
                ssize_t r = read(0, sink, sizeof sink);
                if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) stop();
                if (watch_stdin && r < 0) continue;
                continue;
            }
            connection *c = tag;
            if (c->closing) continue;
            bool alive = true;
            if (events[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) alive = connection_read(c);
            if (alive && (events[i].events & EPOLLOUT)) {
                if (!c->handshaken) alive = connection_read(c);
                else mark_dirty(c);
            }
            if (!alive) { c->closing = true; mark_dirty(c); }
        }
        /* The record of this round first, then its answers: a client that has an answer finds its line. */
        write_record();
        while (dirty_list) {
            connection *c = dirty_list;
            dirty_list = c->next_dirty;
            c->dirty = false;
            if (c->closing || !connection_send(c)) close_connection(c);
        }
    }
}
