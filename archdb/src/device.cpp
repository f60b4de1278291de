// pk::archdb — device database: loading the embedded and user JSON entries, lookup, query resolution.
#include "pk/archdb/device.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <sstream>

#include <nlohmann/json.hpp>

#include "embedded_devices.hpp"

namespace pk::archdb {
namespace {

using json = nlohmann::json;

constexpr const char* device_schema = "pk.archdb.device/1";

std::string normalize(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    if (c == ' ' || c == '-' || c == '_') continue;
    out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  }
  return out;
}

// '*'-only glob, on already-normalized strings.
bool glob_match(std::string_view pat, std::string_view s) {
  std::size_t p = 0, i = 0, star = std::string_view::npos, mark = 0;
  while (i < s.size()) {
    if (p < pat.size() && pat[p] == '*') {
      star = p++;
      mark = i;
    } else if (p < pat.size() && pat[p] == s[i]) {
      ++p;
      ++i;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      i = ++mark;
    } else {
      return false;
    }
  }
  while (p < pat.size() && pat[p] == '*') ++p;
  return p == pat.size();
}

std::string base_gfx(std::string_view gcn) {
  const auto colon = gcn.find(':');
  return normalize(gcn.substr(0, colon));
}

// Reads one sourced number into `out`, recording source and mark. Missing: error when `required`.
template <class T>
bool read_num(const json& j, const char* key, T& out, device_desc& d, std::string& err, bool required) {
  const auto it = j.find(key);
  if (it == j.end()) {
    if (required) err += std::string(" missing '") + key + "';";
    return !required;
  }
  if (!it->is_object() || !it->contains("value") || !(*it)["value"].is_number()) {
    err += std::string(" '") + key + "' is not {\"value\": number, \"source\": ...};";
    return false;
  }
  const auto src = it->find("source");
  if (src == it->end() || !src->is_string() || src->get<std::string>().empty()) {
    err += std::string(" '") + key + "' has no source;";
    return false;
  }
  out = (*it)["value"].get<T>();
  d.sources[key] = src->get<std::string>();
  if (const auto m = it->find("mark"); m != it->end() && m->is_string()) d.marks[key] = m->get<std::string>();
  return true;
}

std::vector<std::string> read_strings(const json& j, const char* key) {
  std::vector<std::string> out;
  if (const auto it = j.find(key); it != j.end() && it->is_array())
    for (const auto& s : *it)
      if (s.is_string()) out.push_back(s.get<std::string>());
  return out;
}

// Builds a device_desc from an entry. `err` collects every problem; returns false if any.
bool from_json(const json& j, device_desc& d, std::string& err) {
  if (!j.is_object()) {
    err = " entry is not an object;";
    return false;
  }
  if (const auto s = j.find("schema"); s != j.end() && (!s->is_string() || s->get<std::string>() != device_schema))
    err += std::string(" schema is not '") + device_schema + "';";
  const auto name = j.find("name");
  if (name == j.end() || !name->is_string() || name->get<std::string>().empty()) err += " missing 'name';";
  else d.name = name->get<std::string>();
  d.aliases = read_strings(j, "aliases");
  const std::string v = j.value("vendor", std::string{});
  if (v == "nvidia") d.vendor_id = vendor::nvidia;
  else if (v == "amd") d.vendor_id = vendor::amd;
  else err += " 'vendor' must be \"nvidia\" or \"amd\";";
  const std::string isa = j.value("isa", std::string{});
  if (!parse_arch(isa.c_str(), d.isa) || d.isa == arch::generic) err += " 'isa' is not a known arch: '" + isa + "';";
  else if (traits(d.isa).vendor_id != d.vendor_id) err += " 'isa' vendor differs from 'vendor';";
  if (const auto m = j.find("match"); m != j.end() && m->is_object()) d.name_patterns = read_strings(*m, "name_patterns");
  d.mma_families = read_strings(j, "mma_families");
  d.async_copy = read_strings(j, "async_copy");

  bool ok = err.empty();
  ok &= read_num(j, "sm_count", d.sm_count, d, err, true);
  ok &= read_num(j, "warp_size", d.warp_size, d, err, true);
  ok &= read_num(j, "max_threads_per_sm", d.max_threads_per_sm, d, err, true);
  ok &= read_num(j, "max_warps_per_sm", d.max_warps_per_sm, d, err, true);
  ok &= read_num(j, "max_blocks_per_sm", d.max_blocks_per_sm, d, err, true);
  ok &= read_num(j, "max_threads_per_block", d.max_threads_per_block, d, err, true);
  ok &= read_num(j, "smem_per_sm", d.smem_per_sm, d, err, true);
  ok &= read_num(j, "smem_per_block_optin", d.smem_per_block_optin, d, err, true);
  ok &= read_num(j, "smem_static_limit", d.smem_per_block, d, err, true);
  ok &= read_num(j, "smem_reserved_per_block", d.smem_reserved_per_block, d, err, true);
  ok &= read_num(j, "smem_alloc_granularity", d.smem_alloc_granularity, d, err, true);
  ok &= read_num(j, "l2_bytes", d.l2_bytes, d, err, true);
  ok &= read_num(j, "llc_bytes", d.llc_bytes, d, err, true);
  ok &= read_num(j, "memory_bandwidth_gbps", d.mem_bw_gbps, d, err, true);
  if (d.sources.count("smem_static_limit")) d.sources["smem_per_block"] = d.sources["smem_static_limit"];

  const auto peak = j.find("peak_tflops");
  if (peak == j.end() || !peak->is_object()) {
    err += " missing 'peak_tflops';";
    ok = false;
  } else {
    device_desc tmp;
    ok &= read_num(*peak, "bf16_matrix_fp32acc", d.peak_bf16_tflops, tmp, err, true);
    ok &= read_num(*peak, "fp16_matrix_fp32acc", d.peak_fp16_tflops, tmp, err, true);
    ok &= read_num(*peak, "fp32", d.peak_fp32_tflops, tmp, err, true);
    ok &= read_num(*peak, "fp64", d.peak_fp64_tflops, tmp, err, true);
    for (const auto& [k, s] : tmp.sources) d.sources["peak_tflops." + k] = s;
    for (const auto& [k, m] : tmp.marks) d.marks["peak_tflops." + k] = m;
  }

  if (const auto cal = j.find("calibration"); cal != j.end()) {
    if (!cal->is_object()) {
      err += " 'calibration' is not an object of {\"value\": number, \"source\": \"measured: ...\"};";
      ok = false;
    } else {
      for (const auto& [key, entry] : cal->items()) {
        const auto dot = key.find('.');
        if (dot == std::string::npos || dot == 0 || dot + 1 == key.size()) {
          err += " calibration key '" + key + "' is not '<family>.<name>';";
          ok = false;
          continue;
        }
        device_desc tmp;
        double value = 0;
        if (!read_num(*cal, key.c_str(), value, tmp, err, true)) {
          ok = false;
          continue;
        }
        const std::string& src = tmp.sources[key];
        if (src.rfind("measured:", 0) != 0) {
          err += " calibration '" + key + "': the source must start with 'measured:' (device, date, command);";
          ok = false;
          continue;
        }
        d.calibration[key] = value;
        d.sources["calibration." + key] = src;
      }
    }
  }

  if (d.vendor_id == vendor::nvidia) {
    ok &= read_num(j, "cc_major", d.cc_major, d, err, true);
    ok &= read_num(j, "cc_minor", d.cc_minor, d, err, true);
    ok &= read_num(j, "regs_per_sm", d.regs_per_sm, d, err, true);
    ok &= read_num(j, "regs_per_block", d.regs_per_block, d, err, true);
    ok &= read_num(j, "reg_alloc_unit", d.reg_alloc_unit, d, err, true);
    ok &= read_num(j, "max_regs_per_thread", d.max_regs_per_thread, d, err, true);
    ok &= read_num(j, "smsp_per_sm", d.smsp_per_sm, d, err, true);
    ok &= read_num(j, "barrier_blocks_factor", d.barrier_blocks_factor, d, err, true);
    const auto c = j.find("smem_carveouts_kb");
    if (c == j.end() || !c->is_object() || !(*c)["value"].is_array() || !c->contains("source")) {
      err += " 'smem_carveouts_kb' is not {\"value\": [KB...], \"source\": ...};";
      ok = false;
    } else {
      d.smem_carveouts_kb.clear();
      for (const auto& x : (*c)["value"])
        if (x.is_number_integer()) d.smem_carveouts_kb.push_back(x.get<int>());
      std::sort(d.smem_carveouts_kb.begin(), d.smem_carveouts_kb.end());
      d.sources["smem_carveouts_kb"] = (*c)["source"].is_string() ? (*c)["source"].get<std::string>() : "";
    }
  } else {
    d.gcn_arch_name = j.value("gcn_arch_name", std::string{});
    if (d.gcn_arch_name.empty()) {
      err += " missing 'gcn_arch_name';";
      ok = false;
    }
    ok &= read_num(j, "simds_per_cu", d.simds_per_cu, d, err, true);
    ok &= read_num(j, "cus_per_wgp", d.cus_per_wgp, d, err, true);
    ok &= read_num(j, "vgprs_per_simd_lane", d.vgprs_per_simd_lane, d, err, true);
    ok &= read_num(j, "max_arch_vgprs", d.max_arch_vgprs, d, err, true);
    ok &= read_num(j, "agprs_per_lane", d.agprs_per_lane, d, err, true);
    ok &= read_num(j, "vgpr_granule", d.vgpr_granule, d, err, true);
    ok &= read_num(j, "max_waves_per_simd", d.max_waves_per_simd, d, err, true);
    ok &= read_num(j, "sgprs_per_simd", d.sgprs_per_simd, d, err, true);
    ok &= read_num(j, "max_sgprs", d.max_sgprs, d, err, true);
    ok &= read_num(j, "max_barrier_wgs_per_cu", d.max_barrier_wgs_per_cu, d, err, true);
  }
  if (ok && d.warp_size != traits(d.isa).warp_size) {
    err += " warp_size disagrees with the arch table;";
    ok = false;
  }
  return ok && err.empty();
}

// The database: device descriptions plus the raw JSON each was built from (user overrides merge into it).
struct database {
  std::mutex mu;
  std::vector<device_desc> devices;
  std::vector<json> raw;
  std::vector<std::string> errors;
  bool user_env_loaded = false;
};

database& db_storage() {
  static database db;
  return db;
}

std::ptrdiff_t index_of(const database& db, std::string_view name) {
  const std::string key = normalize(name);
  for (std::size_t i = 0; i < db.devices.size(); ++i) {
    if (normalize(db.devices[i].name) == key) return static_cast<std::ptrdiff_t>(i);
    for (const auto& a : db.devices[i].aliases)
      if (normalize(a) == key) return static_cast<std::ptrdiff_t>(i);
  }
  return -1;
}

// Adds or merges one entry. Caller holds db.mu.
bool add_entry(database& db, const json& entry, bool from_user, const std::string& origin, std::string& err) {
  json merged = entry;
  std::ptrdiff_t existing = -1;
  if (entry.is_object() && entry.contains("name") && entry["name"].is_string())
    existing = index_of(db, entry["name"].get<std::string>());
  if (existing >= 0) {
    merged = db.raw[static_cast<std::size_t>(existing)];
    merged.merge_patch(entry);
    merged["name"] = db.devices[static_cast<std::size_t>(existing)].name;
  }
  device_desc d;
  std::string e;
  if (!from_json(merged, d, e)) {
    err += origin + ":" + e + "\n";
    return false;
  }
  d.from_user_file = from_user || (existing >= 0 && db.devices[static_cast<std::size_t>(existing)].from_user_file);
  if (existing >= 0) {
    db.devices[static_cast<std::size_t>(existing)] = std::move(d);
    db.raw[static_cast<std::size_t>(existing)] = std::move(merged);
  } else {
    db.devices.push_back(std::move(d));
    db.raw.push_back(std::move(merged));
  }
  return true;
}

bool load_json_text(database& db, const std::string& text, bool from_user, const std::string& origin, std::string& err) {
  const json j = json::parse(text, nullptr, /*allow_exceptions=*/false, /*ignore_comments=*/true);
  if (j.is_discarded()) {
    err += origin + ": not valid JSON\n";
    return false;
  }
  bool ok = true;
  try {
    if (j.is_array()) {
      std::size_t i = 0;
      for (const auto& e : j) ok &= add_entry(db, e, from_user, origin + "[" + std::to_string(i++) + "]", err);
    } else {
      ok = add_entry(db, j, from_user, origin, err);
    }
  } catch (const std::exception& ex) {
    err += origin + ": " + ex.what() + "\n";
    ok = false;
  }
  return ok;
}

bool load_file_locked(database& db, const std::string& path, std::string& err) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    err += path + ": cannot open\n";
    return false;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return load_json_text(db, ss.str(), true, path, err);
}

database& db() {
  database& d = db_storage();
  static std::once_flag once;
  std::call_once(once, [&d] {
    std::lock_guard lock(d.mu);
    for (std::size_t i = 0; i < detail::embedded_device_count; ++i) {
      const auto& f = detail::embedded_devices[i];
      std::string text;
      for (std::size_t c = 0; c < f.chunk_count; ++c) text += f.chunks[c];
      std::string err;
      if (!load_json_text(d, text, false, std::string("built-in ") + f.name, err)) d.errors.push_back(err);
    }
    if (const char* env = std::getenv("PK_ARCHDB_FILE"); env != nullptr && *env != '\0') {
      std::string err;
      if (!load_file_locked(d, env, err)) d.errors.push_back("PK_ARCHDB_FILE " + err);
    }
    d.user_env_loaded = true;
  });
  return d;
}

// Sets an int field from a non-zero query value, recording the override.
template <class T, class U>
void override_from(device_desc& d, T& field, U q, const char* key) {
  if (q > 0) {
    if (static_cast<T>(q) != field && field != 0)
      d.sources[key] = "query (database: " + std::to_string(field) + ")";
    else
      d.sources[key] = "query";
    field = static_cast<T>(q);
    d.marks.erase(key);
  }
}

}  // namespace

const std::vector<device_desc>& all_devices() { return db().devices; }

std::vector<std::string> load_errors() {
  database& d = db();
  std::lock_guard lock(d.mu);
  return d.errors;
}

bool load_user_devices(const std::string& path, std::string* err) {
  database& d = db();
  std::lock_guard lock(d.mu);
  std::string e;
  const bool ok = load_file_locked(d, path, e);
  if (!ok) {
    d.errors.push_back(e);
    if (err) *err = e;
  }
  return ok;
}

const device_desc* find_device(std::string_view name) {
  database& d = db();
  const auto i = index_of(d, name);
  return i < 0 ? nullptr : &d.devices[static_cast<std::size_t>(i)];
}

arch arch_of(const device_query& q) noexcept {
  if (q.vendor_id == vendor::amd) {
    arch a = arch::generic;
    const std::string gfx = base_gfx(q.gcn_arch_name);
    if (!gfx.empty() && parse_arch(gfx.c_str(), a) && traits(a).vendor_id == vendor::amd) return a;
    return arch::generic;
  }
  if (q.cc_major <= 0) return arch::generic;
  // Table arch names encode the compute capability: sm_<major><minor>[suffix].
  arch best = arch::generic;
  int best_cc = -1;
  bool best_same_major = false;
  const int want = q.cc_major * 10 + q.cc_minor;
  for (const auto& t : arch_table) {
    if (t.vendor_id != vendor::nvidia || t.id == arch::generic) continue;
    int cc = 0;
    for (const char* p = t.name + 3; *p >= '0' && *p <= '9'; ++p) cc = cc * 10 + (*p - '0');
    if (cc > want) continue;
    const bool same_major = cc / 10 == q.cc_major;
    if ((same_major && !best_same_major) || (same_major == best_same_major && cc > best_cc)) {
      best = t.id;
      best_cc = cc;
      best_same_major = same_major;
    }
  }
  return best;
}

device_desc resolve_device(const device_query& q) {
  database& data = db();
  const std::string qname = normalize(q.name);
  const arch qarch = arch_of(q);
  const device_desc* match = nullptr;
  int best_score = 0;
  for (const auto& d : data.devices) {
    if (d.vendor_id != q.vendor_id) continue;
    if (d.vendor_id == vendor::nvidia && q.cc_major > 0 && (d.cc_major != q.cc_major || d.cc_minor != q.cc_minor)) continue;
    if (d.vendor_id == vendor::amd && !q.gcn_arch_name.empty() && base_gfx(d.gcn_arch_name) != base_gfx(q.gcn_arch_name)) continue;
    int score = 0;
    if (!qname.empty()) {
      bool exact = normalize(d.name) == qname;
      for (const auto& a : d.aliases) exact = exact || normalize(a) == qname;
      if (exact) score = 3;
      else if (q.sm_count == 0 || q.sm_count == d.sm_count) {
        for (const auto& p : d.name_patterns)
          if (glob_match(normalize(p), qname)) score = 2;
      }
    }
    if (score > 0 && q.sm_count > 0 && q.sm_count == d.sm_count) ++score;
    if (score > best_score) {
      best_score = score;
      match = &d;
    }
  }

  device_desc r;
  if (match != nullptr) {
    r = *match;
  } else {
    r.synthesized = true;
    r.name = q.name.empty() ? std::string("unknown ") + name_of(qarch) : q.name;
    r.vendor_id = q.vendor_id;
    r.isa = qarch;
    const auto& t = traits(qarch);
    r.warp_size = t.warp_size;
    r.max_threads_per_block = t.max_threads_per_block;
    r.sources["warp_size"] = r.sources["max_threads_per_block"] = std::string("arch traits ") + t.name;
    // Per-arch limits come from the first database entry of the same arch (or of the nearest arch on the
    // fallback chain); product facts (SM count, caches, rates) are not copied.
    const device_desc* ref = nullptr;
    for (arch a = qarch; ref == nullptr; a = traits(a).fallback) {
      for (const auto& d : data.devices)
        if (d.isa == a && d.vendor_id == q.vendor_id) {
          ref = &d;
          break;
        }
      if (a == arch::generic) break;
    }
    if (ref != nullptr) {
      const std::string from = "per-arch limits of " + ref->name + " (" + name_of(ref->isa) + ")";
      device_desc p = *ref;
      p.name = r.name;
      p.aliases.clear();
      p.name_patterns.clear();
      p.synthesized = true;
      p.from_user_file = false;
      p.isa = qarch;
      p.sm_count = 0;
      p.l2_bytes = p.llc_bytes = 0;
      p.mem_bw_gbps = p.peak_bf16_tflops = p.peak_fp16_tflops = p.peak_fp32_tflops = p.peak_fp64_tflops = 0;
      p.marks.clear();
      for (auto& [k, s] : p.sources) s = from;
      for (const char* k : {"sm_count", "l2_bytes", "llc_bytes", "memory_bandwidth_gbps", "peak_tflops.bf16_matrix_fp32acc",
                            "peak_tflops.fp16_matrix_fp32acc", "peak_tflops.fp32", "peak_tflops.fp64"})
        p.sources[k] = "unknown";
      r = std::move(p);
    }
    r.cc_major = q.cc_major;
    r.cc_minor = q.cc_minor;
    if (q.vendor_id == vendor::amd && !q.gcn_arch_name.empty()) r.gcn_arch_name = base_gfx(q.gcn_arch_name);
    if (q.mem_clock_khz > 0 && q.mem_bus_width_bits > 0) {
      // Double data rate x bus width, as CUDA's deviceQuery sample computes peak bandwidth.
      r.mem_bw_gbps = 2.0 * q.mem_clock_khz * 1e3 * (q.mem_bus_width_bits / 8.0) / 1e9;
      r.sources["memory_bandwidth_gbps"] = "query: 2 x memory clock x bus width / 8";
    }
  }

  override_from(r, r.sm_count, q.sm_count, "sm_count");
  override_from(r, r.warp_size, q.warp_size, "warp_size");
  override_from(r, r.max_threads_per_sm, q.max_threads_per_sm, "max_threads_per_sm");
  override_from(r, r.max_threads_per_block, q.max_threads_per_block, "max_threads_per_block");
  override_from(r, r.regs_per_sm, q.regs_per_sm, "regs_per_sm");
  override_from(r, r.regs_per_block, q.regs_per_block, "regs_per_block");
  override_from(r, r.max_blocks_per_sm, q.max_blocks_per_sm, "max_blocks_per_sm");
  override_from(r, r.smem_per_sm, q.smem_per_sm, "smem_per_sm");
  override_from(r, r.smem_per_block, q.smem_per_block, "smem_per_block");
  override_from(r, r.smem_per_block_optin, q.smem_per_block_optin, "smem_per_block_optin");
  override_from(r, r.smem_reserved_per_block, q.smem_reserved_per_block, "smem_reserved_per_block");
  override_from(r, r.l2_bytes, q.l2_bytes, "l2_bytes");
  if (q.max_threads_per_sm > 0 && r.warp_size > 0) {
    r.max_warps_per_sm = r.max_threads_per_sm / r.warp_size;
    r.sources["max_warps_per_sm"] = "query: max_threads_per_sm / warp_size";
  }
  if (q.smem_per_sm > 0 && !r.smem_carveouts_kb.empty() && r.smem_carveouts_kb.back() * 1024LL < r.smem_per_sm) {
    r.smem_carveouts_kb.push_back(static_cast<int>(r.smem_per_sm / 1024));
    r.sources["smem_carveouts_kb"] += "; largest carveout from query";
  }
  return r;
}

std::string describe(const device_desc& d) {
  std::ostringstream o;
  auto mark = [&d](const char* k) {
    const auto it = d.marks.find(k);
    return it == d.marks.end() ? std::string{} : " [" + it->second + "]";
  };
  auto kib = [](std::int64_t b) {
    std::ostringstream s;
    s << b << " B (" << static_cast<double>(b) / 1024.0 << " KiB)";
    return s.str();
  };
  const bool nv = d.vendor_id == vendor::nvidia;
  o << d.name << (d.synthesized ? " (synthesized from device query)" : "") << (d.from_user_file ? " (user file)" : "")
    << "\n";
  o << "  vendor " << (nv ? "NVIDIA" : "AMD") << ", arch " << name_of(d.isa);
  if (nv) o << ", compute capability " << d.cc_major << "." << d.cc_minor;
  else o << ", " << d.gcn_arch_name;
  o << "\n";
  o << "  " << d.sm_count << (nv ? " SMs" : " CUs") << mark("sm_count") << ", warp " << d.warp_size << ", "
    << d.max_threads_per_sm << " threads / " << d.max_warps_per_sm << " warps / " << d.max_blocks_per_sm
    << " blocks per " << (nv ? "SM" : "CU") << mark("max_blocks_per_sm") << ", " << d.max_threads_per_block
    << " threads per block\n";
  if (nv) {
    o << "  registers: " << d.regs_per_sm << " per SM, " << d.regs_per_block << " per block, allocated per warp in units of "
      << d.reg_alloc_unit << ", max " << d.max_regs_per_thread << " per thread\n";
    o << "  shared memory: " << kib(d.smem_per_sm) << " per SM" << mark("smem_per_sm") << ", "
      << kib(d.smem_per_block_optin) << " per block (opt-in), " << kib(d.smem_per_block) << " without opt-in, "
      << d.smem_reserved_per_block << " B reserved per block, granularity " << d.smem_alloc_granularity << " B\n";
  } else {
    o << "  " << d.simds_per_cu << " SIMDs per CU, " << d.max_waves_per_simd << " waves per SIMD";
    if (d.cus_per_wgp > 1) o << ", " << d.cus_per_wgp << " CUs per WGP (WGP mode)";
    o << "\n  VGPRs: " << d.vgprs_per_simd_lane << " per lane (max " << d.max_arch_vgprs << " arch + " << d.agprs_per_lane
      << " AGPR per wave), granule " << d.vgpr_granule << "; SGPRs " << d.max_sgprs << " addressable\n";
    o << "  LDS: " << kib(d.smem_per_sm) << " per CU, " << kib(d.smem_per_block_optin) << " per workgroup, granularity "
      << d.smem_alloc_granularity << " B" << mark("smem_alloc_granularity") << "\n";
  }
  o << "  L2 " << kib(d.l2_bytes) << mark("l2_bytes");
  if (d.llc_bytes > 0) o << ", last-level cache " << kib(d.llc_bytes);
  o << ", memory " << d.mem_bw_gbps << " GB/s" << mark("memory_bandwidth_gbps") << "\n";
  o << "  peak TFLOPS (dense): bf16 " << d.peak_bf16_tflops << mark("peak_tflops.bf16_matrix_fp32acc") << ", fp16 "
    << d.peak_fp16_tflops << mark("peak_tflops.fp16_matrix_fp32acc") << ", fp32 " << d.peak_fp32_tflops
    << mark("peak_tflops.fp32") << ", fp64 " << d.peak_fp64_tflops << mark("peak_tflops.fp64") << "\n";
  o << "  matrix:";
  for (const auto& m : d.mma_families) o << " " << m;
  o << "; async copy:";
  for (const auto& c : d.async_copy) o << " " << c;
  if (d.async_copy.empty()) o << " none";
  o << "\n";
  for (const auto& [key, value] : d.calibration) {
    const auto src = d.sources.find("calibration." + key);
    o << "  calibration " << key << " = " << value << " (" << (src != d.sources.end() ? src->second : "") << ")\n";
  }
  return o.str();
}

calibrated_value calibrated(const device_desc& d, std::string_view key, double uncalibrated) {
  if (const auto it = d.calibration.find(key); it != d.calibration.end()) return {it->second, d.name};
  for (const device_desc& o : all_devices())
    if (o.isa == d.isa)
      if (const auto it = o.calibration.find(key); it != o.calibration.end()) return {it->second, o.name};
  return {uncalibrated, {}};
}

}  // namespace pk::archdb
