// pk command-line tool: `pk bench FAMILY`, written once for every family through family.hpp: the family's
// benchmark grid, each problem planned, every fitting candidate measured and verified (measure.hpp),
// rooflines and anchors measured in the same process; a markdown table, and with --out a markdown file
// and an SVG plot.
#pragma once
#include "family.hpp"

#include <cstdint>
#include <string>

namespace pk::tool {

struct bench_options {
  bool quick = false;    //!< the family's small grid (forced on the emulator)
  int reps = -1;         //!< timed runs per measurement (default: 25 on a GPU, 1 on the emulator)
  std::string out_dir;   //!< when set: <out_dir>/bench-<family>.md and .svg
  bool json = false;     //!< the same data as JSON on stdout instead of the table
  std::uint64_t seed = 0x5eed;
};

//! Runs `pk bench` for the family `reg` on `s` (a GPU stream, or the emulator impersonating a device);
//! `command_line` is recorded in the output. Exit status: 0, 1 (an error), 2 (a wrong result).
int cmd_bench(const family_registration& reg, const stream& s, const bench_options& o, const std::string& command_line);

}  // namespace pk::tool
