// pk::status: errors are values. Every public entry point returns one; the library never calls
// exit/abort and no exception crosses the C API.
#pragma once
#include <string>
#include <utility>

namespace pk {

//! Error categories. The message names the argument and the rule that was broken.
enum class errc : int {
  ok = 0,
  invalid_argument = 1,   //!< null pointer, wrong shape/stride, negative size ...
  unsupported = 2,        //!< dtype, head size, arch or backend not built / not supported
  out_of_memory = 3,
  backend_error = 4,      //!< an error reported by the CUDA/HIP runtime (its message is carried)
  emulation_error = 5,    //!< the host emulator detected divergence, deadlock or a resource violation
  not_found = 6,          //!< e.g. a device name not in the database
  internal = 7,
};

const char* to_string(errc e) noexcept;

//! A status: `ok()` or a category plus a message naming the argument and the rule.
//! Usage: `if (auto s = pk::reduce_sum(...); !s) std::cerr << s.message();`
class status {
 public:
  status() = default;
  status(errc code, std::string message) : code_(code), message_(std::move(message)) {}
  static status success() { return {}; }

  [[nodiscard]] bool ok() const noexcept { return code_ == errc::ok; }
  explicit operator bool() const noexcept { return ok(); }
  [[nodiscard]] errc code() const noexcept { return code_; }
  [[nodiscard]] const std::string& message() const noexcept { return message_; }
  //! "invalid_argument: x: must not be null"
  [[nodiscard]] std::string to_string() const;

 private:
  errc code_ = errc::ok;
  std::string message_;
};

inline status invalid_argument(std::string m) { return {errc::invalid_argument, std::move(m)}; }
inline status unsupported(std::string m) { return {errc::unsupported, std::move(m)}; }

inline const char* to_string(errc e) noexcept {
  switch (e) {
    case errc::ok: return "ok";
    case errc::invalid_argument: return "invalid_argument";
    case errc::unsupported: return "unsupported";
    case errc::out_of_memory: return "out_of_memory";
    case errc::backend_error: return "backend_error";
    case errc::emulation_error: return "emulation_error";
    case errc::not_found: return "not_found";
    case errc::internal: return "internal";
  }
  return "unknown";
}

inline std::string status::to_string() const {
  if (ok()) return "ok";
  return std::string(pk::to_string(code_)) + ": " + message_;
}

}  // namespace pk

//! Propagate a non-ok status to the caller.
#define PK_TRY(expr)                           \
  do {                                         \
    if (::pk::status pk_try_s_ = (expr); !pk_try_s_) return pk_try_s_; \
  } while (0)
