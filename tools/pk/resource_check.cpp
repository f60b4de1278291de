// `pk resource-check` (see resource_check.hpp).
//
// Inputs, one folder:
//   <tu>.<arch>.ptxas.log  stderr of nvcc -Xptxas -v for one TU (arch: sm_80, sm_86, 89, 90a, ...; an
//                          entry's own "for 'sm_XY'" wins, so a fat-binary log with several archs is fine)
//   <tu>.<gfx>.remarks     stderr of clang -Rpass-analysis=kernel-resource-usage for one TU and one gfx target
// Rules, per arch with reports, per candidate of the arch's manifest, per database device running that
// arch's code (the same ISA; NVIDIA devices of a newer minor of the same major when their own arch has
// no reports, as cubins run there):
//   * a candidate the planner would consider fitting (check_fit with the planned resources) must fit
//     with the compiled resources (registers, static + planned dynamic smem, occupancy >= 1 block);
//   * nothing spills unless its candidate declares spills (any kernel of the reports, candidate or not):
//     ptxas spill stores/loads and AMD VGPR spills fail; AMD SGPR spills are reported as warnings (LLVM
//     spills SGPRs into VGPR lanes, not memory, while lanes are free; the remark does not say which);
//   * every candidate is found in the reports of its arch (unless --allow-missing);
//   * a stack frame without spills (NVIDIA) is reported as a warning.
#include "resource_check.hpp"

#include "family.hpp"

#include <pk/archdb/device.hpp>
#include <pk/archdb/planner.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <regex>
#include <set>
#include <sstream>

namespace pk::tool {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

struct kernel_report {
  std::string symbol;
  archdb::arch isa = archdb::arch::generic;
  std::string file;
  int regs = 0;                 //!< NVIDIA registers / AMD ArchVGPRs
  int agprs = 0, sgprs = 0;
  std::int64_t static_smem = 0; //!< ptxas "bytes smem" / clang "LDS Size"
  int spill_bytes = 0;          //!< NVIDIA spill stores + loads; AMD scratch bytes per lane when VGPRs spill
  int vgpr_spills = 0;          //!< AMD: VGPRs Spill (to scratch memory)
  int sgpr_spills = 0;          //!< AMD: SGPRs Spill (to VGPR lanes while lanes are free, else scratch)
  int stack_bytes = 0;          //!< NVIDIA: stack frame (local memory per thread, spills included)
};

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// "<tu>.<arch>.<suffix>" -> arch token.
std::string arch_token(const std::string& file, const std::string& suffix) {
  const std::string stem = file.substr(0, file.size() - suffix.size());
  const auto dot = stem.rfind('.');
  return dot == std::string::npos ? std::string{} : stem.substr(dot + 1);
}

bool parse_ptxas(const fs::path& p, archdb::arch file_arch, std::vector<kernel_report>& out, std::string& err) {
  std::ifstream in(p);
  if (!in) {
    err = "cannot read " + p.string();
    return false;
  }
  static const std::regex entry_re(R"(Compiling entry function '([^']+)' for '([^']+)')");
  static const std::regex props_re(R"(Function properties for (\S+))");
  static const std::regex spill_re(R"((\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads)");
  static const std::regex used_re(R"(Used (\d+) registers)");
  static const std::regex smem_re(R"((\d+) bytes smem)");
  std::vector<kernel_report> mine;
  std::string line, props_fn;
  int current = -1;
  std::smatch m;
  while (std::getline(in, line)) {
    if (std::regex_search(line, m, entry_re)) {
      kernel_report k;
      k.symbol = m[1];
      k.isa = file_arch;
      archdb::arch a{};
      if (archdb::parse_arch(m[2].str().c_str(), a)) k.isa = a;
      k.file = p.filename().string();
      mine.push_back(k);
      current = static_cast<int>(mine.size()) - 1;
    } else if (std::regex_search(line, m, props_re)) {
      props_fn = m[1];
    } else if (std::regex_search(line, m, spill_re)) {
      if (current >= 0 && props_fn == mine[static_cast<std::size_t>(current)].symbol) {
        mine[static_cast<std::size_t>(current)].spill_bytes = std::stoi(m[2]) + std::stoi(m[3]);
        mine[static_cast<std::size_t>(current)].stack_bytes = std::stoi(m[1]);
      }
    } else if (std::regex_search(line, m, used_re) && current >= 0) {
      auto& k = mine[static_cast<std::size_t>(current)];
      k.regs = std::stoi(m[1]);
      if (std::smatch s; std::regex_search(line, s, smem_re)) k.static_smem = std::stoll(s[1]);
      current = -1;  // one "Used" line per entry
    }
  }
  out.insert(out.end(), mine.begin(), mine.end());
  return true;
}

bool parse_remarks(const fs::path& p, archdb::arch file_arch, std::vector<kernel_report>& out, std::string& err) {
  std::ifstream in(p);
  if (!in) {
    err = "cannot read " + p.string();
    return false;
  }
  static const std::regex name_re(R"(remark: Function Name: (\S+))");
  static const std::regex field_re(R"(remark:\s+([A-Za-z][A-Za-z ]*?)(?: \[[^\]]*\])?: (\w+))");
  std::string line;
  kernel_report* k = nullptr;
  std::smatch m;
  int scratch = 0;
  const auto finish = [&] {
    if (k && k->vgpr_spills > 0) k->spill_bytes = std::max(scratch, 4 * k->vgpr_spills);
    scratch = 0;
  };
  while (std::getline(in, line)) {
    if (std::regex_search(line, m, name_re)) {
      finish();
      kernel_report r;
      r.symbol = m[1];
      r.isa = file_arch;
      r.file = p.filename().string();
      out.push_back(r);
      k = &out.back();
    } else if (k && std::regex_search(line, m, field_re)) {
      const std::string f = m[1];
      const std::string v = m[2];
      const bool num = !v.empty() && std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; });
      if (!num) continue;
      const long long n = std::stoll(v);
      if (f == "VGPRs") k->regs = static_cast<int>(n);
      else if (f == "AGPRs") k->agprs = static_cast<int>(n);
      else if (f == "SGPRs" || f == "TotalSGPRs") k->sgprs = static_cast<int>(n);
      else if (f == "ScratchSize") scratch = static_cast<int>(n);
      else if (f == "VGPRs Spill") k->vgpr_spills = static_cast<int>(n);
      else if (f == "SGPRs Spill") k->sgpr_spills = static_cast<int>(n);
      else if (f == "LDS Size") k->static_smem = n;
    }
  }
  finish();
  return true;
}

int nvidia_major(archdb::arch a) {
  // "sm_86" -> 8, "sm_90a" -> 9, "sm_100" -> 10, "sm_120" -> 12.
  const std::string n = archdb::name_of(a);
  std::string digits;
  for (char c : n)
    if (c >= '0' && c <= '9') digits += c;
  return digits.size() >= 2 ? std::stoi(digits.substr(0, digits.size() - 1)) : -1;
}

//! The compiled arch among `have` whose code runs on `d`: its own ISA, else (NVIDIA) the nearest arch on
//! its fallback chain with the same major compute capability (cubins run on later minors of a major).
bool runs_arch(const archdb::device_desc& d, const std::set<archdb::arch>& have, archdb::arch& out) {
  if (have.count(d.isa)) {
    out = d.isa;
    return true;
  }
  if (d.vendor_id != archdb::vendor::nvidia) return false;
  for (archdb::arch a = archdb::traits(d.isa).fallback; a != archdb::arch::generic; a = archdb::traits(a).fallback) {
    if (nvidia_major(a) != d.cc_major) break;
    if (have.count(a)) {
      out = a;
      return true;
    }
  }
  return false;
}

bool load_manifest(const std::string& path, archdb::arch& a, std::vector<manifest_entry>& out, std::string& err) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  const json j = json::parse(ss.str(), nullptr, false);
  if (!in || j.is_discarded() || !j.is_object() || j.value("schema", "") != manifest_schema) {
    err = path + ": not a candidate manifest (expected JSON with schema '" + std::string(manifest_schema) + "')";
    return false;
  }
  if (!archdb::parse_arch(j.value("arch", "").c_str(), a)) {
    err = path + ": unknown arch '" + j.value("arch", "") + "'";
    return false;
  }
  try {
    for (const auto& c : j.at("candidates")) {
      manifest_entry e;
      e.family = c.at("family").get<std::string>();
      e.candidate = c.at("candidate").get<std::string>();
      e.instance = c.value("instance", e.candidate);
      e.symbol = c.at("symbol").get<std::string>();
      e.planned.threads_per_block = c.at("threads_per_block").get<int>();
      e.planned.regs_per_thread = c.value("regs_per_thread", 0);
      e.planned.static_smem = c.value("static_smem", std::int64_t{0});
      e.planned.dynamic_smem = c.value("dynamic_smem", std::int64_t{0});
      e.declares_spills = c.value("declares_spills", false);
      e.min_registers = c.value("min_registers", 0);
      out.push_back(std::move(e));
    }
  } catch (const std::exception& ex) {
    err = path + ": malformed candidate: " + ex.what();
    return false;
  }
  return true;
}

}  // namespace

int resource_check_main(const resource_check_options& o) {
  std::vector<kernel_report> reports;
  std::vector<std::string> files;
  std::string err;
  std::error_code ec;
  std::vector<fs::path> paths;
  for (const auto& e : fs::directory_iterator(o.reports_dir, ec))
    if (e.is_regular_file()) paths.push_back(e.path());
  std::sort(paths.begin(), paths.end());
  for (const auto& p : paths) {
    const std::string f = p.filename().string();
    const bool ptxas = ends_with(f, ".ptxas.log"), remarks = ends_with(f, ".remarks");
    if (!ptxas && !remarks) continue;
    const std::string tok = arch_token(f, ptxas ? ".ptxas.log" : ".remarks");
    archdb::arch a = archdb::arch::generic;
    if (!archdb::parse_arch(tok.c_str(), a)) {
      std::cerr << "pk resource-check: " << f << ": arch '" << tok << "' has no archdb row (expected <tu>.<arch>"
                << (ptxas ? ".ptxas.log" : ".remarks") << ")\n";
      return 2;
    }
    if (!(ptxas ? parse_ptxas(p, a, reports, err) : parse_remarks(p, a, reports, err))) {
      std::cerr << "pk resource-check: " << err << "\n";
      return 2;
    }
    files.push_back(f);
  }
  if (ec || files.empty()) {
    std::cerr << "pk resource-check: no <tu>.<arch>.ptxas.log or <tu>.<gfx>.remarks files in " << o.reports_dir
              << (ec ? ": " + ec.message() : "") << "\n";
    return 2;
  }
  std::set<archdb::arch> archs;
  for (const auto& r : reports) archs.insert(r.isa);

  // Manifests: given files, else this build's candidates for each arch with reports.
  std::map<archdb::arch, std::vector<manifest_entry>> manifest;
  std::map<archdb::arch, std::string> manifest_src;
  if (!o.manifests.empty()) {
    for (const auto& m : o.manifests) {
      archdb::arch a{};
      std::vector<manifest_entry> es;
      if (!load_manifest(m, a, es, err)) {
        std::cerr << "pk resource-check: " << err << "\n";
        return 2;
      }
      auto& dst = manifest[a];
      dst.insert(dst.end(), es.begin(), es.end());
      manifest_src[a] = m;
    }
  } else {
    for (const auto a : archs) {
      for (const auto& reg : families()) {
        const auto f = reg.make();
        auto es = f->manifest(a);
        manifest[a].insert(manifest[a].end(), es.begin(), es.end());
      }
      manifest_src[a] = "this build (pk candidates)";
    }
  }

  json checks = json::array();
  int failures = 0, warnings = 0;
  const auto record = [&](const std::string& level, const std::string& arch, const std::string& what, const std::string& msg) {
    if (level == "FAIL") ++failures;
    if (level == "warn") ++warnings;
    checks.push_back({{"level", level}, {"arch", arch}, {"subject", what}, {"message", msg}});
    if (!o.json && (level != "ok" || o.verbose))
      std::cout << "  " << (level == "ok" ? "ok  " : level) << "  " << what << ": " << msg << "\n";
  };

  if (!o.json)
    std::cout << "resource check: " << files.size() << " report file(s), " << reports.size() << " kernel(s), arch(s):";
  if (!o.json)
    for (const auto a : archs) std::cout << " " << archdb::name_of(a);
  if (!o.json) std::cout << "\n";

  std::set<std::string> candidate_symbols_declaring_spills;
  std::set<std::string> matched_kernels;
  for (const auto a : archs) {
    const std::string an = archdb::name_of(a);
    std::vector<const archdb::device_desc*> devs;
    for (const auto& d : archdb::all_devices()) {
      archdb::arch runs{};
      if (runs_arch(d, archs, runs) && runs == a) devs.push_back(&d);
    }
    if (!o.json) {
      std::cout << an << ": " << manifest[a].size() << " candidate(s) from " << manifest_src[a] << "; devices:";
      for (const auto* d : devs) std::cout << " [" << d->name << "]";
      std::cout << "\n";
    }
    for (const auto& c : manifest[a]) {
      // The compiled kernel(s) of the candidate on this arch; the worst resources when several TUs hold it.
      kernel_report worst;
      int found = 0;
      int fewest_words = std::numeric_limits<int>::max();  // registers + AGPRs + spilled words, least of the matches
      std::string fewest_file;
      for (const auto& r : reports) {
        if (r.isa != a || r.symbol.find(c.symbol) == std::string::npos) continue;
        matched_kernels.insert(an + "|" + r.symbol);
        ++found;
        worst.regs = std::max(worst.regs, r.regs);
        worst.agprs = std::max(worst.agprs, r.agprs);
        worst.sgprs = std::max(worst.sgprs, r.sgprs);
        worst.static_smem = std::max(worst.static_smem, r.static_smem);
        worst.spill_bytes = std::max(worst.spill_bytes, r.spill_bytes);
        worst.sgpr_spills = std::max(worst.sgpr_spills, r.sgpr_spills);
        worst.file = worst.file.empty() ? r.file : worst.file;
        const int words = r.regs + r.agprs + std::max(r.spill_bytes, r.stack_bytes) / 4;
        if (words < fewest_words) fewest_words = words, fewest_file = r.file;
      }
      if (found == 0) {
        record(o.allow_missing ? "warn" : "FAIL", an, c.instance,
               "no kernel whose mangled name contains '" + c.symbol + "' in the " + an + " reports");
        continue;
      }
      archdb::candidate planned{c.candidate, c.planned, c.declares_spills, 0, {}};
      archdb::candidate real = planned;
      real.res.regs_per_thread = worst.regs;
      real.res.agprs = worst.agprs;
      // Not worst.sgprs: clang's remark counts the VCC/flat-scratch/XNACK SGPRs on top of the explicit
      // ones, while archdb holds the addressable limit (102 on gfx9), so the two are not comparable (the
      // compiler itself never exceeds the hardware's SGPR file). SGPR spills are still reported below.
      real.res.sgprs = 0;
      real.res.static_smem = worst.static_smem;
      real.spill_bytes = worst.spill_bytes;
      std::ostringstream res;
      res << "compiled " << worst.regs << " regs" << (worst.agprs ? " + " + std::to_string(worst.agprs) + " AGPRs" : "")
          << ", static smem " << worst.static_smem << " B + planned dynamic " << c.planned.dynamic_smem << " B"
          << (worst.spill_bytes ? ", spills " + std::to_string(worst.spill_bytes) + " B" : "") << " (" << worst.file << ")";
      // A kernel that holds fewer registers than its accumulators need computes less than its source says:
      // nvcc 13.0 once compiled attention kernels to 19-31 registers (from 119-232) without a diagnostic,
      // from a device read of a class's constexpr array.
      if (found > 0 && fewest_words < c.min_registers) {
        record("FAIL", an, c.instance,
               std::to_string(fewest_words) + " registers (spilled words included) in " + fewest_file +
                   ", fewer than its accumulators need (" + std::to_string(c.min_registers) +
                   " per thread): the compiler removed work from the kernel");
        continue;
      }
      if (worst.spill_bytes > 0 && !c.declares_spills) {
        record("FAIL", an, c.instance, res.str() + ": spills and its policy does not declare spills");
        continue;
      }
      if (worst.sgpr_spills > 0 && !c.declares_spills)
        record("warn", an, c.instance, std::to_string(worst.sgpr_spills) + " SGPRs spilled (" + worst.file + ")");
      if (devs.empty()) record("ok", an, c.instance, res.str() + "; no database device runs " + an + " code");
      for (const auto* d : devs) {
        const archdb::fit_result pf = archdb::check_fit(*d, planned);
        const archdb::fit_result rf = archdb::check_fit(*d, real);
        const std::string subject = c.instance + " on " + d->name;
        if (!pf.fits) record("ok", an, subject, "excluded by the planner: " + pf.reason);
        else if (!rf.fits)
          record("FAIL", an, subject, res.str() + ": the planner may choose it but it does not fit: " + rf.reason);
        else {
          const auto po = archdb::occupancy(*d, planned.res), ro = archdb::occupancy(*d, real.res);
          std::string note = res.str() + ": " + rf.reason;
          if (ro.blocks_per_sm < po.blocks_per_sm)
            note += "; the planner assumes " + std::to_string(po.blocks_per_sm) + " blocks/SM, the compiled kernel gets " +
                    std::to_string(ro.blocks_per_sm);
          record(ro.blocks_per_sm < po.blocks_per_sm ? "warn" : "ok", an, subject, note);
        }
      }
    }
  }
  // Spills in kernels that are no candidate (test kernels, helpers of other families), unless a
  // family declares them.
  std::map<archdb::arch, std::vector<std::string>> declared;
  for (const auto a : archs)
    for (const auto& reg : families())
      for (auto& k : reg.make()->declared_spills(a)) declared[a].push_back(std::move(k));
  const auto is_declared = [&](const kernel_report& r) {
    for (const auto& k : declared[r.isa])
      if (r.symbol.find(k) != std::string::npos) return true;
    return false;
  };
  for (const auto& r : reports) {
    if (matched_kernels.count(std::string(archdb::name_of(r.isa)) + "|" + r.symbol)) continue;
    if ((r.spill_bytes > 0 || r.sgpr_spills > 0) && is_declared(r))
      record("ok", archdb::name_of(r.isa), r.symbol,
             "spills " + std::to_string(r.spill_bytes) + " B, " + std::to_string(r.sgpr_spills) + " SGPRs (" + r.file +
                 "): declared by its family");
    else if (r.spill_bytes > 0)
      record("FAIL", archdb::name_of(r.isa), r.symbol,
             "spills " + std::to_string(r.spill_bytes) + " B (" + r.file + ") and is no candidate that declares spills");
    else if (r.sgpr_spills > 0)
      record("warn", archdb::name_of(r.isa), r.symbol, std::to_string(r.sgpr_spills) + " SGPRs spilled (" + r.file + ")");
  }
  // A stack frame without spills is a local array, or a kernel parameter indexed at run time, which every
  // thread copies to local memory when it starts (the per-segment kernels' 104 B map did: more bytes written
  // than a row sum of 1024 bf16 columns reads).
  for (const auto& r : reports)
    if (r.stack_bytes > 0 && r.spill_bytes == 0)
      record("warn", archdb::name_of(r.isa), r.symbol,
             std::to_string(r.stack_bytes) + " B stack frame without spills (" + r.file +
                 "): a local array or a parameter indexed at run time, written to local memory by every thread");
  // Devices no report covers.
  std::vector<std::string> uncovered;
  for (const auto& d : archdb::all_devices()) {
    archdb::arch runs{};
    if (!runs_arch(d, archs, runs)) uncovered.push_back(d.name);
  }
  if (o.json) {
    std::cout << json{{"files", files},
                      {"kernels", reports.size()},
                      {"checks", checks},
                      {"failures", failures},
                      {"warnings", warnings},
                      {"devices_not_covered", uncovered}}
                     .dump(2)
              << "\n";
  } else {
    if (!uncovered.empty()) {
      std::cout << "devices whose code no report covers:";
      for (const auto& n : uncovered) std::cout << " [" << n << "]";
      std::cout << "\n";
    }
    std::cout << "resource check: " << checks.size() << " check(s), " << failures << " failure(s), " << warnings
              << " warning(s)\n";
  }
  return failures == 0 ? 0 : 1;
}

}  // namespace pk::tool
