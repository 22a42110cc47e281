# Name pairs -> ids for building a model: `pair_ids(names, pairs, strip)` resolves each (left, right) pair of
# token names, and the name left + right joins into, against a str -> id table.
#
# Included by ext/_native.pyx. A Python loop of dict lookups spent ~0.5 s on Llama-3's 280k merges (three
# lookups each, one on a freshly concatenated str); here names are hashed and compared as code points in
# place, so no str is built, and the table keeps every name's code points in one buffer.
from cpython.dict cimport PyDict_Next
from cpython.ref cimport PyObject
from cpython.unicode cimport PyUnicode_DATA, PyUnicode_GET_LENGTH, PyUnicode_KIND, PyUnicode_READ
from libc.stdint cimport UINT32_MAX as NO_NAME, uint32_t, uint64_t
from libc.stdlib cimport free, malloc
from libc.string cimport memset

cdef extern from "pipeline/tp_hash.h" nogil:
    uint64_t tp_mix64(uint64_t x)


cdef struct _text:  # code points [start, end) of a str
    int kind
    const void *data
    Py_ssize_t start, end


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


cdef inline _text _whole(str s) noexcept:
    return _text(PyUnicode_KIND(s), PyUnicode_DATA(s), 0, PyUnicode_GET_LENGTH(s))


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


cdef inline Py_ssize_t _utf8_len(uint32_t c) noexcept:
    return 1 if c < 0x80 else 2 if c < 0x800 else 3 if c < 0x10000 else 4


cdef bint _strip_utf8(_text *t, Py_ssize_t strip) noexcept:
    """Drop the first `strip` UTF-8 bytes of t (all of a shorter t); False when that cuts a char."""
    while strip > 0 and t.start < t.end:
        strip -= _utf8_len(<uint32_t>PyUnicode_READ(t.kind, t.data, t.start))
        t.start += 1
    return strip >= 0


cdef int _split_pair(object pair, _text *left, _text *right) except -1:
    cdef Py_ssize_t space
    if isinstance(pair, str):  # "left right": exactly one space
        space = (<str>pair).find(" ")
        if space < 0 or (<str>pair).find(" ", space + 1) >= 0:
            raise ValueError(f"{pair!r} is not 'left right'")
        left[0] = _whole(<str>pair)
        right[0] = left[0]
        left.end, right.start = space, space + 1
        return 0
    if isinstance(pair, (tuple, list)) and len(pair) == 2 and isinstance(pair[0], str) and isinstance(pair[1], str):
        left[0], right[0] = _whole(pair[0]), _whole(pair[1])
        return 0
    raise ValueError(f"{pair!r} is not a pair of token names")


def pair_ids(dict names, list pairs, Py_ssize_t strip=0):
    """(k, 3) uint32 array of (left id, right id, joined id) for the pairs whose three names are in `names`
    (str -> id), in order. The joined name is left + right without right's first `strip` UTF-8 bytes.
    A pair is a "left right" str (exactly one space) or a 2-sequence of str; anything else: ValueError."""
    cdef _names table
    cdef _text left, right, rest
    cdef Py_ssize_t n = len(pairs), k = 0, i
    cdef uint32_t left_id, right_id, joined_id
    cdef _text nothing = _text(1, NULL, 0, 0)
    out = np.empty((n, 3), dtype=np.uint32)
    cdef uint32_t[:, ::1] rows = out
    memset(&table, 0, sizeof(table))
    try:
        _build_names(&table, names)
        for i in range(n):
            _split_pair(pairs[i], &left, &right)
            left_id, right_id = _find(&table, left, nothing), _find(&table, right, nothing)
            rest = right
            joined_id = _find(&table, left, rest) if _strip_utf8(&rest, strip) else NO_NAME
            if left_id != NO_NAME and right_id != NO_NAME and joined_id != NO_NAME:
                rows[k, 0], rows[k, 1], rows[k, 2] = left_id, right_id, joined_id
                k += 1
    finally:
        free(table.slots)
        free(table.points)
    return out[:k]
