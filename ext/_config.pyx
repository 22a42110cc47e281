# cython: language_level=3
"""hf_tagtok._config: reading a tokenizer's configuration text where it lies, without building it.

Loading a tokenizer reads its configuration back as JSON, and json.loads spends most of that on the
model's merges (a list and two str per merge), which are only ever turned into ids.
`member_span(text, path)` finds where a value sits in the JSON text, so the loader cuts the merges out
before json.loads; `pair_ids_in(names, text, start, end, strip)` then resolves each (left, right) pair of
token names of those merges, and the name left + right joins into, against a str -> id table, reading
the pairs from the text: names are hashed and compared as code points where they lie, so no str is
built, and the table keeps every name's code points in one buffer. `token_bytes(names, byte_level)`
turns the same str -> id table into each id's byte string.
"""
import json

import numpy as np

from hf_tagtok._engine cimport engine_api
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize
from cpython.dict cimport PyDict_Next
from cpython.ref cimport PyObject
from cpython.unicode cimport PyUnicode_DATA, PyUnicode_GET_LENGTH, PyUnicode_KIND, PyUnicode_READ
from libc.stdint cimport UINT16_MAX as NO_BYTE, UINT32_MAX as NO_NAME, uint16_t, uint32_t, uint64_t
from libc.stdlib cimport free, malloc
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


cdef Py_ssize_t _find_member(str text, _text j, Py_ssize_t i, tuple path, Py_ssize_t depth, list found) except -1:
    """i is at a value; returns the index after it. When it is an object, its last member named path[depth]
    is searched further (one pass: a matching member's value is walked, not skipped, so nothing is read
    twice) and found[:] is set to the (start, end) of the value at the end of the path."""
    cdef Py_ssize_t key_start, start
    cdef bint escaped
    if depth == len(path):
        start = i
        i = _skip_value(j, i)
        found[:] = [start, i]
        return i
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
        if name == path[depth]:
            del found[:]  # a later member of the same name replaces an earlier one, as in json.loads
            i = _find_member(text, j, start, path, depth + 1, found)
        else:
            i = _skip_value(j, start)
        i = _skip_space(j, i)
        if _at(j, i) == 0x2C:
            i = _skip_space(j, i + 1)
        elif _at(j, i) != 0x7D:
            raise ValueError(f"',' or '}}' expected at {i}")
    return i + 1


def member_span(str text, tuple path):
    """(start, end) of text's value at the keys of `path` (the last member of each name, as json.loads
    keeps it), or None when a key is missing or a value on the way is not an object. ValueError on a
    malformed text."""
    cdef _text j = _whole(text)
    found = []
    _find_member(text, j, _skip_space(j, 0), path, 0, found)
    return tuple(found) or None


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


cdef uint32_t _find(const _names *names, _text left, _text right) noexcept:
    """The id of the name left + right (right may be empty), or NO_NAME."""
    cdef Py_ssize_t n_left = left.end - left.start, length = n_left + right.end - right.start
    cdef uint64_t h = tp_mix64(_hash_points(_hash_points(<uint64_t>0xCBF29CE484222325, left), right) ^ <uint64_t>length)
    cdef uint64_t i = h & names.mask
    cdef const _name_slot *slot
    while True:
        slot = &names.slots[i]
        if slot.id == NO_NAME:
            return NO_NAME
        if (slot.hash == h and slot.length == length and _same_points(names.points + slot.at, left)
                and _same_points(names.points + slot.at + n_left, right)):
            return slot.id
        i = (i + 1) & names.mask


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


def pair_ids_in(dict names, str text, Py_ssize_t start, Py_ssize_t end, Py_ssize_t strip=0):
    """(k, 3) uint32 array of (left id, right id, joined id) for the pairs of the JSON array text[start:end]
    (a model's merges, see member_span) whose three names are in `names` (str -> id), in order. The joined
    name is left + right without right's first `strip` UTF-8 bytes. A pair is ["left", "right"] or
    "left right" (exactly one space); anything else: ValueError."""
    cdef _names table
    cdef _text left, right, rest
    cdef _text nothing = _text(1, NULL, 0, 0)
    cdef _text j = _whole(text)
    cdef Py_ssize_t k = 0, i
    cdef uint32_t left_id, right_id, joined_id
    cdef _points decoded[2]
    if not 0 <= start <= end <= j.end:
        raise ValueError("the merges span lies outside the text")
    j.end = end  # nothing past the span is read
    out = np.empty(((end - start) // 12 + 16, 3), dtype=np.uint32)  # ["a","b"], is 10 chars: grown if short
    cdef uint32_t[:, ::1] rows = out
    memset(&table, 0, sizeof(table))
    memset(decoded, 0, sizeof(decoded))
    try:
        _build_names(&table, names)
        i = _expect(j, start, 0x5B, "'[' (the merges array)")
        while _at(j, i) != 0x5D:
            if _at(j, i) == 0x5B:
                i = _name_at(j, _skip_space(j, i + 1), &left, &decoded[0])
                i = _name_at(j, _expect(j, i, 0x2C, "','"), &right, &decoded[1])
                i = _expect(j, i, 0x5D, "']' (a merge is a pair)")
            else:
                i = _name_at(j, i, &left, &decoded[0])
                _split_at_space(left, &left, &right)
                i = _skip_space(j, i)
            left_id, right_id = _find(&table, left, nothing), _find(&table, right, nothing)
            rest = right
            joined_id = _find(&table, left, rest) if _strip_utf8(&rest, strip) else NO_NAME
            if left_id != NO_NAME and right_id != NO_NAME and joined_id != NO_NAME:
                if k == rows.shape[0]:
                    out = np.resize(out, (2 * k, 3))
                    rows = out
                rows[k, 0], rows[k, 1], rows[k, 2] = left_id, right_id, joined_id
                k += 1
            if _at(j, i) == 0x2C:
                i = _skip_space(j, i + 1)
            elif _at(j, i) != 0x5D:
                raise ValueError(f"',' or ']' expected at {i}")
    finally:
        free(table.slots)
        free(table.points)
        free(decoded[0].data)
        free(decoded[1].data)
    return out[:k].copy()


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
