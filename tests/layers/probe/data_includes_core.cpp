// Compiles: data/ sees its own headers and those of core/, the layer below it.
#include "core/error.h"
#include "data/batch.h"

int layer_probe_data_includes_core() { return 0; }
