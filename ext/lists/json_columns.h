/* Int arrays read out of compact JSON objects straight into columns: the fields an object starts with are
   named in order, each array's ints land at the columns' next rows, and arrays of other kinds are checked
   for length and passed over. */
#ifndef HF_TAGTOK_JSON_COLUMNS_H
#define HF_TAGTOK_JSON_COLUMNS_H

#include <stddef.h>
#include <stdint.h>

enum json_kind {
    JSON_INTS,           /* [a,b,...] of uint32, into a uint32_t column */
    JSON_BYTES,          /* [a,b,...] of uint8 (flags, masks), into a uint8_t column */
    JSON_PAIRS,          /* [[a,b],...] of int64 >= 0, into an int64_t column of two per row */
    JSON_STRINGS,        /* ["..",...]: passed over */
    JSON_INTS_OR_NULLS,  /* [a,null,...]: passed over */
    JSON_NESTED,         /* [{...},...]: objects of the same fields, whose rows follow their parent's (in the
                            outermost object; deeper ones are passed over) */
};

typedef struct {
    const char *key;
    size_t key_size;
    int kind;
    void *column;
} json_field;

typedef struct {
    const json_field *fields;
    int n_fields;
    size_t rows, row_room;          /* rows written to every column, and room for them */
    int64_t *lengths, *samples;     /* per object: its rows, and the document it came from */
    size_t objects, object_room;
} json_columns;

/* 1 when `document` (size bytes, then a NUL, as a Python bytes object holds them) is an object whose fields
   begin with out->fields, in order and each array of one length (its rows and those of its nested objects
   then written), else 0 (out->rows and out->objects then say nothing: the caller drops the columns). */
int json_columns_read(json_columns *out, const char *document, size_t size, int64_t sample);

#endif
