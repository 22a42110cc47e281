# Cython declarations of ext/include/tagtok.h (the engine's public C interface).
# cimported by _engine.pyx and by the native pipeline's _native.pyx (which reaches the engine's functions
# through tt_engine_api only: the engine is linked into _engine alone).
from libc.stdint cimport int64_t, uint8_t, uint32_t, uint64_t


cdef extern from "tagtok.h" nogil:
    enum: TT_TAG_CONT
    enum: TT_MAX_TEXT_BYTES
    enum: TT_RX_MAX_SEGMENTS

    ctypedef enum tt_alphabet:
        TT_ALPHABET_ATOMS
        TT_ALPHABET_SCRIPTS

    void tt_classify(tt_alphabet alphabet, const uint8_t *text, size_t n, uint8_t *tags,
                     uint64_t *char_starts)

    ctypedef enum tt_behavior:
        TT_BEHAVIOR_REMOVED
        TT_BEHAVIOR_ISOLATED
        TT_BEHAVIOR_MERGED_WITH_PREVIOUS
        TT_BEHAVIOR_MERGED_WITH_NEXT
        TT_BEHAVIOR_CONTIGUOUS

    ctypedef enum tt_step_kind:
        TT_STEP_SPLIT_CLASS
        TT_STEP_SPLIT_CHAR
        TT_STEP_SPLIT_LITERAL
        TT_STEP_SPLIT_REGEX
        TT_STEP_WHITESPACE
        TT_STEP_BERT
        TT_STEP_METASPACE
        TT_STEP_BYTELEVEL
        TT_STEP_SCRIPTS
        TT_STEP_FIXED_LENGTH
        TT_STEP_SPLIT_COMPILED
        TT_STEP_SPLIT_GIVEN

    ctypedef enum tt_regex_kind:
        TT_REGEX_GPT2
        TT_REGEX_CL100K
        TT_REGEX_QWEN2
        TT_REGEX_O200K

    ctypedef enum tt_prepend_scheme:
        TT_PREPEND_ALWAYS
        TT_PREPEND_FIRST
        TT_PREPEND_NEVER

    ctypedef struct tt_rx_spec:
        const int *code
        uint32_t n_code
        const unsigned short *stage1
        const unsigned short *stage2
        uint32_t n_stage2
        const uint64_t *sets
        uint32_t n_sets
        uint32_t n_classes
        uint32_t n_main_splits
        uint32_t n_splits
        uint32_t n_subs
        int first_set
        const uint32_t *segments
        uint32_t n_segments
        int backtrack_only

    ctypedef struct tt_step:
        tt_step_kind kind
        tt_behavior behavior
        int invert
        uint32_t prop_mask
        uint32_t cp
        const uint8_t *literal
        size_t literal_len
        tt_regex_kind regex
        tt_prepend_scheme prepend
        int split
        int add_prefix_space
        int use_regex
        uint32_t length
        const tt_rx_spec *rx

    enum: TT_PIECE_PREFIX
    enum: TT_GAVE_UP, TT_RX_BACKTRACK_LIMIT

    ctypedef struct tt_piece:
        uint32_t start
        uint32_t end
        uint32_t flags

    ctypedef enum tt_render:
        TT_RENDER_NONE
        TT_RENDER_METASPACE
        TT_RENDER_BYTELEVEL

    ctypedef struct tt_program:
        pass
    ctypedef struct tt_scratch:
        pass

    tt_program *tt_program_new(const tt_step *steps, size_t n_steps, char *err, size_t err_len)
    void tt_program_free(tt_program *program)
    tt_render tt_program_render(const tt_program *program, uint32_t *render_cp)
    size_t tt_program_dfa_steps(const tt_program *program)
    tt_scratch *tt_scratch_new()
    void tt_scratch_free(tt_scratch *scratch)
    int tt_program_run(const tt_program *program, tt_scratch *scratch, const uint8_t *text, size_t len,
                       const tt_piece **pieces, size_t *n_pieces)
    void tt_char_offsets(const uint8_t *text, size_t len, const tt_piece *pieces, size_t n, int64_t *out)

    ctypedef struct tt_engine_api:
        const uint32_t *bytelevel_map

    const tt_engine_api *tt_engine()
