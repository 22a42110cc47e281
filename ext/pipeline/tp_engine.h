/* The engine's entry points as the pipeline calls them: through the table the engine's module exports
 * (tagtok.h, tt_engine_api), bound once when the pipeline's module is imported. The engine's code and
 * tables are linked into that other module only. */
#ifndef TP_ENGINE_H
#define TP_ENGINE_H

#include "tagtok.h"

extern const tt_engine_api *tp_engine;

void tp_engine_bind(const tt_engine_api *api);

#endif
