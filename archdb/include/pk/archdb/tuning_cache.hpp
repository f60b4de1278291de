// pk::archdb — persistent cache of measured winners. Host-only.
//
// File: $PK_TUNING_CACHE, else $XDG_CACHE_HOME/pk/tuning.json, else $HOME/.cache/pk/tuning.json.
// Format: {"schema": "pk.tuning_cache", "version": 1, "entries": [{"device", "family", "candidate_set",
// "bucket", "winner", "measured_us", "date"}, ...]}.
// Writes take an flock on "<file>.lock", re-read and merge the file, write a temporary file in the same
// directory and rename it over the file, so concurrent writers (threads or processes) lose no entry.
// A corrupt or foreign (other schema / version) file prints one warning to stderr per cache object and
// is treated as empty; nothing throws.
//
//! Usage:
//! \code
//!   auto& cache = pk::archdb::tuning_cache::instance();
//!   pk::archdb::tuning_key key{pk::archdb::device_identity(dev), "attention_fwd", "v1:6", "d128_causal_s4k"};
//!   if (auto hit = cache.lookup(key)) use(hit->winner);
//!   else if (pk::archdb::tuning_mode_from_env() == pk::archdb::tuning_mode::tune) cache.store(key, measured, &err);
//! \endcode
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>

#include "pk/archdb/device.hpp"

namespace pk::archdb {

//! off: never read or write the cache; cached: read it, plan by the model on a miss (default);
//! tune: measure on a miss and store the winner.
enum class tuning_mode { off, cached, tune };

//! Parses "off" | "cached" | "tune" (case-insensitive). Returns false and leaves `out` unchanged otherwise.
bool parse_tuning_mode(std::string_view s, tuning_mode& out) noexcept;
//! "off" | "cached" | "tune".
const char* to_string(tuning_mode m) noexcept;
//! Mode from $PK_TUNING; cached when unset. An unknown value warns once on stderr and gives cached.
tuning_mode tuning_mode_from_env();

//! Identity of a device for cache keys: "<name>/sm<count>/cc<major>.<minor>" or "<name>/cu<count>/<gfx>".
std::string device_identity(const device_desc& d);

//! Cache key.
struct tuning_key {
  std::string device;         //!< device_identity()
  std::string family;         //!< kernel family, e.g. "attention_fwd"
  std::string candidate_set;  //!< identity of the build's candidate list for this family and arch
  std::string bucket;         //!< problem bucket
  friend bool operator<(const tuning_key& a, const tuning_key& b) {
    return std::tie(a.device, a.family, a.candidate_set, a.bucket) <
           std::tie(b.device, b.family, b.candidate_set, b.bucket);
  }
  friend bool operator==(const tuning_key&, const tuning_key&) = default;
};

//! Cached measurement.
struct tuning_entry {
  std::string winner;       //!< candidate name
  double measured_us = 0;
  std::string date;         //!< ISO 8601 UTC; store() fills it when empty
};

//! A tuning cache bound to one file. Thread-safe.
class tuning_cache {
 public:
  //! The process-wide cache at default_path().
  static tuning_cache& instance();
  //! $PK_TUNING_CACHE, else $XDG_CACHE_HOME/pk/tuning.json, else $HOME/.cache/pk/tuning.json, else "".
  static std::string default_path();

  //! A cache bound to `path`; the file is read lazily on first use.
  explicit tuning_cache(std::string path);

  [[nodiscard]] const std::string& path() const noexcept { return path_; }

  //! The entry for `key`, or nullopt. Reads the file on first use.
  std::optional<tuning_entry> lookup(const tuning_key& key);

  //! Inserts or replaces `key`, merged into the current file under the lock and written atomically.
  //! Returns false and sets *err (if given) on failure; a foreign-schema file is not overwritten.
  bool store(const tuning_key& key, const tuning_entry& e, std::string* err = nullptr);

  //! Re-reads the file. Returns false (and *err) when it is unreadable, corrupt or foreign.
  bool reload(std::string* err = nullptr);

  //! Number of entries currently known (after loading).
  std::size_t size();

  //! The file schema name and version written and accepted.
  static constexpr const char* schema_name = "pk.tuning_cache";
  static constexpr int schema_version = 1;

 private:
  enum class file_state { missing, ok, corrupt, foreign, unreadable };
  file_state read_file(std::map<tuning_key, tuning_entry>& out, std::string& why) const;
  void warn_once(const std::string& msg);
  bool load_locked(std::string* err);

  std::string path_;
  std::mutex mu_;
  bool loaded_ = false;
  bool warned_ = false;
  std::map<tuning_key, tuning_entry> entries_;
};

}  // namespace pk::archdb
