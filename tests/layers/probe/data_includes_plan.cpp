// Must not compile: plan/ is above data/ in the layer order, so data/'s include path does
// not hold its headers (cmake/layer_headers.cmake). Built only by the test
// Layers.BuildRefusesAnUpwardInclude.
#include "plan/search.h"

int layer_probe_data_includes_plan() { return 0; }
