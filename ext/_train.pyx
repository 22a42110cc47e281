# cython: language_level=3
"""Python face of the C merge loop (ext/train/bpe_train.c)."""
from libc.stdint cimport int64_t, uint8_t, uint32_t

import numpy as np


cdef extern from "train/bpe_train.h":
    ctypedef struct tt_bpe:
        pass
    tt_bpe *tt_bpe_new(const uint8_t *word_bytes, const int64_t *word_offsets, const int64_t *word_counts,
                       size_t n_words, uint32_t byte_base) nogil
    void tt_bpe_free(tt_bpe *bpe) nogil
    int64_t tt_bpe_run(tt_bpe *bpe, uint32_t vocab_size, int64_t min_pair_freq, int64_t max_steps) nogil
    size_t tt_bpe_n_merges(const tt_bpe *bpe) nogil
    void tt_bpe_merge(const tt_bpe *bpe, size_t i, uint32_t *left, uint32_t *right, uint32_t *result) nogil
    uint32_t tt_bpe_vocab_size(const tt_bpe *bpe) nogil
    const uint8_t *tt_bpe_token(const tt_bpe *bpe, uint32_t id, size_t *len) nogil


cdef class MergeLoop:
    """Deterministic BPE merges over unique words (bytes) weighted by their counts.

    Byte b is token id byte_base + b; learned tokens follow. run() may be called repeatedly with a
    step budget so callers can report progress between calls.
    """
    cdef tt_bpe *bpe

    def __cinit__(self, words, counts, uint32_t byte_base):
        blob = b"".join(words)
        lengths = np.fromiter((len(w) for w in words), dtype=np.int64, count=len(words))
        offsets = np.zeros(len(words) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        cdef const int64_t[::1] off = offsets
        cdef const int64_t[::1] cnt = np.ascontiguousarray(counts, dtype=np.int64)
        if cnt.shape[0] != len(words):
            raise ValueError("one count per word is required")
        cdef const uint8_t[::1] data = np.frombuffer(blob or b"\0", dtype=np.uint8)
        with nogil:
            self.bpe = tt_bpe_new(&data[0], &off[0], &cnt[0] if cnt.shape[0] else NULL,
                                  off.shape[0] - 1, byte_base)
        if self.bpe is NULL:
            raise MemoryError("BPE trainer: out of memory building the pair index")

    def __dealloc__(self):
        tt_bpe_free(self.bpe)

    def run(self, uint32_t vocab_size, int64_t min_pair_freq, int64_t max_steps):
        """Merges until done or max_steps; returns merges done (0 = finished)."""
        cdef int64_t done
        with nogil:
            done = tt_bpe_run(self.bpe, vocab_size, min_pair_freq, max_steps)
        if done < 0:
            raise MemoryError("BPE trainer: out of memory during merges")
        return done

    @property
    def vocab_size(self):
        return tt_bpe_vocab_size(self.bpe)

    def merges(self):
        """[(left_id, right_id, result_id)] in merge order."""
        cdef uint32_t l, r, res
        out = []
        for i in range(tt_bpe_n_merges(self.bpe)):
            tt_bpe_merge(self.bpe, i, &l, &r, &res)
            out.append((l, r, res))
        return out

    def token_bytes(self, uint32_t token_id):
        cdef size_t n
        cdef const uint8_t *s = tt_bpe_token(self.bpe, token_id, &n)
        return s[:n]
