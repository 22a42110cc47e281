# Where a value sits in a JSON text, found without building it: `member_span(text, path)`.
#
# Included by ext/_native.pyx. Loading a tokenizer reads its configuration back as JSON, and for Llama-3
# json.loads spent ~0.14 s of its ~0.18 s on the model's 280k merges alone (a list and two str per merge),
# which are only ever turned into ids. The loader cuts that span out before json.loads and hands it to
# `pair_ids_in` (pair_names.pxi), which reads the pairs where they lie.
import json

from cpython.unicode cimport PyUnicode_DATA, PyUnicode_GET_LENGTH, PyUnicode_KIND, PyUnicode_READ


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
