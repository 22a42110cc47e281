#include "tp_engine.h"

const tt_engine_api *tp_engine;

void tp_engine_bind(const tt_engine_api *api) { tp_engine = api; }
