/* A small strict JSON reader for the native mock APNs (see json.h). */
#include "json.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct { const char *p, *end; int depth; } reader;

static void skip_space(reader *r) {
    while (r->p < r->end && (*r->p == ' ' || *r->p == '\t' || *r->p == '\n' || *r->p == '\r')) r->p++;
}

static json *new_value(enum json_type type) {
    json *v = calloc(1, sizeof *v);
    if (v) v->type = type;
    return v;
}

static int hex4(const char *p, unsigned *out) {
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f') v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') v |= (unsigned)(c - 'A' + 10);
        else return 0;
    }
    *out = v;
    return 1;
}

static size_t put_utf8(char *out, unsigned cp) {
    if (cp < 0x80) { out[0] = (char)cp; return 1; }
    if (cp < 0x800) { out[0] = (char)(0xC0 | (cp >> 6)); out[1] = (char)(0x80 | (cp & 0x3F)); return 2; }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12)); out[1] = (char)(0x80 | ((cp >> 6) & 0x3F)); out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18)); out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F)); out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* Reads a string at r->p (at its opening quote) into a new NUL-terminated buffer. */
static char *read_string(reader *r, size_t *length) {
    if (r->p >= r->end || *r->p != '"') return NULL;
    r->p++;
    /* The decoded text is never longer than the escaped text. */
    const char *start = r->p;
    size_t cap = 1;
    for (const char *q = start; q < r->end && *q != '"'; q++) { cap++; if (*q == '\\' && q + 1 < r->end) { q++; cap++; } }
    char *out = malloc(cap + 4);
    if (!out) return NULL;
    size_t n = 0;
    while (r->p < r->end) {
        unsigned char c = (unsigned char)*r->p;
        if (c == '"') { r->p++; out[n] = 0; *length = n; return out; }
        if (c < 0x20) break;
        if (c != '\\') { out[n++] = (char)c; r->p++; continue; }
        if (r->p + 1 >= r->end) break;
        char e = r->p[1];
        r->p += 2;
        switch (e) {
        case '"': out[n++] = '"'; break;
        case '\\': out[n++] = '\\'; break;
        case '/': out[n++] = '/'; break;
        case 'b': out[n++] = '\b'; break;
        case 'f': out[n++] = '\f'; break;
        case 'n': out[n++] = '\n'; break;
        case 'r': out[n++] = '\r'; break;
        case 't': out[n++] = '\t'; break;
        case 'u': {
            unsigned cp;
            if (r->end - r->p < 4 || !hex4(r->p, &cp)) goto fail;
            r->p += 4;
            if (cp >= 0xD800 && cp < 0xDC00 && r->end - r->p >= 6 && r->p[0] == '\\' && r->p[1] == 'u') {
                unsigned low;
                if (hex4(r->p + 2, &low) && low >= 0xDC00 && low < 0xE000) {
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
                    r->p += 6;
                }
            }
            if (cp >= 0xD800 && cp < 0xE000) cp = 0xFFFD;  /* a lone surrogate */
            n += put_utf8(out + n, cp);
            break;
        }
        default: goto fail;
        }
    }
fail:
    free(out);
    return NULL;
}

static json *read_value(reader *r);

static json *read_number(reader *r) {
    const char *s = r->p;
    if (r->p < r->end && *r->p == '-') r->p++;
    if (r->p >= r->end) return NULL;
    if (*r->p == '0') r->p++;
    else if (*r->p >= '1' && *r->p <= '9') while (r->p < r->end && *r->p >= '0' && *r->p <= '9') r->p++;
    else return NULL;
    if (r->p < r->end && *r->p == '.') {
        r->p++;
        if (r->p >= r->end || *r->p < '0' || *r->p > '9') return NULL;
        while (r->p < r->end && *r->p >= '0' && *r->p <= '9') r->p++;
    }
    if (r->p < r->end && (*r->p == 'e' || *r->p == 'E')) {
        r->p++;
        if (r->p < r->end && (*r->p == '+' || *r->p == '-')) r->p++;
        if (r->p >= r->end || *r->p < '0' || *r->p > '9') return NULL;
        while (r->p < r->end && *r->p >= '0' && *r->p <= '9') r->p++;
    }
    char buf[64];
    size_t len = (size_t)(r->p - s);
    char *text = len < sizeof buf ? buf : malloc(len + 1);
    if (!text) return NULL;
    memcpy(text, s, len);
    text[len] = 0;
    json *v = new_value(JSON_NUMBER);
    if (v) v->number = strtod(text, NULL);
    if (text != buf) free(text);
    return v;
}

static int append(json *parent, json *item, char *key) {
    if ((parent->count & (parent->count - 1)) == 0) {  /* grow at powers of two */
        size_t cap = parent->count ? parent->count * 2 : 1;
        json **items = realloc(parent->items, cap * sizeof *items);
        if (!items) return 0;
        parent->items = items;
        if (parent->type == JSON_OBJECT) {
            char **keys = realloc(parent->keys, cap * sizeof *keys);
            if (!keys) return 0;
            parent->keys = keys;
        }
    }
    parent->items[parent->count] = item;
    if (parent->type == JSON_OBJECT) parent->keys[parent->count] = key;
    parent->count++;
    return 1;
}

static json *read_container(reader *r, int object) {
    if (++r->depth > 64) return NULL;
    json *v = new_value(object ? JSON_OBJECT : JSON_ARRAY);
    if (!v) return NULL;
    r->p++;
    skip_space(r);
    if (r->p < r->end && *r->p == (object ? '}' : ']')) { r->p++; r->depth--; return v; }
    for (;;) {
        char *key = NULL;
        if (object) {
            size_t klen;
            skip_space(r);
            key = read_string(r, &klen);
            if (!key) goto fail;
            skip_space(r);
            if (r->p >= r->end || *r->p != ':') { free(key); goto fail; }
            r->p++;
        }
        json *item = read_value(r);
        if (!item) { free(key); goto fail; }
        if (!append(v, item, key)) { json_free(item); free(key); goto fail; }
        skip_space(r);
        if (r->p < r->end && *r->p == ',') { r->p++; continue; }
        if (r->p < r->end && *r->p == (object ? '}' : ']')) { r->p++; r->depth--; return v; }
        goto fail;
    }
fail:
    json_free(v);
    return NULL;
}

static int literal(reader *r, const char *word) {
    size_t n = strlen(word);
    if ((size_t)(r->end - r->p) < n || memcmp(r->p, word, n) != 0) return 0;
    r->p += n;
    return 1;
}

static json *read_value(reader *r) {
    skip_space(r);
    if (r->p >= r->end) return NULL;
    switch (*r->p) {
    case '{': return read_container(r, 1);
    case '[': return read_container(r, 0);
    case '"': {
        size_t len;
        char *s = read_string(r, &len);
        if (!s) return NULL;
        json *v = new_value(JSON_STRING);
        if (!v) { free(s); return NULL; }
        v->string = s;
        v->string_length = len;
        return v;
    }
    case 't': return literal(r, "true") ? new_value(JSON_TRUE) : NULL;
    case 'f': return literal(r, "false") ? new_value(JSON_FALSE) : NULL;
    case 'n': return literal(r, "null") ? new_value(JSON_NULL) : NULL;
    default: return read_number(r);
    }
}

json *json_parse(const char *text, size_t length) {
    reader r = { text, text + length, 0 };
    json *v = read_value(&r);
    if (!v) return NULL;
    skip_space(&r);
    if (r.p != r.end) { json_free(v); return NULL; }
    return v;
}

void json_free(json *v) {
    if (!v) return;
    for (size_t i = 0; i < v->count; i++) {
        json_free(v->items[i]);
        if (v->keys) free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
    free(v->string);
    free(v);
}

const json *json_get(const json *object, const char *name) {
    if (!object || object->type != JSON_OBJECT) return NULL;
    for (size_t i = object->count; i > 0; i--)
        if (strcmp(object->keys[i - 1], name) == 0) return object->items[i - 1];
    return NULL;
}
