#include "json_columns.h"

#include <string.h>

/* Every reader takes the position to read from and returns the one after what it read, or NULL. The document
   ends in a NUL byte, which matches no character a reader looks for, so only a step over two bytes (an
   escape) and a key compare check the end. */

static inline const char *take(const char *p, char ch)
{
    return p && *p == ch ? p + 1 : NULL;
}

static inline int is_digit(char ch)
{
    return (unsigned char)(ch - '0') < 10;
}

/* At most 19 digits, so the value cannot wrap before it is compared with the limit; no leading zero. */
static inline const char *read_uint(const char *p, uint64_t limit, uint64_t *value)
{
    const char *start = p;
    uint64_t v = 0;
    while (is_digit(*p) && p - start < 19)
        v = v * 10 + (uint64_t)(*p++ - '0');
    if (p == start || is_digit(*p) || (*start == '0' && p - start > 1) || v > limit)
        return NULL;
    *value = v;
    return p;
}

static const char *skip_string(const char *p)
{
    if (*p++ != '"')
        return NULL;
    for (;;) {
        if (*p == '"')
            return p + 1;
        if (*p == '\0' || (*p == '\\' && p[1] == '\0'))
            return NULL;
        p += *p == '\\' ? 2 : 1;
    }
}

/* The reader of one array item of `field`'s kind, writing row `row`. */
static inline const char *read_item(const char *p, const json_field *field, size_t row)
{
    uint64_t a, b;
    switch (field->kind) {
    case JSON_INTS:
        if ((p = read_uint(p, UINT32_MAX, &a)))
            ((uint32_t *)field->column)[row] = (uint32_t)a;
        return p;
    case JSON_BYTES:
        if ((p = read_uint(p, UINT8_MAX, &a)))
            ((uint8_t *)field->column)[row] = (uint8_t)a;
        return p;
    case JSON_PAIRS:
        p = take(p, '[');
        p = p ? read_uint(p, INT64_MAX, &a) : NULL;
        p = take(p, ',');
        p = p ? read_uint(p, INT64_MAX, &b) : NULL;
        p = take(p, ']');
        if (p) {
            ((int64_t *)field->column)[2 * row] = (int64_t)a;
            ((int64_t *)field->column)[2 * row + 1] = (int64_t)b;
        }
        return p;
    case JSON_STRINGS:
        return skip_string(p);
    case JSON_INTS_OR_NULLS:
        /* char by char: the compare stops at the NUL that ends the document */
        if (p[0] == 'n' && p[1] == 'u' && p[2] == 'l' && p[3] == 'l')
            return p + 4;
        return read_uint(p, UINT64_MAX, &a);
    }
    return NULL;
}

/* An array of `field`'s items from row `first` on (`*count` of them); NULL when it is not such an array or
   does not fit. */
static const char *read_array(const char *p, const json_field *field, size_t first, size_t room, ptrdiff_t *count)
{
    size_t row = first;
    if (!(p = take(p, '[')))
        return NULL;
    if (*p != ']') {
        do {
            if (row >= room || !(p = read_item(p, field, row)))
                return NULL;
            row++;
        } while (*p == ',' && p++);
    }
    *count = (ptrdiff_t)(row - first);
    return take(p, ']');
}

/* Past any value (arrays and objects within it, strings with escapes). */
static const char *skip_value(const char *p)
{
    int depth = 0;
    for (;;) {
        char ch = *p;
        if (ch == '"') {
            if (!(p = skip_string(p)))
                return NULL;
            if (depth == 0)
                return p;
        } else if (ch == '[' || ch == '{') {
            depth++;
            p++;
        } else if (ch == ']' || ch == '}') {
            if (depth == 0)
                return p;
            p++;
            if (--depth == 0)
                return p;
        } else if (ch == '\0') {
            return NULL;
        } else if (ch == ',' && depth == 0) {
            return p;
        } else {
            p++;
        }
    }
}

static const char *take_key(const char *p, const char *end, const json_field *field)
{
    size_t size = field->key_size;
    if ((size_t)(end - p) < size + 3 || p[0] != '"' || memcmp(p + 1, field->key, size) != 0 || p[size + 1] != '"'
        || p[size + 2] != ':')
        return NULL;
    return p + size + 3;
}

static int commit(json_columns *out, ptrdiff_t count, int64_t sample)
{
    if (count < 0 || out->objects >= out->object_room)
        return 0;
    out->lengths[out->objects] = count;
    out->samples[out->objects] = sample;
    out->objects++;
    out->rows += (size_t)count;
    return 1;
}

static const char *read_object(json_columns *out, const char *p, const char *end, int64_t sample, int inner);

static const char *read_nested(json_columns *out, const char *p, const char *end, int64_t sample)
{
    if (!(p = take(p, '[')))
        return NULL;
    if (*p == ']')
        return p + 1;
    do {
        if (!(p = read_object(out, p, end, sample, 1)))
            return NULL;
    } while (*p == ',' && p++);
    return take(p, ']');
}

/* An object's fields in order; a nested one's remaining fields are passed over to its end, the outermost's
   left unread. The outermost's rows are committed before its nested objects' (JSON_NESTED comes after its
   arrays); a nested object's own nested array is passed over. */
static const char *read_object(json_columns *out, const char *p, const char *end, int64_t sample, int inner)
{
    ptrdiff_t count = -1, n = 0;
    int committed = 0;
    if (!(p = take(p, '{')))
        return NULL;
    for (int k = 0; k < out->n_fields; k++) {
        const json_field *field = &out->fields[k];
        if ((k > 0 && !(p = take(p, ','))) || !(p = take_key(p, end, field)))
            return NULL;
        if (field->kind == JSON_NESTED && inner) {
            if (!(p = skip_value(p)))
                return NULL;
            continue;
        }
        if (field->kind == JSON_NESTED) {
            if (committed || !commit(out, count, sample) || !(p = read_nested(out, p, end, sample)))
                return NULL;
            committed = 1;
            continue;
        }
        if (committed || !(p = read_array(p, field, out->rows, out->row_room, &n)) || (count >= 0 && n != count))
            return NULL;
        count = n;
    }
    if (!committed && !commit(out, count, sample))
        return NULL;
    if (!inner)
        return p;
    while (*p == ',') {
        p = skip_string(p + 1);
        p = take(p, ':');
        if (!p || !(p = skip_value(p)))
            return NULL;
    }
    return take(p, '}');
}

int json_columns_read(json_columns *out, const char *document, size_t size, int64_t sample)
{
    if (document[size] != '\0')
        return 0;
    return read_object(out, document, document + size, sample, 0) != NULL;
}
