# cython: language_level=3
"""Python face of the C trainer: pre-token counting (ext/train/piece_count.c) and the merge loop
(ext/train/bpe_train.c)."""
from libc.stdint cimport int64_t, uint8_t, uint32_t
from libc.stdlib cimport free, malloc

import numpy as np


cdef extern from "Python.h":
    const char *PyUnicode_AsUTF8AndSize(object text, Py_ssize_t *size) except NULL


cdef extern from "train/piece_count.h":
    ctypedef struct piece_counts:
        pass
    piece_counts *piece_counts_new() nogil
    void piece_counts_free(piece_counts *c) nogil
    int piece_counts_add(piece_counts *c, const uint8_t *s, size_t len, int64_t times) nogil
    int piece_counts_add_pieces(piece_counts *c, const uint8_t *text, size_t len, const int64_t *char_offsets,
                             size_t n_pieces) nogil
    int piece_counts_merge(piece_counts *dst, const piece_counts *src) nogil
    size_t piece_counts_size(const piece_counts *c) nogil
    size_t piece_counts_total_bytes(const piece_counts *c) nogil
    void piece_counts_export(const piece_counts *c, uint8_t *bytes, int64_t *offsets, int64_t *counts) nogil


cdef extern from "train/bpe_train.h":
    ctypedef struct bpe_trainer:
        pass
    bpe_trainer *bpe_trainer_new(const uint8_t *word_bytes, const int64_t *word_offsets, const int64_t *word_counts,
                       size_t n_words, uint32_t byte_base) nogil
    void bpe_trainer_free(bpe_trainer *bpe) nogil
    int64_t bpe_trainer_run(bpe_trainer *bpe, uint32_t vocab_size, int64_t min_pair_freq, int64_t max_steps) nogil
    size_t bpe_trainer_n_merges(const bpe_trainer *bpe) nogil
    void bpe_trainer_merge(const bpe_trainer *bpe, size_t i, uint32_t *left, uint32_t *right, uint32_t *result) nogil
    uint32_t bpe_trainer_vocab_size(const bpe_trainer *bpe) nogil
    const uint8_t *bpe_trainer_token(const bpe_trainer *bpe, uint32_t id, size_t *len) nogil


cdef class PieceCounts:
    """{piece bytes: occurrences}, filled from engine offsets (GIL released) or from byte strings."""
    cdef piece_counts *c

    def __cinit__(self):
        self.c = piece_counts_new()
        if self.c is NULL:
            raise MemoryError()

    def __dealloc__(self):
        piece_counts_free(self.c)

    def __len__(self):
        return piece_counts_size(self.c)

    def add_offsets(self, list texts, offsets, counts):
        """Count the pieces of each text: offsets (n_pieces, 2) char offsets, counts per text, as the
        engine's pre_tokenize_offsets returns them."""
        cdef const int64_t[:, ::1] off = np.ascontiguousarray(offsets, dtype=np.int64).reshape(-1, 2)
        cdef const int64_t[::1] per_text = np.ascontiguousarray(counts, dtype=np.int64)
        cdef Py_ssize_t n = len(texts), i, size
        if per_text.shape[0] != n or np.sum(per_text) != off.shape[0]:
            raise ValueError("offsets and per-text counts do not match the texts")
        cdef const uint8_t **ptrs = <const uint8_t **>malloc((n or 1) * sizeof(uint8_t *))
        cdef size_t *sizes = <size_t *>malloc((n or 1) * sizeof(size_t))
        cdef int failed = 0
        cdef size_t first = 0
        try:
            if ptrs == NULL or sizes == NULL:
                raise MemoryError()
            for i in range(n):
                ptrs[i] = <const uint8_t *>PyUnicode_AsUTF8AndSize(texts[i], &size)
                sizes[i] = size
            with nogil:
                for i in range(n):
                    if per_text[i] and piece_counts_add_pieces(self.c, ptrs[i], sizes[i], &off[first, 0], per_text[i]):
                        failed = 1
                        break
                    first += per_text[i]
            if failed:
                raise ValueError("piece offsets outside their text, or out of memory")
        finally:
            free(ptrs)
            free(sizes)

    def add(self, pieces):
        """Count byte strings (one occurrence each)."""
        cdef const uint8_t[::1] view
        for piece in pieces:
            view = piece
            if piece_counts_add(self.c, &view[0] if len(piece) else NULL, len(piece), 1):
                raise MemoryError()

    def merge(self, PieceCounts other):
        if piece_counts_merge(self.c, other.c):
            raise MemoryError()

    def arrays(self):
        """(bytes uint8, offsets int64 (n+1,), counts int64 (n,)): entry i is bytes[offsets[i]:offsets[i+1]]."""
        cdef size_t n = piece_counts_size(self.c)
        blob = np.empty(piece_counts_total_bytes(self.c) or 1, dtype=np.uint8)
        offsets = np.empty(n + 1, dtype=np.int64)
        counts = np.empty(n, dtype=np.int64)
        cdef uint8_t[::1] b = blob
        cdef int64_t[::1] o = offsets
        cdef int64_t[::1] c = np.empty(1, dtype=np.int64) if n == 0 else counts
        piece_counts_export(self.c, &b[0], &o[0], &c[0])
        return blob, offsets, counts

    def to_dict(self):
        blob, offsets, counts = self.arrays()
        data = blob.tobytes()
        return {data[offsets[i]:offsets[i + 1]]: int(counts[i]) for i in range(len(counts))}


def words_to_arrays(words, counts):
    """The arrays MergeLoop takes, from a list of byte strings and their counts."""
    blob = np.frombuffer(b"".join(words) or b"\0", dtype=np.uint8)
    lengths = np.fromiter((len(w) for w in words), dtype=np.int64, count=len(words))
    offsets = np.zeros(len(words) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    counts = np.ascontiguousarray(counts, dtype=np.int64)
    if counts.shape[0] != len(words):
        raise ValueError("one count per word is required")
    return blob, offsets, counts


cdef class MergeLoop:
    """Deterministic BPE merges over unique words (bytes) weighted by their counts.

    Byte b is token id byte_base + b; learned tokens follow. run() may be called repeatedly with a
    step budget so callers can report progress between calls.
    """
    cdef bpe_trainer *bpe

    def __cinit__(self, blob, offsets, counts, uint32_t byte_base):
        """Words are blob[offsets[i]:offsets[i+1]] with counts[i] (see words_to_arrays, PieceCounts.arrays)."""
        blob = np.ascontiguousarray(blob, dtype=np.uint8)
        cdef const uint8_t[::1] data = blob if blob.size else np.zeros(1, dtype=np.uint8)
        cdef const int64_t[::1] off = np.ascontiguousarray(offsets, dtype=np.int64)
        cdef const int64_t[::1] cnt = np.ascontiguousarray(counts, dtype=np.int64)
        if off.shape[0] != cnt.shape[0] + 1 or (cnt.shape[0] and off[off.shape[0] - 1] > data.shape[0]):
            raise ValueError("offsets must have one more entry than counts and stay inside the bytes")
        with nogil:
            self.bpe = bpe_trainer_new(&data[0], &off[0], &cnt[0] if cnt.shape[0] else NULL, cnt.shape[0], byte_base)
        if self.bpe is NULL:
            raise MemoryError("BPE trainer: out of memory building the pair index")

    def __dealloc__(self):
        bpe_trainer_free(self.bpe)

    def run(self, uint32_t vocab_size, int64_t min_pair_freq, int64_t max_steps):
        """Merges until done or max_steps; returns merges done (0 = finished)."""
        cdef int64_t done
        with nogil:
            done = bpe_trainer_run(self.bpe, vocab_size, min_pair_freq, max_steps)
        if done < 0:
            raise MemoryError("BPE trainer: out of memory during merges")
        return done

    @property
    def vocab_size(self):
        return bpe_trainer_vocab_size(self.bpe)

    def merges(self):
        """[(left_id, right_id, result_id)] in merge order."""
        cdef uint32_t l, r, res
        out = []
        for i in range(bpe_trainer_n_merges(self.bpe)):
            bpe_trainer_merge(self.bpe, i, &l, &r, &res)
            out.append((l, r, res))
        return out

    def token_bytes(self, uint32_t token_id):
        cdef size_t n
        cdef const uint8_t *s = bpe_trainer_token(self.bpe, token_id, &n)
        return s[:n]
