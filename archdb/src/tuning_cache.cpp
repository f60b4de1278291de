// pk::archdb — tuning cache: JSON file, flock-serialised read-merge-write, atomic rename.
#include "pk/archdb/tuning_cache.hpp"

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

namespace pk::archdb {
namespace {

using json = nlohmann::json;

std::string lower(std::string_view s) {
  std::string o(s);
  for (auto& c : o) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return o;
}

std::string utc_now_iso8601() {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// RAII exclusive flock on a sidecar lock file (the data file itself is replaced by rename, so it cannot
// carry the lock).
class file_lock {
 public:
  explicit file_lock(const std::string& path) {
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) {
      err_ = "cannot open lock file " + path + ": " + std::strerror(errno);
      return;
    }
    int rc;
    do rc = ::flock(fd_, LOCK_EX);
    while (rc != 0 && errno == EINTR);
    if (rc != 0) {
      err_ = "cannot lock " + path + ": " + std::strerror(errno);
      ::close(fd_);
      fd_ = -1;
    }
  }
  ~file_lock() {
    if (fd_ >= 0) {
      ::flock(fd_, LOCK_UN);
      ::close(fd_);
    }
  }
  file_lock(const file_lock&) = delete;
  file_lock& operator=(const file_lock&) = delete;
  [[nodiscard]] bool ok() const { return fd_ >= 0; }
  [[nodiscard]] const std::string& error() const { return err_; }

 private:
  int fd_ = -1;
  std::string err_;
};

json to_json(const std::map<tuning_key, tuning_entry>& entries) {
  json arr = json::array();
  for (const auto& [k, e] : entries)
    arr.push_back({{"device", k.device},
                   {"family", k.family},
                   {"candidate_set", k.candidate_set},
                   {"bucket", k.bucket},
                   {"winner", e.winner},
                   {"measured_us", e.measured_us},
                   {"date", e.date}});
  return {{"schema", tuning_cache::schema_name}, {"version", tuning_cache::schema_version}, {"entries", arr}};
}

// Writes `text` to a temporary file next to `path`, flushes it to disk and renames it over `path`.
bool write_atomic(const std::string& path, const std::string& text, std::string& err) {
  std::string tmpl = path + ".tmp.XXXXXX";
  const int fd = ::mkstemp(tmpl.data());
  if (fd < 0) {
    err = "cannot create a temporary file next to " + path + ": " + std::strerror(errno);
    return false;
  }
  std::size_t off = 0;
  while (off < text.size()) {
    const ssize_t n = ::write(fd, text.data() + off, text.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      err = "cannot write " + tmpl + ": " + std::strerror(errno);
      ::close(fd);
      ::unlink(tmpl.c_str());
      return false;
    }
    off += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    err = "cannot flush " + tmpl + ": " + std::strerror(errno);
    ::unlink(tmpl.c_str());
    return false;
  }
  if (::rename(tmpl.c_str(), path.c_str()) != 0) {
    err = "cannot rename " + tmpl + " to " + path + ": " + std::strerror(errno);
    ::unlink(tmpl.c_str());
    return false;
  }
  return true;
}

}  // namespace

bool parse_tuning_mode(std::string_view s, tuning_mode& out) noexcept {
  std::string v;
  try {
    v = lower(s);
  } catch (...) {
    return false;
  }
  if (v == "off") out = tuning_mode::off;
  else if (v == "cached") out = tuning_mode::cached;
  else if (v == "tune") out = tuning_mode::tune;
  else return false;
  return true;
}

const char* to_string(tuning_mode m) noexcept {
  switch (m) {
    case tuning_mode::off: return "off";
    case tuning_mode::tune: return "tune";
    case tuning_mode::cached: break;
  }
  return "cached";
}

tuning_mode tuning_mode_from_env() {
  const char* env = std::getenv("PK_TUNING");
  tuning_mode m = tuning_mode::cached;
  if (env == nullptr || *env == '\0') return m;
  if (!parse_tuning_mode(env, m)) {
    static bool warned = false;
    if (!warned) {
      warned = true;
      std::fprintf(stderr, "pk: warning: PK_TUNING='%s' is not off|cached|tune; using cached\n", env);
    }
  }
  return m;
}

std::string device_identity(const device_desc& d) {
  std::ostringstream o;
  o << d.name;
  if (d.vendor_id == vendor::nvidia) o << "/sm" << d.sm_count << "/cc" << d.cc_major << "." << d.cc_minor;
  else o << "/cu" << d.sm_count << "/" << d.gcn_arch_name;
  return o.str();
}

std::string tuning_cache::default_path() {
  if (const char* p = std::getenv("PK_TUNING_CACHE"); p != nullptr && *p != '\0') return p;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x != nullptr && *x != '\0') return std::string(x) + "/pk/tuning.json";
  if (const char* h = std::getenv("HOME"); h != nullptr && *h != '\0') return std::string(h) + "/.cache/pk/tuning.json";
  return {};
}

tuning_cache& tuning_cache::instance() {
  static tuning_cache c(default_path());
  return c;
}

tuning_cache::tuning_cache(std::string path) : path_(std::move(path)) {}

void tuning_cache::warn_once(const std::string& msg) {
  if (warned_) return;
  warned_ = true;
  std::fprintf(stderr, "pk: warning: tuning cache %s: %s; ignoring it\n", path_.c_str(), msg.c_str());
}

tuning_cache::file_state tuning_cache::read_file(std::map<tuning_key, tuning_entry>& out, std::string& why) const {
  out.clear();
  std::error_code ec;
  if (!std::filesystem::exists(path_, ec)) return file_state::missing;
  std::ifstream in(path_, std::ios::binary);
  if (!in) {
    why = "cannot open for reading";
    return file_state::unreadable;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  const json j = json::parse(ss.str(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    why = "not valid JSON (corrupt)";
    return file_state::corrupt;
  }
  if (!j.is_object() || !j.contains("schema") || j["schema"] != schema_name || !j.contains("version") ||
      j["version"] != schema_version) {
    why = std::string("foreign file (expected schema '") + schema_name + "' version " + std::to_string(schema_version) + ")";
    return file_state::foreign;
  }
  try {
    const auto& arr = j.at("entries");
    if (!arr.is_array()) {
      why = "'entries' is not an array (corrupt)";
      return file_state::corrupt;
    }
    for (const auto& e : arr) {
      tuning_key k{e.at("device").get<std::string>(), e.at("family").get<std::string>(),
                   e.at("candidate_set").get<std::string>(), e.at("bucket").get<std::string>()};
      tuning_entry v{e.at("winner").get<std::string>(), e.at("measured_us").get<double>(), e.value("date", std::string{})};
      out[std::move(k)] = std::move(v);
    }
  } catch (const std::exception& ex) {
    out.clear();
    why = std::string("malformed entry (corrupt): ") + ex.what();
    return file_state::corrupt;
  }
  return file_state::ok;
}

bool tuning_cache::load_locked(std::string* err) {
  loaded_ = true;
  if (path_.empty()) {
    if (err) *err = "no cache path (set PK_TUNING_CACHE or HOME)";
    return false;
  }
  std::string why;
  std::map<tuning_key, tuning_entry> fresh;
  const file_state st = read_file(fresh, why);
  if (st == file_state::ok || st == file_state::missing) {
    entries_ = std::move(fresh);
    return true;
  }
  entries_.clear();
  warn_once(why);
  if (err) *err = path_ + ": " + why;
  return false;
}

std::optional<tuning_entry> tuning_cache::lookup(const tuning_key& key) {
  std::lock_guard lock(mu_);
  try {
    if (!loaded_) load_locked(nullptr);
    const auto it = entries_.find(key);
    if (it == entries_.end()) return std::nullopt;
    return it->second;
  } catch (const std::exception& ex) {
    warn_once(ex.what());
    return std::nullopt;
  }
}

bool tuning_cache::reload(std::string* err) {
  std::lock_guard lock(mu_);
  try {
    return load_locked(err);
  } catch (const std::exception& ex) {
    if (err) *err = ex.what();
    return false;
  }
}

std::size_t tuning_cache::size() {
  std::lock_guard lock(mu_);
  try {
    if (!loaded_) load_locked(nullptr);
  } catch (const std::exception& ex) {
    warn_once(ex.what());
  }
  return entries_.size();
}

bool tuning_cache::store(const tuning_key& key, const tuning_entry& e, std::string* err) {
  std::lock_guard lock(mu_);
  std::string why;
  try {
    if (path_.empty()) {
      if (err) *err = "no cache path (set PK_TUNING_CACHE or HOME)";
      return false;
    }
    const std::filesystem::path p(path_);
    std::error_code ec;
    if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path(), ec);
    if (ec) {
      if (err) *err = "cannot create " + p.parent_path().string() + ": " + ec.message();
      return false;
    }
    file_lock fl(path_ + ".lock");
    if (!fl.ok()) {
      if (err) *err = fl.error();
      return false;
    }
    std::map<tuning_key, tuning_entry> current;
    switch (read_file(current, why)) {
      case file_state::ok:
      case file_state::missing: break;
      case file_state::corrupt:
        warn_once(why);  // replaced by a valid file below
        current.clear();
        break;
      case file_state::foreign:
        warn_once(why);
        if (err) *err = path_ + ": " + why + "; not overwriting it";
        return false;
      case file_state::unreadable:
        if (err) *err = path_ + ": " + why;
        return false;
    }
    tuning_entry v = e;
    if (v.date.empty()) v.date = utc_now_iso8601();
    current[key] = v;
    if (!write_atomic(path_, to_json(current).dump(2) + "\n", why)) {
      if (err) *err = why;
      return false;
    }
    entries_ = std::move(current);
    loaded_ = true;
    return true;
  } catch (const std::exception& ex) {
    if (err) *err = std::string("tuning cache store failed: ") + ex.what();
    return false;
  }
}

}  // namespace pk::archdb
