/* A small strict JSON reader (RFC 8259) for the native mock APNs: its config file and the
 * provider token's header and claims. Values form a tree freed with json_free. */
#ifndef MOCK_APNS_JSON_H
#define MOCK_APNS_JSON_H

#include <stddef.h>

enum json_type { JSON_NULL, JSON_FALSE, JSON_TRUE, JSON_NUMBER, JSON_STRING, JSON_ARRAY, JSON_OBJECT };

typedef struct json {
    enum json_type type;
    double number;          /* JSON_NUMBER */
    char *string;           /* JSON_STRING: UTF-8, NUL-terminated (string_length bytes) */
    size_t string_length;
    size_t count;           /* JSON_ARRAY / JSON_OBJECT: members */
    struct json **items;
    char **keys;            /* JSON_OBJECT: member names (UTF-8, NUL-terminated) */
} json;

/* Parses `length` bytes; NULL when they are not one JSON value (surrounding white space allowed). */
json *json_parse(const char *text, size_t length);
void json_free(json *value);
/* The member `name` of an object (the last one when repeated, as JavaScript's JSON.parse), else NULL. */
const json *json_get(const json *object, const char *name);

#endif
