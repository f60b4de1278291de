// pk command-line tool: timing of enqueued work is the runtime's (pk/timing.hpp: pk::time_work,
// pk::timing, pk::median), the same measurement PK_TUNING=tune makes inside the library.
#pragma once
#include <pk/timing.hpp>
