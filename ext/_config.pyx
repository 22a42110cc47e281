# cython: language_level=3
"""hf_tagtok._config: reading a tokenizer's configuration text where it lies, without building it.

Loading a tokenizer reads its configuration back as JSON, and json.loads spends most of that on the
model's merges (a list and two str per merge), which are only ever turned into ids.
`member_spans(text, path, names)` finds where values sit in the JSON text (`member_span` one of them), so
the loader cuts the vocabulary and the merges out before json.loads. `vocab_names(text, start, end)` reads
the vocabulary object in one pass into the dict json.loads would give and, in the same pass, a table of
the names' code points; `pair_ids_in(names, text, start, end, strip)` then resolves each (left, right)
pair of token names of the merges, and the name left + right joins into, against that table (or one built
from a str -> id dict), reading the pairs from the text: names are hashed and compared as code points
where they lie, so no str is built. `token_bytes(names, byte_level)` turns a str -> id dict into each
id's byte string.
"""
import json

import numpy as np

from hf_tagtok._engine cimport engine_api
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize
from cpython.dict cimport PyDict_Next
from cpython.ref cimport PyObject
from cpython.unicode cimport PyUnicode_DATA, PyUnicode_GET_LENGTH, PyUnicode_KIND, PyUnicode_READ

cdef extern from "Python.h":
    object PyUnicode_FromKindAndData(int kind, const void *buffer, Py_ssize_t size)
from libc.stdint cimport UINT16_MAX as NO_BYTE, UINT32_MAX as NO_NAME, uint8_t, uint16_t, uint32_t, uint64_t
from libc.stdlib cimport calloc, free, malloc, realloc
from libc.string cimport memset


cdef struct _text:  # code points [start, end) of a str, read in place (the scanner reads up to end)
    int kind
    const void *data
    Py_ssize_t start, end


cdef inline _text _whole(str s) noexcept:
    return _text(PyUnicode_KIND(s), PyUnicode_DATA(s), 0, PyUnicode_GET_LENGTH(s))


cdef inline Py_UCS4 _at(_text j, Py_ssize_t i) noexcept:
    return PyUnicode_READ(j.kind, j.data, i) if i < j.end else 0


cdef inline Py_ssize_t _skip_space(_text j, Py_ssize_t i) noexcept:
    cdef Py_UCS4 c
    while i < j.end:
        c = PyUnicode_READ(j.kind, j.data, i)
        if c != 0x20 and c != 0x09 and c != 0x0A and c != 0x0D:
            break
        i += 1
    return i


cdef Py_ssize_t _skip_string(_text j, Py_ssize_t i, bint *escaped) except -1:
    """i is at a string's opening quote: the index after its closing one. *escaped: it holds a backslash."""
    cdef Py_UCS4 c
    escaped[0] = False
    i += 1
    while i < j.end:
        c = PyUnicode_READ(j.kind, j.data, i)
        if c == 0x22:
            return i + 1
        if c == 0x5C:
            escaped[0] = True
            i += 1
        i += 1
    raise ValueError("unterminated JSON string")


cdef Py_ssize_t _skip_value(_text j, Py_ssize_t i) except -1:
    """i is at a value: the index after it (containers are matched bracket by bracket, strings skipped)."""
    cdef Py_ssize_t depth = 0
    cdef bint escaped
    cdef Py_UCS4 c
    while i < j.end:
        c = PyUnicode_READ(j.kind, j.data, i)
        if c == 0x22:
            i = _skip_string(j, i, &escaped)
            if depth == 0:
                return i
            continue
        if c == 0x7B or c == 0x5B:
            depth += 1
        elif c == 0x7D or c == 0x5D:
            if depth == 0:  # a number or literal ends at its container's close
                return i
            depth -= 1
            if depth == 0:
                return i + 1
        elif depth == 0 and (c == 0x2C or c == 0x20 or c == 0x09 or c == 0x0A or c == 0x0D):
            return i
        i += 1
    if depth:
        raise ValueError("unterminated JSON value")
    return i


cdef str _json_string(str text, Py_ssize_t start, Py_ssize_t end, bint escaped):
    return json.loads(text[start:end]) if escaped else text[start + 1:end - 1]


cdef Py_ssize_t _find_members(str text, _text j, Py_ssize_t i, tuple path, Py_ssize_t depth, tuple names,
                              dict found) except -1:
    """i is at a value; returns the index after it. When it is an object, its last member named path[depth]
    is searched further (one pass: a matching member's value is walked, not skipped, so nothing is read
    twice); in the object at the end of the path, found[name] is set to the (start, end) of the value of its
    last member of each name in `names`."""
    cdef Py_ssize_t key_start, start
    cdef bint escaped
    if _at(j, i) != 0x7B:
        return _skip_value(j, i)
    i = _skip_space(j, i + 1)
    while _at(j, i) != 0x7D:
        if _at(j, i) != 0x22:
            raise ValueError(f"JSON object key expected at {i}")
        key_start = i
        i = _skip_string(j, i, &escaped)
        name = _json_string(text, key_start, i, escaped)
        i = _skip_space(j, i)
        if _at(j, i) != 0x3A:
            raise ValueError(f"':' expected at {i}")
        start = _skip_space(j, i + 1)
        if depth < len(path) and name == path[depth]:
            found.clear()  # a later member of the same name replaces an earlier one, as in json.loads
            i = _find_members(text, j, start, path, depth + 1, names, found)
        else:
            i = _skip_value(j, start)
            if depth == len(path) and name in names:
                found[name] = (start, i)
        i = _skip_space(j, i)
        if _at(j, i) == 0x2C:
            i = _skip_space(j, i + 1)
        elif _at(j, i) != 0x7D:
            raise ValueError(f"',' or '}}' expected at {i}")
    return i + 1


def member_spans(str text, tuple path, tuple names):
    """{name: (start, end)} of the values of the members `names` of text's object at the keys of `path`
    (the last member of each name, as json.loads keeps it), without those missing or when a key of the path
    is missing or a value on the way is not an object. ValueError on a malformed text."""
    cdef _text j = _whole(text)
    found = {}
    _find_members(text, j, _skip_space(j, 0), path, 0, names, found)
    return found


def member_span(str text, tuple path):
    """(start, end) of text's value at the keys of `path` (the last member of each name, as json.loads
    keeps it), or None when a key is missing or a value on the way is not an object. ValueError on a
    malformed text."""
    cdef Py_ssize_t last = len(path) - 1  # (no negative indexing: wraparound is off)
    if last < 0:
        raise ValueError("an empty path names no member")
    return member_spans(text, path[:last], path[last:]).get(path[last])


cdef extern from "pipeline/tp_hash.h" nogil:
    uint64_t tp_mix64(uint64_t x)

cdef extern from "utf8.h" nogil:
    uint32_t utf8_encoded_len(uint32_t cp)


cdef struct _name_slot:
    uint64_t hash
    uint32_t at, length  # the name's code points: points[at:at + length]
    uint32_t id          # NO_NAME: empty


cdef struct _names:
    _name_slot *slots
    uint64_t mask
    uint32_t *points


cdef inline uint64_t _hash_points(uint64_t h, _text t) noexcept:
    cdef Py_ssize_t i
    for i in range(t.start, t.end):
        h = (h ^ <uint32_t>PyUnicode_READ(t.kind, t.data, i)) * <uint64_t>0x100000001B3
    return h


cdef inline bint _same_points(const uint32_t *points, _text t) noexcept:
    cdef Py_ssize_t i
    for i in range(t.start, t.end):
        if points[i - t.start] != <uint32_t>PyUnicode_READ(t.kind, t.data, i):
            return False
    return True


cdef struct _lookup:  # a name to find: left + right (right may be empty), hashed as the table hashes
    _text left, right
    uint64_t hash
    Py_ssize_t length


cdef inline void _hash_lookup(_lookup *q, _text left, _text right) noexcept:
    q.left, q.right = left, right
    q.length = left.end - left.start + right.end - right.start
    q.hash = tp_mix64(_hash_points(_hash_points(<uint64_t>0xCBF29CE484222325, left), right) ^ <uint64_t>q.length)


cdef uint32_t _find_hashed(const _names *names, const _lookup *q) noexcept:
    """The id of the name q stands for, or NO_NAME."""
    cdef uint64_t i = q.hash & names.mask
    cdef const _name_slot *slot
    while True:
        slot = &names.slots[i]
        if slot.id == NO_NAME:
            return NO_NAME
        if (slot.hash == q.hash and slot.length == q.length and _same_points(names.points + slot.at, q.left)
                and _same_points(names.points + slot.at + (q.left.end - q.left.start), q.right)):
            return slot.id
        i = (i + 1) & names.mask


cdef extern from *:
    void _prefetch "__builtin_prefetch"(const void *address) noexcept nogil


cdef void _find_all(const _names *names, const _lookup *queries, Py_ssize_t n, uint32_t *ids) noexcept:
    """ids[k]: the id of queries[k] (NO_NAME: not found, or a query of length -1). The table is far larger
    than the caches, so every query's slot and then its name's code points are fetched ahead, all of them
    before the first is compared, instead of two cache misses in a row per name."""
    cdef Py_ssize_t k
    cdef const _name_slot *slot
    for k in range(n):
        _prefetch(&names.slots[queries[k].hash & names.mask])
    for k in range(n):
        slot = &names.slots[queries[k].hash & names.mask]
        if slot.id != NO_NAME and slot.hash == queries[k].hash:
            _prefetch(names.points + slot.at)
    for k in range(n):
        ids[k] = NO_NAME if queries[k].length < 0 else _find_hashed(names, &queries[k])


cdef int _build_names(_names *names, dict table) except -1:
    cdef Py_ssize_t pos = 0, total = 0, i
    cdef PyObject *key
    cdef PyObject *value
    cdef uint64_t size = 16, h, slot
    cdef uint32_t at = 0
    cdef _text t
    while PyDict_Next(table, &pos, &key, &value):
        if not isinstance(<object>key, str):
            raise ValueError(f"token name {<object>key!r} is not a str")
        total += PyUnicode_GET_LENGTH(<str>key)
    while size < 2 * <uint64_t>len(table):
        size <<= 1
    names.slots = <_name_slot *>malloc(size * sizeof(_name_slot))
    names.points = <uint32_t *>malloc((total or 1) * sizeof(uint32_t))
    if names.slots == NULL or names.points == NULL:
        raise MemoryError()
    memset(names.slots, 0xFF, size * sizeof(_name_slot))
    names.mask = size - 1
    pos = 0
    while PyDict_Next(table, &pos, &key, &value):
        t = _whole(<str>key)
        for i in range(t.end):
            names.points[at + i] = <uint32_t>PyUnicode_READ(t.kind, t.data, i)
        h = tp_mix64(_hash_points(<uint64_t>0xCBF29CE484222325, t) ^ <uint64_t>t.end)
        slot = h & names.mask
        while names.slots[slot].id != NO_NAME:
            slot = (slot + 1) & names.mask
        names.slots[slot] = _name_slot(h, at, <uint32_t>t.end, <uint32_t><object>value)
        at += <uint32_t>t.end
    return 0


cdef bint _strip_utf8(_text *t, Py_ssize_t strip) noexcept:
    """Drop the first `strip` UTF-8 bytes of t (all of a shorter t); False when that cuts a char."""
    while strip > 0 and t.start < t.end:
        strip -= <Py_ssize_t>utf8_encoded_len(<uint32_t>PyUnicode_READ(t.kind, t.data, t.start))
        t.start += 1
    return strip >= 0


cdef struct _points:  # a decoded name's code points, grown as needed
    uint32_t *data
    Py_ssize_t cap


cdef inline int _hex(uint32_t c) noexcept:
    if 0x30 <= c <= 0x39:
        return <int>(c - 0x30)
    c |= 0x20
    return <int>(c - 0x57) if 0x61 <= c <= 0x66 else -1


cdef uint32_t _hex4(_text j, Py_ssize_t start) except? 0xFFFFFFFF:
    cdef uint32_t value = 0
    cdef Py_ssize_t i
    cdef int digit
    for i in range(start, start + 4):
        digit = _hex(<uint32_t>_at(j, i))
        if digit < 0:
            raise ValueError(f"bad \\u escape at {start - 2}")
        value = value << 4 | <uint32_t>digit
    return value


cdef Py_ssize_t _unescape(_text j, Py_ssize_t i, Py_ssize_t end, _points *out) except -1:
    """The code points of the JSON string between its quotes at i and end - 1, as json.loads decodes them
    (a \\u surrogate pair joins; a lone surrogate stays), into out. Returns their count."""
    cdef Py_ssize_t n = 0
    cdef uint32_t c, low
    if out.cap < end - i:
        free(out.data)
        out.data = <uint32_t *>malloc((end - i) * sizeof(uint32_t))
        out.cap = end - i if out.data != NULL else 0
        if out.data == NULL:
            raise MemoryError()
    i += 1
    while i < end - 1:
        c = _at(j, i)
        i += 1
        if c == 0x5C:
            c = _at(j, i)
            i += 1
            if c == 0x75:
                c = _hex4(j, i)
                i += 4
                if 0xD800 <= c < 0xDC00 and _at(j, i) == 0x5C and _at(j, i + 1) == 0x75:
                    low = _hex4(j, i + 2)
                    if 0xDC00 <= low < 0xE000:
                        c = 0x10000 + ((c - 0xD800) << 10) + (low - 0xDC00)
                        i += 6
            elif c == 0x62: c = 0x08
            elif c == 0x66: c = 0x0C
            elif c == 0x6E: c = 0x0A
            elif c == 0x72: c = 0x0D
            elif c == 0x74: c = 0x09
            elif c != 0x22 and c != 0x5C and c != 0x2F:
                raise ValueError(f"bad escape at {i - 1}")
        out.data[n] = c
        n += 1
    return n


cdef Py_ssize_t _name_at(_text j, Py_ssize_t i, _text *name, _points *decoded) except -1:
    """i is at a JSON string: *name is its code points, read in place (or decoded into `decoded` when it
    holds escapes, as code tokens with quotes and backslashes do: thousands of a code model's merges). Returns the
    index after it."""
    cdef bint escaped
    cdef Py_ssize_t end, n
    if _at(j, i) != 0x22:
        raise ValueError(f"a token name (JSON string) expected at {i}")
    end = _skip_string(j, i, &escaped)
    if escaped:
        n = _unescape(j, i, end, decoded)  # (it may move decoded.data)
        name[0] = _text(4, decoded.data, 0, n)
    else:
        name[0] = _text(j.kind, j.data, i + 1, end - 1)
    return end


cdef int _split_at_space(_text whole, _text *left, _text *right) except -1:
    """A "left right" merge: exactly one space."""
    cdef Py_ssize_t i, space = -1
    for i in range(whole.start, whole.end):
        if PyUnicode_READ(whole.kind, whole.data, i) == 0x20:
            if space >= 0:
                space = -2
                break
            space = i
    if space < 0:
        raise ValueError("a merge given as one string needs exactly one space ('left right')")
    left[0], right[0] = whole, whole
    left.end, right.start = space, space + 1
    return 0


cdef Py_ssize_t _expect(_text j, Py_ssize_t i, Py_UCS4 c, str what) except -1:
    i = _skip_space(j, i)
    if _at(j, i) != c:
        raise ValueError(f"{what} expected at {i}")
    return _skip_space(j, i + 1)


cdef class Names:
    """A vocabulary read from its JSON object text (`vocab_names`): `vocab`, the dict json.loads gives for it,
    and the same names in the code-point table that pair_ids_in resolves merges against, built in the
    same pass (from the dict it is a second walk over every name)."""
    cdef _names table
    cdef readonly dict vocab

    def __dealloc__(self):
        free(self.table.slots)
        free(self.table.points)


cdef int _grow(void **data, Py_ssize_t *cap, Py_ssize_t need, size_t item) except -1:
    cdef Py_ssize_t size = cap[0] or 1024
    cdef void *grown
    if need <= cap[0]:
        return 0
    while size < need:
        size *= 2
    grown = realloc(data[0], <size_t>size * item)
    if grown == NULL:
        raise MemoryError()
    data[0], cap[0] = grown, size
    return 0


cdef Py_ssize_t _id_at(_text j, Py_ssize_t i, uint32_t *out) noexcept:
    """i is at a JSON value: the index after it when it is a non-negative integer below NO_NAME (written to
    *out, as json.loads reads it: no leading zero, no fraction or exponent), else -1."""
    cdef Py_ssize_t first = i
    cdef uint64_t value = 0
    cdef Py_UCS4 c = _at(j, i)
    while 0x30 <= c <= 0x39 and i - first < 10:
        value = value * 10 + (<uint32_t>c - 0x30)
        i += 1
        c = _at(j, i)
    if i == first or (i - first > 1 and _at(j, first) == 0x30) or value >= NO_NAME:
        return -1
    if (0x30 <= c <= 0x39) or c == 0x2E or c == 0x65 or c == 0x45:
        return -1
    out[0] = <uint32_t>value
    return i


cdef bint _has_control(_text j, Py_ssize_t start, Py_ssize_t end) noexcept:
    """A raw char below U+0020 between start and end, which json.loads refuses inside a string."""
    cdef Py_ssize_t i
    for i in range(start, end):
        if PyUnicode_READ(j.kind, j.data, i) < 0x20:
            return True
    return False


def vocab_names(str text, Py_ssize_t start, Py_ssize_t end):
    """The `Names` of the JSON object text[start:end] when its members are all "name": id (an integer from
    0 to 2**32 - 2) with no name twice, else None: json.loads then reads it (an object of other values, a
    name given twice, text json.loads refuses)."""
    cdef _text j = _whole(text)
    cdef _text key
    cdef _points decoded
    cdef _name_slot *entries = NULL
    cdef uint32_t *points = NULL
    cdef Py_ssize_t n = 0, cap = 0, n_points = 0, points_cap = 0, i, key_end, length, k
    cdef uint64_t size = 16, slot
    cdef uint32_t token_id = 0
    cdef bint escaped
    cdef Names names
    if not 0 <= start <= end <= j.end:
        raise ValueError("the vocabulary span lies outside the text")
    j.end = end
    vocab = {}
    memset(&decoded, 0, sizeof(decoded))
    try:
        i = _skip_space(j, start)
        if _at(j, i) != 0x7B:
            return None
        i = _skip_space(j, i + 1)
        while _at(j, i) != 0x7D:
            if _at(j, i) != 0x22:
                return None
            key_end = _skip_string(j, i, &escaped)
            if _has_control(j, i + 1, key_end - 1):
                return None
            if escaped:
                length = _unescape(j, i, key_end, &decoded)
                key = _text(4, decoded.data, 0, length)
                name = PyUnicode_FromKindAndData(4, decoded.data, length)
            else:
                key = _text(j.kind, j.data, i + 1, key_end - 1)
                name = text[i + 1:key_end - 1]
            i = _skip_space(j, key_end)
            if _at(j, i) != 0x3A:
                return None
            i = _id_at(j, _skip_space(j, i + 1), &token_id)
            if i < 0:
                return None
            vocab[name] = token_id
            if len(vocab) == n:  # a name given twice
                return None
            length = key.end - key.start
            _grow(<void **>&entries, &cap, n + 1, sizeof(_name_slot))
            _grow(<void **>&points, &points_cap, n_points + length, sizeof(uint32_t))
            for k in range(length):
                points[n_points + k] = <uint32_t>PyUnicode_READ(key.kind, key.data, key.start + k)
            entries[n] = _name_slot(tp_mix64(_hash_points(<uint64_t>0xCBF29CE484222325, key) ^ <uint64_t>length),
                                    <uint32_t>n_points, <uint32_t>length, token_id)
            n += 1
            n_points += length
            i = _skip_space(j, i)
            if _at(j, i) == 0x2C:
                i = _skip_space(j, i + 1)
                if _at(j, i) != 0x22:
                    return None
            elif _at(j, i) != 0x7D:
                return None
        if _skip_space(j, i + 1) != end:
            return None
        names = Names.__new__(Names)
        while size < 2 * <uint64_t>n:
            size <<= 1
        names.table.slots = <_name_slot *>malloc(size * sizeof(_name_slot))
        if names.table.slots == NULL:
            raise MemoryError()
        memset(names.table.slots, 0xFF, size * sizeof(_name_slot))
        names.table.mask = size - 1
        for k in range(n):
            slot = entries[k].hash & names.table.mask
            while names.table.slots[slot].id != NO_NAME:
                slot = (slot + 1) & names.table.mask
            names.table.slots[slot] = entries[k]
        names.table.points, points = points, NULL
        names.vocab = vocab
        return names
    except ValueError:  # a malformed string: json.loads says how
        return None
    finally:
        free(entries)
        free(points)
        free(decoded.data)


cdef Py_ssize_t _keep_last_pairs(uint32_t[:, ::1] rows, Py_ssize_t k) except -1:
    """Drops, in place, each of the first k rows whose (left, right) a later row repeats (stock fills its merge
    map in order, so a pair listed twice keeps its last rank); returns how many rows are left, in order."""
    cdef uint64_t size = 16, slot
    cdef Py_ssize_t r, kept = 0
    cdef uint32_t other
    while 3 * size < 4 * <uint64_t>k:  # at most 3/4 full
        size <<= 1
    cdef uint32_t *seen = <uint32_t *>calloc(size, sizeof(uint32_t))  # a later row's index + 1; 0: empty
    cdef uint8_t *repeated = <uint8_t *>calloc(k or 1, 1)
    try:
        if seen == NULL or repeated == NULL:
            raise MemoryError()
        for r in range(k - 1, -1, -1):
            slot = tp_mix64((<uint64_t>rows[r, 0] << 32) | rows[r, 1]) & (size - 1)
            while seen[slot] != 0:
                other = seen[slot] - 1
                if rows[other, 0] == rows[r, 0] and rows[other, 1] == rows[r, 1]:
                    repeated[r] = True
                    break
                slot = (slot + 1) & (size - 1)
            if not repeated[r]:
                seen[slot] = <uint32_t>(r + 1)
        for r in range(k):
            if not repeated[r]:
                rows[kept, 0], rows[kept, 1], rows[kept, 2] = rows[r, 0], rows[r, 1], rows[r, 2]
                kept += 1
        return kept
    finally:
        free(seen)
        free(repeated)


cdef enum:
    _BATCH = 32  # merges whose names are looked up together (_find_all)


def pair_ids_in(names, str text, Py_ssize_t start, Py_ssize_t end, Py_ssize_t strip=0, bint last_wins=False):
    """(k, 3) uint32 array of (left id, right id, joined id) for the pairs of the JSON array text[start:end]
    (a model's merges, see member_span) whose three names are in `names` (a dict str -> id, or the `Names`
    of `vocab_names`, whose table is used as it is), in order. The joined
    name is left + right without right's first `strip` UTF-8 bytes. A pair is ["left", "right"] or
    "left right" (exactly one space); anything else: ValueError. With `last_wins`, a (left, right) pair
    listed twice keeps only its last row, as stock keeps its last rank."""
    cdef _names table
    cdef _text left, right, rest
    cdef _text nothing = _text(1, NULL, 0, 0)
    cdef _text j = _whole(text)
    cdef Py_ssize_t k = 0, i, n, pending = 0
    cdef _lookup queries[3 * _BATCH]
    cdef uint32_t ids[3 * _BATCH]
    cdef bint at_end, decoded_name
    cdef _points decoded[2]
    left, right = nothing, nothing
    if not 0 <= start <= end <= j.end:
        raise ValueError("the merges span lies outside the text")
    j.end = end  # nothing past the span is read
    out = np.empty(((end - start) // 12 + 16, 3), dtype=np.uint32)  # ["a","b"], is 10 chars: grown if short
    cdef uint32_t[:, ::1] rows = out
    cdef bint own_table = not isinstance(names, Names)
    if own_table and not isinstance(names, dict):
        raise TypeError(f"names must be a dict or Names, not {type(names).__name__}")
    memset(&table, 0, sizeof(table))
    memset(decoded, 0, sizeof(decoded))
    try:
        if own_table:
            _build_names(&table, names)
        else:
            table = (<Names>names).table
        i = _expect(j, start, 0x5B, "'[' (the merges array)")
        while True:
            at_end = _at(j, i) == 0x5D
            if not at_end:
                if _at(j, i) == 0x5B:
                    i = _name_at(j, _skip_space(j, i + 1), &left, &decoded[0])
                    i = _name_at(j, _expect(j, i, 0x2C, "','"), &right, &decoded[1])
                    i = _expect(j, i, 0x5D, "']' (a merge is a pair)")
                else:
                    i = _name_at(j, i, &left, &decoded[0])
                    _split_at_space(left, &left, &right)
                    i = _skip_space(j, i)
                _hash_lookup(&queries[3 * pending], left, nothing)
                _hash_lookup(&queries[3 * pending + 1], right, nothing)
                rest = right
                if _strip_utf8(&rest, strip):
                    _hash_lookup(&queries[3 * pending + 2], left, rest)
                else:  # the prefix cuts a char: no joined name
                    queries[3 * pending + 2].hash, queries[3 * pending + 2].length = 0, -1
                pending += 1
            # a decoded name lives in `decoded` until the next merge's: its batch is resolved now
            decoded_name = ((decoded[0].data != NULL and (left.data == decoded[0].data or right.data == decoded[0].data))
                            or (decoded[1].data != NULL and right.data == decoded[1].data))
            if pending and (at_end or pending == _BATCH or decoded_name):
                _find_all(&table, queries, 3 * pending, ids)
                for n in range(pending):
                    if ids[3 * n] != NO_NAME and ids[3 * n + 1] != NO_NAME and ids[3 * n + 2] != NO_NAME:
                        if k == rows.shape[0]:
                            out = np.resize(out, (2 * k, 3))
                            rows = out
                        rows[k, 0], rows[k, 1], rows[k, 2] = ids[3 * n], ids[3 * n + 1], ids[3 * n + 2]
                        k += 1
                pending = 0
            if at_end:
                break
            if _at(j, i) == 0x2C:
                i = _skip_space(j, i + 1)
            elif _at(j, i) != 0x5D:
                raise ValueError(f"',' or ']' expected at {i}")
    finally:
        if own_table:
            free(table.slots)
            free(table.points)
        free(decoded[0].data)
        free(decoded[1].data)
    if last_wins:
        k = _keep_last_pairs(rows, k)
    return out[:k]  # a view: the rows past k were never written, so they hold no memory


cdef enum:
    _ALPHABET_POINTS = 0x400  # above every code point of the byte-level alphabet (at most U+0143)


cdef int _byte_of_point(uint16_t *table) except -1:
    """The generated byte-level map (byte -> code point, tables/) turned around: code point -> byte."""
    cdef int byte
    for byte in range(_ALPHABET_POINTS):
        table[byte] = NO_BYTE
    for byte in range(256):
        if engine_api().bytelevel_map[byte] >= _ALPHABET_POINTS:
            raise ValueError(f"byte-level alphabet code point {engine_api().bytelevel_map[byte]:#x} out of range")
        table[engine_api().bytelevel_map[byte]] = <uint16_t>byte
    return 0


cdef object _alphabet_bytes(str name, const uint16_t *byte_of_point):
    """The bytes a byte-level name's characters stand for, or None when one is outside the alphabet."""
    cdef _text t = _whole(name)
    cdef Py_ssize_t i
    cdef uint32_t point
    cdef uint16_t byte
    out = PyBytes_FromStringAndSize(NULL, t.end)
    cdef char *data = PyBytes_AS_STRING(out)
    for i in range(t.end):
        point = <uint32_t>PyUnicode_READ(t.kind, t.data, i)
        byte = byte_of_point[point] if point < _ALPHABET_POINTS else NO_BYTE
        if byte == NO_BYTE:
            return None
        data[i] = <char>byte
    return out


def token_bytes(dict names, bint byte_level):
    """[bytes or None] indexed by id for `names` (str -> id): each name's UTF-8, or, byte level, the bytes
    its characters stand for in the ByteLevel alphabet. None where a name has no such bytes (a character
    outside the alphabet, a lone surrogate) and at ids no name has; no str.translate or encode loop in
    Python."""
    cdef Py_ssize_t pos = 0, size = 0
    cdef PyObject *key
    cdef PyObject *value
    cdef uint16_t byte_of_point[_ALPHABET_POINTS]
    _byte_of_point(byte_of_point)
    while PyDict_Next(names, &pos, &key, &value):
        if not isinstance(<object>key, str):
            raise ValueError(f"token name {<object>key!r} is not a str")
        if <Py_ssize_t><object>value < 0:
            raise ValueError(f"token {<object>key!r} has a negative id")
        size = max(size, <Py_ssize_t><object>value + 1)
    tokens = [None] * size
    pos = 0
    while PyDict_Next(names, &pos, &key, &value):
        if byte_level:
            tokens[<Py_ssize_t><object>value] = _alphabet_bytes(<str>key, byte_of_point)
        else:
            try:
                tokens[<Py_ssize_t><object>value] = (<str>key).encode()
            except UnicodeEncodeError:  # a lone surrogate; a later name of the same id wins, as in the dict
                tokens[<Py_ssize_t><object>value] = None
    return tokens
