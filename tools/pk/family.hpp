// pk command-line tool: the interface a kernel family implements to appear under `pk plan`, `pk tune`,
// `pk run` and `pk candidates`. Adding a family is one line in families.cpp.
#pragma once
#include <pk/archdb/planner.hpp>
#include <pk/runtime.hpp>
#include <pk/status.hpp>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace pk::tool {

//! One compiled kernel instance as the resource check sees it (`pk candidates`).
struct manifest_entry {
  std::string family;
  std::string candidate;        //!< policy name, as in plans and the tuning cache
  std::string instance;         //!< candidate + dtype, e.g. "reduce_b256_i16_v4_f32"
  std::string symbol;           //!< a substring of the mangled kernel name (Itanium ABI, nvcc and clang)
  archdb::kernel_resources planned;  //!< what the planner assumes (dynamic smem is the planned one)
  bool declares_spills = false;
  //! The fewest 32-bit registers per thread that can hold the kernel's accumulators (attention: the O tile,
  //! and the S tile of the forward, spread over all the block's threads): a compiled kernel with fewer
  //! registers, spilled words included, lost its work to the compiler (0: no floor).
  int min_registers = 0;
};

//! Result of `pk run`: the check against the CPU reference.
struct verification {
  bool pass = false;
  nlohmann::json detail;  //!< reference, result, error, bound and how the bound was derived
};

//! What bounds a family's kernels, and so which roofline `pk bench` measures them against.
enum class bench_bound {
  memory,  //!< achieved GB/s (bytes_moved) against a device-to-device copy
  matrix,  //!< achieved TFLOP/s (flops) against a bf16 GEMM (or the datasheet peak)
};

//! One problem of a family's benchmark grid: the family's own problem options, as on the command line
//! (`pk run FAMILY <args>` reproduces it).
struct bench_problem {
  std::string label;              //!< short row label for the table and the plot ("sum f32 2^24")
  std::vector<std::string> args;  //!< e.g. {"--n", "16777216", "--dtype", "f32", "--op", "sum"}
};

//! An in-binary implementation of the same problem by another library (CUB, ...), for `pk bench`.
struct bench_anchor {
  std::string name;                //!< "CUB DeviceReduce::Sum"
  std::function<status()> launch;  //!< enqueues one run on the prepared inputs (timed like the family's runs)
};

//! A kernel family as the tool drives it. One object per (verb, family) subcommand: the problem options
//! are bound to its members.
class family {
 public:
  virtual ~family() = default;
  [[nodiscard]] virtual std::string name() const = 0;
  [[nodiscard]] virtual std::string summary() const = 0;
  //! Adds the problem options (sizes, dtype, ...) to a verb's subcommand.
  virtual void add_problem_options(CLI::App& cmd) = 0;
  //! Checks and normalizes the parsed options.
  virtual status validate() = 0;
  //! The problem as text ("n=100000000 dtype=f32") and as JSON.
  [[nodiscard]] virtual std::string problem_text() const = 0;
  [[nodiscard]] virtual nlohmann::json problem_json() const = 0;

  //! The code target the next plan/tuning key/launch is for (a stream's): families whose candidate lists
  //! depend on it (attention: the sm_90a instances) plan for exactly that list. Before any call: a build
  //! that covers every device (what `pk plan` shows).
  virtual void use_code(pk::target) {}
  //! The plan the library uses on `d` (the tuning cache consulted as the library does).
  [[nodiscard]] virtual archdb::plan plan(const archdb::device_desc& d) const = 0;
  //! The tuning-cache key of the problem on `d`.
  [[nodiscard]] virtual archdb::tuning_key tuning_key(const archdb::device_desc& d) const = 0;
  //! The instances compiled for `a` (every dtype), for the resource check.
  [[nodiscard]] virtual std::vector<manifest_entry> manifest(archdb::arch a) const = 0;
  //! Fragments of mangled names of this family's kernels whose spills the family declares on arch `a` (its
  //! candidates' manifest entries say so too; this also covers kernels that are no candidate).
  [[nodiscard]] virtual std::vector<std::string> declared_spills(archdb::arch) const { return {}; }

  //! Allocates inputs on `s`, fills them with fresh random data from `seed` and computes the CPU
  //! reference in double.
  virtual status prepare(const stream& s, std::uint64_t seed) = 0;
  //! Fills the output with a pattern no run produces (NaN), so that verify() finds every element a run
  //! did not write; called before each verified run.
  virtual status poison(const stream& s) = 0;
  //! Enqueues one run: policy `index`, or the library's own plan when index < 0.
  virtual status launch(const stream& s, int index) = 0;
  //! Reads the result of the last run and compares it with the reference; `p` is the plan that ran.
  virtual status verify(const stream& s, const archdb::plan& p, verification& out) = 0;
  //! Bytes moved by one run (for the bandwidth figure), 0 if not meaningful.
  [[nodiscard]] virtual double bytes_moved() const = 0;

  //! `pk bench`: the grid of problems (a few small ones when `quick`), the roofline that bounds them,
  //! floating-point operations of one run (matrix-bound families) and the anchors of the prepared
  //! problem on `s` (none on the emulator or when the build has none).
  [[nodiscard]] virtual std::vector<bench_problem> bench_grid(bool quick) const = 0;
  [[nodiscard]] virtual bench_bound bound() const { return bench_bound::memory; }
  [[nodiscard]] virtual double flops() const { return 0; }
  virtual status anchors(const stream&, std::vector<bench_anchor>& out) {
    out.clear();
    return {};
  }
};

//! The first database device whose code is `a`'s (its candidate lists and planned resources stand for
//! the arch), or null when none is.
inline const archdb::device_desc* first_device_of(archdb::arch a) {
  for (const auto& d : archdb::all_devices())
    if (d.isa == a) return &d;
  return nullptr;
}

struct family_registration {
  const char* name;
  std::unique_ptr<family> (*make)();
};

//! Every family this build of the tool knows, in display order.
const std::vector<family_registration>& families();

}  // namespace pk::tool
