// pk::archdb device database: every entry loads with every field sourced; lookup and query resolution.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "pk/archdb/device.hpp"

namespace ad = pk::archdb;
using json = nlohmann::json;

namespace {

// The products the library claims to support; adding a device adds one file and one line here.
struct expected_device {
  const char* name;
  ad::arch isa;
  int sm_count;
};
const expected_device supported[] = {
    {"A100-SXM4-80GB", ad::arch::sm80, 108}, {"A100-PCIe-40GB", ad::arch::sm80, 108}, {"RTX 3090", ad::arch::sm86, 82},
    {"RTX 4090", ad::arch::sm89, 128},       {"RTX 6000 Ada", ad::arch::sm89, 142},   {"L40S", ad::arch::sm89, 142},
    {"L4", ad::arch::sm89, 58},              {"H100 SXM", ad::arch::sm90a, 132},      {"H200 SXM", ad::arch::sm90a, 132},
    {"B200", ad::arch::sm100, 148},          {"RTX 5090", ad::arch::sm120, 170},      {"MI250X", ad::arch::gfx90a, 110},
    {"MI300X", ad::arch::gfx942, 304},       {"MI325X", ad::arch::gfx942, 304},       {"MI355X", ad::arch::gfx950, 256},
    {"RX 7900 XTX", ad::arch::gfx1100, 96},  {"RTX PRO 6000 Blackwell", ad::arch::sm120, 188},
    {"RX 9070 XT", ad::arch::gfx1201, 64},
};

const char* const required_common[] = {"sm_count", "warp_size", "max_threads_per_sm", "max_warps_per_sm",
                                       "max_blocks_per_sm", "max_threads_per_block", "smem_per_sm",
                                       "smem_per_block_optin", "smem_static_limit", "smem_reserved_per_block",
                                       "smem_alloc_granularity", "l2_bytes", "llc_bytes", "memory_bandwidth_gbps"};
const char* const required_nvidia[] = {"cc_major", "cc_minor", "regs_per_sm", "regs_per_block", "reg_alloc_unit",
                                       "max_regs_per_thread", "smsp_per_sm", "smem_carveouts_kb", "barrier_blocks_factor"};
const char* const required_amd[] = {"simds_per_cu", "cus_per_wgp", "vgprs_per_simd_lane", "max_arch_vgprs",
                                    "agprs_per_lane", "vgpr_granule", "max_waves_per_simd", "sgprs_per_simd",
                                    "max_sgprs", "max_barrier_wgs_per_cu"};

void expect_sourced(const json& j, const std::string& key, const std::string& file) {
  SCOPED_TRACE(file + ": " + key);
  ASSERT_TRUE(j.contains(key));
  const auto& f = j[key];
  ASSERT_TRUE(f.is_object());
  ASSERT_TRUE(f.contains("value"));
  EXPECT_TRUE(f["value"].is_number() || f["value"].is_array());
  ASSERT_TRUE(f.contains("source"));
  ASSERT_TRUE(f["source"].is_string());
  EXPECT_FALSE(f["source"].get<std::string>().empty());
  if (f.contains("mark")) {
    const std::string m = f["mark"].get<std::string>();
    EXPECT_TRUE(m == "derived" || m == "2nd" || m == "unsourced" || m == "conflict") << m;
  }
}

// Every number anywhere in the entry must sit in a {"value", "source"} object.
void expect_no_bare_numbers(const json& j, const std::string& where) {
  if (j.is_object()) {
    if (j.contains("value") && j.contains("source")) return;
    for (const auto& [k, v] : j.items()) expect_no_bare_numbers(v, where + "." + k);
  } else if (j.is_array()) {
    for (const auto& v : j) expect_no_bare_numbers(v, where + "[]");
  } else {
    EXPECT_FALSE(j.is_number()) << "bare number at " << where;
  }
}

// What the CUDA runtime reports of an NVIDIA part: its name, compute capability and SM count.
ad::device_query nvidia_query(const char* name, int cc_major, int cc_minor, int sm_count) {
  ad::device_query q;
  q.name = name;
  q.vendor_id = ad::vendor::nvidia;
  q.cc_major = cc_major;
  q.cc_minor = cc_minor;
  q.sm_count = sm_count;
  return q;
}

}  // namespace

TEST(Archdb_Devices, BuiltInsLoadWithoutErrors) {
  for (const auto& e : ad::load_errors())
    if (e.find("built-in") != std::string::npos) ADD_FAILURE() << e;
  EXPECT_GE(ad::all_devices().size(), std::size(supported));
}

TEST(Archdb_Devices, EveryFileHasEveryFieldSourced) {
  int files = 0;
  std::set<std::string> names;
  for (const auto& p : std::filesystem::directory_iterator(PK_ARCHDB_DEVICES_DIR)) {
    if (p.path().extension() != ".json") continue;
    ++files;
    const std::string file = p.path().filename().string();
    std::ifstream in(p.path());
    const json j = json::parse(in, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << file;
    EXPECT_EQ(j.value("schema", ""), "pk.archdb.device/1") << file;
    ASSERT_TRUE(j.contains("name")) << file;
    EXPECT_TRUE(names.insert(j["name"].get<std::string>()).second) << "duplicate name in " << file;
    EXPECT_TRUE(j.contains("aliases") && j["aliases"].is_array() && !j["aliases"].empty()) << file;
    EXPECT_TRUE(j.contains("match") && j["match"].contains("source")) << file;
    EXPECT_TRUE(j.contains("features_source") && !j["features_source"].get<std::string>().empty()) << file;
    EXPECT_TRUE(j.contains("mma_families") && !j["mma_families"].empty()) << file;
    for (const char* k : required_common) expect_sourced(j, k, file);
    const bool nv = j.value("vendor", "") == "nvidia";
    if (nv) {
      for (const char* k : required_nvidia) expect_sourced(j, k, file);
    } else {
      EXPECT_EQ(j.value("vendor", ""), "amd") << file;
      EXPECT_FALSE(j.value("gcn_arch_name", "").empty()) << file;
      for (const char* k : required_amd) expect_sourced(j, k, file);
    }
    ASSERT_TRUE(j.contains("peak_tflops")) << file;
    for (const char* k : {"bf16_matrix_fp32acc", "fp16_matrix_fp32acc", "fp32", "fp64"}) expect_sourced(j["peak_tflops"], k, file);
    expect_no_bare_numbers(j, file);
  }
  EXPECT_EQ(files, static_cast<int>(std::size(supported))) << "a device file was added without a test expectation";
}

TEST(Archdb_Devices, EverySupportedDeviceResolvesToATunedArch) {
  for (const auto& s : supported) {
    SCOPED_TRACE(s.name);
    const ad::device_desc* d = ad::find_device(s.name);
    ASSERT_NE(d, nullptr);
    EXPECT_EQ(d->isa, s.isa);
    EXPECT_NE(d->isa, ad::arch::generic);
    EXPECT_EQ(d->sm_count, s.sm_count);
    EXPECT_EQ(d->warp_size, ad::traits(d->isa).warp_size);
    EXPECT_FALSE(d->synthesized);
    EXPECT_GT(d->l2_bytes, 0);
    EXPECT_GT(d->mem_bw_gbps, 0);
    EXPECT_GT(d->peak_bf16_tflops, 0);
    EXPECT_LE(d->smem_per_block_optin, d->smem_per_sm);
    EXPECT_EQ(d->max_warps_per_sm * d->warp_size, d->max_threads_per_sm);
    EXPECT_FALSE(ad::describe(*d).empty());
    for (const char* k : {"sm_count", "l2_bytes", "peak_tflops.bf16_matrix_fp32acc"}) {
      ASSERT_TRUE(d->sources.count(k)) << k;
      EXPECT_FALSE(d->sources.at(k).empty()) << k;
    }
    // Queried-name resolution through the first alias (the runtime's spelling).
    ad::device_query q;
    q.name = d->aliases.front();
    q.vendor_id = d->vendor_id;
    q.cc_major = d->cc_major;
    q.cc_minor = d->cc_minor;
    q.gcn_arch_name = d->gcn_arch_name;
    q.sm_count = d->sm_count;
    const ad::device_desc r = ad::resolve_device(q);
    EXPECT_EQ(r.name, d->name);
    EXPECT_FALSE(r.synthesized);
  }
}

TEST(Archdb_Devices, FindIsCaseAndSeparatorInsensitive) {
  const auto* a = ad::find_device("rtx-3090");
  const auto* b = ad::find_device("NVIDIA GeForce RTX 3090");
  const auto* c = ad::find_device("Rtx_3090");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a, b);
  EXPECT_EQ(a, c);
  EXPECT_EQ(a->name, "RTX 3090");
  EXPECT_EQ(ad::find_device("no such gpu"), nullptr);
}

TEST(Archdb_Devices, PerArchFactsMatchArchFacts) {
  // ARCH_FACTS §1 / §3 spot checks.
  const auto* a100 = ad::find_device("A100-SXM4-80GB");
  ASSERT_NE(a100, nullptr);
  EXPECT_EQ(a100->smem_per_block_optin, 166912);
  EXPECT_EQ(a100->smem_per_sm, 167936);
  EXPECT_EQ(a100->max_blocks_per_sm, 32);
  const auto* r3090 = ad::find_device("RTX 3090");
  EXPECT_EQ(r3090->smem_per_block_optin, 101376);
  EXPECT_EQ(r3090->max_threads_per_sm, 1536);
  EXPECT_EQ(r3090->max_blocks_per_sm, 16);
  const auto* h100 = ad::find_device("H100 SXM");
  EXPECT_EQ(h100->smem_per_block_optin, 232448);
  const auto* r5090 = ad::find_device("RTX 5090");
  EXPECT_EQ(r5090->max_blocks_per_sm, 24);
  EXPECT_EQ(r5090->marks.at("max_blocks_per_sm"), "conflict");
  const auto* mi355 = ad::find_device("MI355X");
  EXPECT_EQ(mi355->smem_per_sm, 163840);
  EXPECT_EQ(mi355->smem_alloc_granularity, 1280);
  const auto* xtx = ad::find_device("RX 7900 XTX");
  EXPECT_EQ(xtx->vgpr_granule, 24);
  EXPECT_EQ(xtx->max_waves_per_simd, 16);
  EXPECT_EQ(xtx->llc_bytes, 96LL * 1024 * 1024);
  EXPECT_EQ(ad::find_device("L40S")->marks.at("l2_bytes"), "conflict");
}

TEST(Archdb_Devices, ResolvesKnownH200) {
  const ad::device_query q = nvidia_query("NVIDIA H200", 9, 0, 132);
  const ad::device_desc d = ad::resolve_device(q);
  EXPECT_EQ(d.name, "H200 SXM");
  EXPECT_FALSE(d.synthesized);
  EXPECT_EQ(d.isa, ad::arch::sm90a);
  EXPECT_EQ(d.sm_count, 132);
  EXPECT_EQ(d.sources.at("sm_count"), "query");
  EXPECT_DOUBLE_EQ(d.mem_bw_gbps, 4800);
}

TEST(Archdb_Devices, ResolvesRtxPro6000BlackwellByItsReportedName) {
  // "RTX 6000" is in both professional parts' names: the Blackwell one must not resolve to the Ada entry.
  const ad::device_query q = nvidia_query("NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition", 12, 0, 188);
  const ad::device_desc d = ad::resolve_device(q);
  EXPECT_EQ(d.name, "RTX PRO 6000 Blackwell");
  EXPECT_FALSE(d.synthesized);
  EXPECT_EQ(d.isa, ad::arch::sm120);
  EXPECT_EQ(d.l2_bytes, std::int64_t{128} << 20);
  EXPECT_EQ(d.smem_per_block_optin, 101376);
}

TEST(Archdb_Devices, PatternNeedsMatchingSmCount) {
  // a 3090 Ti: the 3090 pattern matches, the SM count does not
  const ad::device_query q = nvidia_query("NVIDIA GeForce RTX 3090 Ti", 8, 6, 84);
  const ad::device_desc d = ad::resolve_device(q);
  EXPECT_TRUE(d.synthesized);
  EXPECT_EQ(d.isa, ad::arch::sm86);
  EXPECT_EQ(d.sm_count, 84);
  EXPECT_EQ(d.smem_per_block_optin, 101376);  // per-arch limit from the sm_86 entry
  EXPECT_EQ(d.peak_bf16_tflops, 0);           // product facts are not copied
}

TEST(Archdb_Devices, SynthesizesUnknownDeviceWithQueriedLimits) {
  ad::device_query q = nvidia_query("Made-up Orin-like GPU", 8, 7, 16);  // a made-up compute capability 8.7 part
  q.max_threads_per_sm = 1536;
  q.smem_per_sm = 167936;
  q.smem_per_block_optin = 166912;
  q.l2_bytes = 4 << 20;
  q.mem_clock_khz = 1600000;
  q.mem_bus_width_bits = 256;
  const ad::device_desc d = ad::resolve_device(q);
  EXPECT_TRUE(d.synthesized);
  EXPECT_EQ(d.name, "Made-up Orin-like GPU");
  EXPECT_EQ(d.isa, ad::arch::sm86);  // highest table arch of major 8 with minor <= 7
  EXPECT_EQ(d.cc_major, 8);
  EXPECT_EQ(d.cc_minor, 7);
  EXPECT_EQ(d.sm_count, 16);
  EXPECT_EQ(d.smem_per_sm, 167936);
  EXPECT_EQ(d.smem_per_block_optin, 166912);
  EXPECT_EQ(d.max_warps_per_sm, 48);
  EXPECT_EQ(d.l2_bytes, 4 << 20);
  EXPECT_NEAR(d.mem_bw_gbps, 102.4, 1e-9);  // 2 x 1.6 GHz x 32 B
  EXPECT_EQ(d.warp_size, 32);
  EXPECT_EQ(d.regs_per_sm, 65536);
  EXPECT_NE(d.sources.at("smem_per_sm").find("query"), std::string::npos);
  EXPECT_NE(d.smem_carveouts_kb.back(), 100) << "the queried 164 KB carveout must be usable";
  EXPECT_NE(ad::describe(d).find("synthesized"), std::string::npos);
}

TEST(Archdb_Devices, SynthesizesUnknownAmdDevice) {
  ad::device_query q;
  q.name = "AMD Instinct MI308X";
  q.vendor_id = ad::vendor::amd;
  q.gcn_arch_name = "gfx942:sramecc+:xnack-";
  q.sm_count = 80;
  const ad::device_desc d = ad::resolve_device(q);
  EXPECT_TRUE(d.synthesized);
  EXPECT_EQ(d.isa, ad::arch::gfx942);
  EXPECT_EQ(d.gcn_arch_name, "gfx942");
  EXPECT_EQ(d.sm_count, 80);
  EXPECT_EQ(d.max_waves_per_simd, 8);
  EXPECT_EQ(d.smem_per_sm, 65536);
}

TEST(Archdb_Devices, ArchOfQuery) {
  ad::device_query q;
  q.vendor_id = ad::vendor::nvidia;
  q.cc_major = 8; q.cc_minor = 9;
  EXPECT_EQ(ad::arch_of(q), ad::arch::sm89);
  q.cc_major = 9; q.cc_minor = 0;
  EXPECT_EQ(ad::arch_of(q), ad::arch::sm90a);
  q.cc_major = 10; q.cc_minor = 3;
  EXPECT_EQ(ad::arch_of(q), ad::arch::sm100);
  q.cc_major = 12; q.cc_minor = 0;
  EXPECT_EQ(ad::arch_of(q), ad::arch::sm120);
  q.cc_major = 7; q.cc_minor = 5;
  EXPECT_EQ(ad::arch_of(q), ad::arch::generic);
  q.vendor_id = ad::vendor::amd;
  q.gcn_arch_name = "gfx90a:sramecc+:xnack-";
  EXPECT_EQ(ad::arch_of(q), ad::arch::gfx90a);
  q.gcn_arch_name = "gfx908";
  EXPECT_EQ(ad::arch_of(q), ad::arch::generic);
}

TEST(Archdb_Devices, UserFileAddsAndOverrides) {
  const auto dir = std::filesystem::temp_directory_path() / ("pk_archdb_user_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto path = (dir / "user.json").string();
  {
    json base;  // a full new entry cloned from the H100 file, renamed
    std::ifstream in(std::string(PK_ARCHDB_DEVICES_DIR) + "/h100-sxm.json");
    base = json::parse(in);
    base["name"] = "H100 PCIe (user)";
    base["aliases"] = json::array({"NVIDIA H100 PCIe"});
    base["match"]["name_patterns"] = json::array();
    base["sm_count"] = {{"value", 114}, {"source", "user measurement"}};
    json override_l4 = {{"name", "l4"}, {"sm_count", {{"value", 60}, {"source", "user: cudaGetDeviceProperties"}}}};
    std::ofstream(path) << json::array({base, override_l4}).dump(2);
  }
  std::string err;
  ASSERT_TRUE(ad::load_user_devices(path, &err)) << err;
  const auto* h = ad::find_device("NVIDIA H100 PCIe");
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(h->sm_count, 114);
  EXPECT_TRUE(h->from_user_file);
  const auto* l4 = ad::find_device("L4");
  ASSERT_NE(l4, nullptr);
  EXPECT_EQ(l4->name, "L4");
  EXPECT_EQ(l4->sm_count, 60);
  EXPECT_EQ(l4->sources.at("sm_count"), "user: cudaGetDeviceProperties");
  EXPECT_EQ(l4->smem_per_block_optin, 101376) << "fields not in the override are kept";
  EXPECT_TRUE(l4->from_user_file);

  // Bad files are errors, not crashes.
  std::ofstream(dir / "bad.json") << "{ not json";
  EXPECT_FALSE(ad::load_user_devices((dir / "bad.json").string(), &err));
  EXPECT_NE(err.find("not valid JSON"), std::string::npos);
  std::ofstream(dir / "partial.json") << R"({"name": "Brand new GPU", "vendor": "nvidia", "isa": "sm_80"})";
  EXPECT_FALSE(ad::load_user_devices((dir / "partial.json").string(), &err));
  EXPECT_NE(err.find("missing 'sm_count'"), std::string::npos) << err;
  EXPECT_EQ(ad::find_device("Brand new GPU"), nullptr);
  EXPECT_FALSE(ad::load_user_devices((dir / "absent.json").string(), &err));
  std::filesystem::remove_all(dir);

  // Restore L4 for other tests in this process.
  const auto restore = (std::filesystem::temp_directory_path() / ("pk_archdb_restore_" + std::to_string(::getpid()) + ".json")).string();
  std::ofstream(restore) << json{{"name", "L4"}, {"sm_count", {{"value", 58}, {"source", "test restore"}}}}.dump();
  EXPECT_TRUE(ad::load_user_devices(restore, &err)) << err;
  std::filesystem::remove(restore);
}

// Cost-model calibration: sourced measurements per device, found for another device of the same arch, and
// the a-priori value elsewhere; a calibration without a measured source is refused.
TEST(Archdb_Devices, CalibrationIsMeasuredAndSharedByTheArch) {
  const auto* h200 = ad::find_device("H200 SXM");
  ASSERT_NE(h200, nullptr);
  ASSERT_FALSE(h200->calibration.empty());
  for (const auto& [key, value] : h200->calibration) {
    EXPECT_NE(key.find('.'), std::string::npos) << key;
    EXPECT_EQ(h200->sources.at("calibration." + key).rfind("measured:", 0), 0u) << key;
    const ad::calibrated_value own = ad::calibrated(*h200, key, -1.0);
    EXPECT_EQ(own.value, value) << key;
    EXPECT_EQ(own.measured_on, "H200 SXM") << key;
  }
  const auto* h100 = ad::find_device("H100 SXM");
  ASSERT_NE(h100, nullptr);
  ASSERT_EQ(h100->isa, h200->isa);
  const auto& [key, value] = *h200->calibration.begin();
  const ad::calibrated_value shared = ad::calibrated(*h100, key, -1.0);
  EXPECT_EQ(shared.value, value) << "a device without its own measurement takes its arch's";
  EXPECT_EQ(shared.measured_on, "H200 SXM");
  const auto* a100 = ad::find_device("A100 SXM4 80GB");
  ASSERT_NE(a100, nullptr);
  const ad::calibrated_value none = ad::calibrated(*a100, key, -1.0);
  EXPECT_EQ(none.value, -1.0);
  EXPECT_TRUE(none.measured_on.empty());

  const auto dir = std::filesystem::temp_directory_path() / ("pk_archdb_cal_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::string err;
  std::ofstream(dir / "unmeasured.json")
      << R"({"name": "L4", "calibration": {"attention.ws_tile_us": {"value": 1.0, "source": "a guess"}}})";
  EXPECT_FALSE(ad::load_user_devices((dir / "unmeasured.json").string(), &err));
  EXPECT_NE(err.find("must start with 'measured:'"), std::string::npos) << err;
  std::ofstream(dir / "nofamily.json")
      << R"({"name": "L4", "calibration": {"ws_tile_us": {"value": 1.0, "source": "measured: L4, today"}}})";
  EXPECT_FALSE(ad::load_user_devices((dir / "nofamily.json").string(), &err));
  EXPECT_NE(err.find("is not '<family>.<name>'"), std::string::npos) << err;
  std::filesystem::remove_all(dir);
  EXPECT_TRUE(ad::find_device("L4")->calibration.empty()) << "a refused file changes nothing";
}

// PK_ARCHDB_FILE is read when the database is first used, so this runs in a fresh process: the
// "threadsafe" death-test style re-executes the test binary for the EXPECT_EXIT statement.
TEST(Archdb_Devices, UserFileFromEnvironment) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const auto path = (std::filesystem::temp_directory_path() / ("pk_archdb_env_" + std::to_string(::getpid()) + ".json")).string();
  std::ofstream(path) << R"({"name": "RTX 4090", "memory_bandwidth_gbps": {"value": 1000, "source": "env test"}})";
  ::setenv("PK_ARCHDB_FILE", path.c_str(), 1);
  EXPECT_EXIT(
      {
        const auto* d = ad::find_device("RTX 4090");
        const bool ok = d != nullptr && d->mem_bw_gbps == 1000 && d->from_user_file &&
                        d->sources.at("memory_bandwidth_gbps") == "env test" && d->sm_count == 128;
        std::filesystem::remove(path);  // the re-executed child wrote its own file
        std::exit(ok ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
  ::unsetenv("PK_ARCHDB_FILE");
  std::filesystem::remove(path);
}
