/* The engine's entry-point table (tagtok.h, tt_engine_api). */
#include "tagtok.h"
#include "tagtok_tables.h"

static const tt_engine_api api = {
    .classify = tt_classify,
    .scratch_new = tt_scratch_new,
    .scratch_free = tt_scratch_free,
    .program_new = tt_program_new,
    .program_free = tt_program_free,
    .program_run = tt_program_run,
    .program_matches = tt_program_matches,
    .program_run_given = tt_program_run_given,
    .program_takes_matches = tt_program_takes_matches,
    .atom_props = tt_atom_props,
    .bytelevel_map = tt_bytelevel_map,
    .utf8_from_units = tt_utf8_from_units,
};

const tt_engine_api *tt_engine(void) { return &api; }
