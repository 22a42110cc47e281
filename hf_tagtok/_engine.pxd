# The engine module's C-level interface, cimported by the native pipeline (ext/_native.pyx).
cimport tagtok as tt
from libc.stdint cimport int64_t, uint8_t


cdef class Program:
    cdef tt.tt_program *_prog
    cdef tt.tt_scratch *_cached
    cdef bint _cached_busy
    cdef tuple _steps
    cdef readonly str render
    cdef readonly size_t dfa_steps
    cdef str _prefix  # the rendered prefix char (Metaspace replacement or ByteLevel space)

    cdef tt.tt_scratch *_claim_scratch(self) except NULL
    cdef void _release_scratch(self, tt.tt_scratch *scratch) noexcept
    cdef _run(self, object text, bint spans)
    cdef list _render_pieces(self, str text, const uint8_t *data, const tt.tt_piece *pieces,
                             const int64_t *offsets, size_t n)


cdef const tt.tt_engine_api *engine_api() noexcept
cdef const uint8_t *_utf8(object text, Py_ssize_t *size) except NULL
cdef int _fill_compiled(tt.tt_step *out, dict step, list keep_alive) except -1
