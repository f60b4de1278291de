// `pk resource-check`: the CI portability check. Joins the compiler's resource reports of the device
// compiles with the candidate manifest of each arch and checks every candidate against every database
// device of that arch with the planner's own fit rules (archdb::check_fit).
#pragma once
#include <string>
#include <vector>

namespace pk::tool {

//! Schema tag of `pk candidates --json` output.
inline constexpr const char* manifest_schema = "pk.candidates/1";

struct resource_check_options {
  std::string reports_dir;             //!< <tu>.<arch>.ptxas.log (nvcc -Xptxas -v stderr), <tu>.<gfx>.remarks (clang)
  std::vector<std::string> manifests;  //!< pk candidates --json files; empty: this build's candidates
  bool allow_missing = false;
  bool verbose = false;                //!< also print the checks that passed
  bool json = false;
};

//! 0: every check passed; 1: a check failed; 2: bad input (no reports, unreadable manifest, ...).
int resource_check_main(const resource_check_options& o);

}  // namespace pk::tool
