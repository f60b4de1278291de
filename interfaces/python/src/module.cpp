// pk's Python module, native part (`pk._pk`): tensors from DLPack capsules or the buffer protocol turned
// into pk::tensor_view, the stream they run on (the emulator for host memory, the caller's CUDA/HIP stream
// for device memory), and one function per entry point of the C++ API. The Python package (pk/__init__.py)
// allocates outputs, picks the caller's current stream and documents every function; this file only checks
// what Python can get wrong (where the memory lives, dtypes Python names, ranks) and leaves every argument
// rule to the C++ API, whose status becomes a Python exception carrying its message.
#include <pk/attention/attention.hpp>
#include <pk/attention/decode.hpp>
#include <pk/archdb/device.hpp>
#include <pk/config.hpp>
#include <pk/reduction/norm.hpp>
#include <pk/reduction/reduce.hpp>
#include <pk/runtime.hpp>

#include <dlpack/dlpack.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace py = pybind11;

namespace pk::python {
namespace {

// ------------------------------------------------------------------------------------------------
// Errors: a non-ok status raises the package's exception for its code (set_error_types, called once by
// pk/__init__.py): pk.InvalidArgument, pk.Unsupported, else pk.Error; the message is the status's.

// code name -> exception class; never destroyed (a static py::object would be released after the
// interpreter has finalized).
py::dict* error_types = nullptr;

[[noreturn]] void raise(const status& st) {
  const std::string code = to_string(st.code());
  py::object type = py::none();
  if (error_types != nullptr && error_types->contains(code.c_str())) type = (*error_types)[code.c_str()];
  else if (error_types != nullptr && error_types->contains("error")) type = (*error_types)["error"];
  if (type.is_none()) throw std::runtime_error(st.to_string());
  PyErr_SetObject(type.ptr(), py::str(st.to_string()).ptr());
  throw py::error_already_set();
}

void check(const status& st) {
  if (!st) raise(st);
}

[[noreturn]] void raise_invalid(const std::string& message) { raise(status{errc::invalid_argument, message}); }

// ------------------------------------------------------------------------------------------------
// Where memory lives. DLPack device types (dlpack.h): CPU and CUDA-pinned host memory run on the emulator.

enum class place : std::uint8_t { host, cuda, hip };

struct location {
  place where = place::host;
  int ordinal = 0;
  bool operator==(const location&) const = default;
};

std::string describe(const location& l) {
  switch (l.where) {
    case place::host: return "host memory";
    case place::cuda: return "cuda:" + std::to_string(l.ordinal);
    case place::hip: return "hip:" + std::to_string(l.ordinal);
  }
  return "?";
}

// ------------------------------------------------------------------------------------------------
// One tensor argument: the view pk reads, where it lives, and what keeps the memory alive during the call.

struct tensor_arg {
  tensor_view view;
  location loc;
  bool readonly = false;
  py::object keep;                         //!< the buffer or the consumed capsule
  DLManagedTensor* managed = nullptr;      //!< released by its deleter when the call is done
  std::int64_t numel = 1;

  tensor_arg() = default;
  tensor_arg(const tensor_arg&) = delete;
  tensor_arg& operator=(const tensor_arg&) = delete;
  tensor_arg(tensor_arg&& o) noexcept { *this = std::move(o); }
  tensor_arg& operator=(tensor_arg&& o) noexcept {
    std::swap(view, o.view);
    std::swap(loc, o.loc);
    std::swap(readonly, o.readonly);
    std::swap(keep, o.keep);
    std::swap(managed, o.managed);
    std::swap(numel, o.numel);
    return *this;
  }
  ~tensor_arg() {
    if (managed != nullptr && managed->deleter != nullptr) managed->deleter(managed);
  }
  [[nodiscard]] bool contiguous() const {
    std::int64_t s = 1;
    for (int i = view.rank - 1; i >= 0; --i) {
      if (view.shape[i] != 1 && view.stride[i] != s) return false;
      s *= view.shape[i];
    }
    return true;
  }
};

std::optional<dtype> from_dlpack(DLDataType t) {
  if (t.lanes != 1) return std::nullopt;
  switch (t.code) {
    case kDLFloat:
      if (t.bits == 64) return dtype::f64;
      if (t.bits == 32) return dtype::f32;
      if (t.bits == 16) return dtype::f16;
      break;
    case kDLBfloat:
      if (t.bits == 16) return dtype::bf16;
      break;
    case kDLInt:
      if (t.bits == 64) return dtype::i64;
      if (t.bits == 32) return dtype::i32;
      if (t.bits == 8) return dtype::i8;
      break;
    case kDLUInt:
      if (t.bits == 8) return dtype::u8;
      break;
    default: break;
  }
  return std::nullopt;
}

//! The buffer protocol's struct format of one element (native byte order only).
std::optional<dtype> from_format(const std::string& f, py::ssize_t itemsize) {
  std::string c = f;
  if (!c.empty() && (c[0] == '@' || c[0] == '=' || c[0] == '<')) c = c.substr(1);
  if (c == "d") return dtype::f64;
  if (c == "f") return dtype::f32;
  if (c == "e") return dtype::f16;
  if (c == "b") return dtype::i8;
  if (c == "B") return dtype::u8;
  if (c == "i" || c == "l" || c == "q" || c == "h") {
    if (itemsize == 4) return dtype::i32;
    if (itemsize == 8) return dtype::i64;
  }
  return std::nullopt;
}

//! `obj` as a tensor: a DLPack capsule (what pk/__init__.py passes for objects with __dlpack__) or an
//! object with the buffer protocol. `as` overrides the element type (FP8 caches travel as uint8 codes).
tensor_arg to_tensor(const char* name, const py::handle& obj, bool writable, std::optional<dtype> as = std::nullopt) {
  tensor_arg t;
  if (obj.is_none()) raise_invalid(std::string(name) + ": None where a tensor is required");
  if (PyCapsule_CheckExact(obj.ptr())) {
    auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(obj.ptr(), "dltensor"));
    if (m == nullptr) {
      PyErr_Clear();
      raise_invalid(std::string(name) + ": a DLPack capsule that was already consumed");
    }
    // Consumed: rename it so that the producer's capsule destructor does not free it again (DLPack rule).
    PyCapsule_SetName(obj.ptr(), "used_dltensor");
    t.managed = m;
    t.keep = py::reinterpret_borrow<py::object>(obj);
    const DLTensor& d = m->dl_tensor;
    switch (d.device.device_type) {
      case kDLCPU:
      case kDLCUDAHost: t.loc = {place::host, 0}; break;
      case kDLCUDA: t.loc = {place::cuda, d.device.device_id}; break;
      case kDLROCM: t.loc = {place::hip, d.device.device_id}; break;
      default:
        raise(status{errc::unsupported, std::string(name) + ": DLPack device type " +
                                            std::to_string(d.device.device_type) +
                                            " (pk takes host memory, CUDA or ROCm devices)"});
    }
    const auto type = from_dlpack(d.dtype);
    if (!type && !as)
      raise(status{errc::unsupported, std::string(name) + ": DLPack dtype code " + std::to_string(d.dtype.code) +
                                          " bits " + std::to_string(d.dtype.bits) + " lanes " +
                                          std::to_string(d.dtype.lanes) + " has no pk dtype"});
    if (d.ndim > tensor_view::max_rank)
      raise(status{errc::unsupported, std::string(name) + ": rank " + std::to_string(d.ndim) + " (pk takes 0..4)"});
    t.view.type = as ? *as : *type;
    if (as && size_of(*as) * 8 != d.dtype.bits)
      raise_invalid(std::string(name) + ": " + std::to_string(d.dtype.bits) + "-bit elements cannot hold " +
                    to_string(*as));
    t.view.rank = d.ndim;
    std::int64_t compact = 1;
    for (int i = d.ndim - 1; i >= 0; --i) {
      t.view.shape[i] = d.shape[i];
      t.view.stride[i] = d.strides != nullptr ? d.strides[i] : compact;
      compact *= d.shape[i];
    }
    t.numel = compact;
    t.view.data = static_cast<const char*>(d.data) + d.byte_offset;
    return t;
  }
  if (!PyObject_CheckBuffer(obj.ptr()))
    raise_invalid(std::string(name) + ": not a tensor (needs __dlpack__ or the buffer protocol), got " +
                  std::string(py::str(py::type::of(obj).attr("__name__"))));
  py::buffer buf = py::reinterpret_borrow<py::buffer>(obj);
  py::buffer_info info;
  try {
    info = buf.request(writable);
  } catch (py::error_already_set& e) {
    if (!writable) throw;
    raise_invalid(std::string(name) + ": read-only memory for an output (" + e.what() + ")");
  }
  const auto type = from_format(info.format, info.itemsize);
  if (!type && !as)
    raise(status{errc::unsupported, std::string(name) + ": buffer format '" + info.format + "' has no pk dtype"});
  t.view.type = as ? *as : *type;
  if (info.ndim > tensor_view::max_rank)
    raise(status{errc::unsupported, std::string(name) + ": rank " + std::to_string(info.ndim) + " (pk takes 0..4)"});
  t.view.rank = static_cast<int>(info.ndim);
  for (int i = 0; i < t.view.rank; ++i) {
    if (info.strides[i] % info.itemsize != 0)
      raise_invalid(std::string(name) + ": stride of " + std::to_string(info.strides[i]) +
                    " bytes is not a multiple of the element size " + std::to_string(info.itemsize));
    t.view.shape[i] = info.shape[i];
    t.view.stride[i] = info.strides[i] / info.itemsize;
    t.numel *= info.shape[i];
  }
  t.view.data = info.ptr;
  t.readonly = info.readonly;
  t.loc = {place::host, 0};
  t.keep = py::reinterpret_borrow<py::object>(obj);
  return t;
}

// ------------------------------------------------------------------------------------------------
// Streams. Host memory runs on the emulator impersonating `device` (None: $PK_HOST_DEVICE, else A100);
// device memory on the caller's native stream (an integer handle, 0 = the default stream) of the
// tensors' device. Streams are kept per (place, ordinal, handle, device name): a pk stream's scratch
// buffer then survives between calls, as in C++.

struct stream_key {
  place where;
  int ordinal;
  std::uintptr_t handle;
  std::string device;
  bool operator<(const stream_key& o) const {
    return std::tie(where, ordinal, handle, device) < std::tie(o.where, o.ordinal, o.handle, o.device);
  }
};

std::mutex streams_mutex;
std::map<stream_key, stream>& streams() {
  static auto* m = new std::map<stream_key, stream>();  // never destroyed: streams outlive interpreter exit
  return *m;
}

stream stream_for(const location& loc, const std::optional<std::string>& device, std::uintptr_t handle) {
  if (loc.where != place::host && device)
    raise_invalid("device = '" + *device + "': names an emulated device, but the tensors are in " + describe(loc) +
                  " (device= applies to host memory only)");
  const stream_key key{loc.where, loc.ordinal, loc.where == place::host ? 0 : handle, device.value_or("")};
  const std::lock_guard<std::mutex> lock(streams_mutex);
  if (auto it = streams().find(key); it != streams().end()) return it->second;
  stream s;
  switch (loc.where) {
    case place::host: check(device ? stream::host(*device, s) : default_host_stream(s)); break;
    case place::cuda:
      if (cuda_device_count() == 0)
        raise(status{errc::unsupported, "tensors in " + describe(loc) +
                                            ": this pk build has no CUDA backend or sees no CUDA device "
                                            "(configure with -DPK_ENABLE_CUDA=ON)"});
      check(stream::cuda(reinterpret_cast<void*>(handle), loc.ordinal, s));
      break;
    case place::hip:
      if (hip_device_count() == 0)
        raise(status{errc::unsupported, "tensors in " + describe(loc) +
                                            ": this pk build has no HIP backend or sees no HIP device "
                                            "(configure with -DPK_ENABLE_HIP=ON)"});
      check(stream::hip(reinterpret_cast<void*>(handle), loc.ordinal, s));
      break;
  }
  streams().emplace(key, s);
  return s;
}

//! The tensors of one call: every one on the same device; the stream they run on.
class call {
 public:
  call(std::optional<std::string> device, std::uintptr_t handle) : device_(std::move(device)), handle_(handle) {}

  const tensor_view& in(const char* name, const py::handle& obj, std::optional<dtype> as = std::nullopt) {
    return add(name, obj, false, as).view;
  }
  //! An optional input: an empty view (data null) for None.
  tensor_view opt_in(const char* name, const py::handle& obj) {
    if (obj.is_none()) return {};
    return in(name, obj);
  }
  const tensor_view& out(const char* name, const py::handle& obj) {
    const tensor_arg& t = add(name, obj, true, std::nullopt);
    if (t.readonly) raise_invalid(std::string(name) + ": read-only memory for an output");
    return t.view;
  }
  template <class T>
  T* out_ptr(const char* name, const py::handle& obj, dtype want, std::int64_t count) {
    if (obj.is_none()) return nullptr;
    const tensor_arg& t = add(name, obj, true, std::nullopt);
    if (t.readonly) raise_invalid(std::string(name) + ": read-only memory for an output");
    expect(name, t, want, count);
    return static_cast<T*>(const_cast<void*>(t.view.data));
  }
  template <class T>
  const T* in_ptr(const char* name, const py::handle& obj, dtype want, std::int64_t count = -1) {
    if (obj.is_none()) return nullptr;
    const tensor_arg& t = add(name, obj, false, std::nullopt);
    expect(name, t, want, count);
    return static_cast<const T*>(t.view.data);
  }
  const tensor_arg& last() const { return args_.back(); }

  //! The stream of the call's tensors (the emulator when it has none).
  stream s() {
    const location loc = args_.empty() ? location{} : args_.front().loc;
    return stream_for(loc, device_, handle_);
  }

 private:
  const tensor_arg& add(const char* name, const py::handle& obj, bool writable, std::optional<dtype> as) {
    tensor_arg t = to_tensor(name, obj, writable, as);
    if (!args_.empty() && !(t.loc == args_.front().loc))
      raise_invalid(std::string(name) + ": in " + describe(t.loc) + ", the other tensors in " +
                    describe(args_.front().loc) + " (one device per call)");
    args_.push_back(std::move(t));
    return args_.back();
  }
  static void expect(const char* name, const tensor_arg& t, dtype want, std::int64_t count) {
    if (t.view.type != want)
      raise_invalid(std::string(name) + ": dtype " + to_string(t.view.type) + ", must be " + to_string(want));
    if (!t.contiguous()) raise_invalid(std::string(name) + ": must be contiguous");
    if (count >= 0 && t.numel != count)
      raise_invalid(std::string(name) + ": " + std::to_string(t.numel) + " elements, must be " +
                    std::to_string(count));
  }

  std::optional<std::string> device_;
  std::uintptr_t handle_;
  std::vector<tensor_arg> args_;
};

//! Runs `f` (the C++ entry point) without the interpreter lock: the emulator can run for seconds and
//! other Python threads should go on.
template <class F>
void run(F&& f) {
  status st;
  {
    py::gil_scoped_release release;
    st = f();
  }
  check(st);
}

//! A call bound to its tensors and stream (`bind=True` in pk/__init__.py): calling it enqueues the same
//! work again with no argument conversion, for loops and benchmarks where Python's per-call cost would
//! show. It keeps the tensors' memory alive (the consumed DLPack capsules and buffers) while it exists.
class bound {
 public:
  bound(std::shared_ptr<call> c, std::function<status()> f) : call_(std::move(c)), f_(std::move(f)) {}
  void operator()() const { run(f_); }

 private:
  std::shared_ptr<call> call_;
  std::function<status()> f_;
};

//! Runs `f` now (returns None) or, with `bind`, returns it as a pk._pk.Bound that runs it on each call.
py::object finish(std::shared_ptr<call> c, bool bind, std::function<status()> f) {
  if (bind) return py::cast(bound(std::move(c), std::move(f)));
  run(f);
  return py::none();
}

//! A policy name that outlives the Python call (a bound call keeps its own copy).
std::shared_ptr<const std::string> keep_name(const std::optional<std::string>& name) {
  return name ? std::make_shared<const std::string>(*name) : nullptr;
}
const char* c_str(const std::shared_ptr<const std::string>& s) { return s ? s->c_str() : nullptr; }

//! The operation whose name (pk::to_string) is `op`.
std::optional<reduce_op> op_named(const std::string& op) {
  for (reduce_op o : {reduce_op::sum, reduce_op::prod, reduce_op::min, reduce_op::max, reduce_op::argmin,
                      reduce_op::argmax})
    if (op == to_string(o)) return o;
  return std::nullopt;
}

reduce_op to_op(const std::string& op) {
  if (auto o = op_named(op)) return *o;
  raise_invalid("op = '" + op + "': must be one of sum, prod, min, max, argmin, argmax");
}

std::optional<dtype> dtype_named(const std::string& n) {
  for (dtype t : {dtype::f64, dtype::f32, dtype::f16, dtype::bf16, dtype::i32, dtype::i64, dtype::i8, dtype::u8,
                  dtype::f8e4m3fn, dtype::f8e4m3fnuz})
    if (n == to_string(t)) return t;
  return std::nullopt;
}

dtype to_dtype(const std::string& n) {
  if (auto t = dtype_named(n)) return *t;
  raise_invalid("dtype = '" + n + "': not a pk dtype (f64 f32 f16 bf16 i32 i64 i8 u8 f8e4m3fn f8e4m3fnuz)");
}

reduce_options options(bool reproducible, const std::shared_ptr<const std::string>& policy) {
  reduce_options o;
  o.reproducible = reproducible;
  o.policy = c_str(policy);
  return o;
}

// ------------------------------------------------------------------------------------------------
// Entry points.

py::object py_reduce(const std::string& op, const py::handle& x, const py::handle& out, bool reproducible,
               const std::optional<std::string>& policy, const std::optional<std::string>& device,
               std::uintptr_t stream_handle, bool bind) {
  auto cp = std::make_shared<call>(device, stream_handle);
  call& c = *cp;
  const tensor_view in = c.in("x", x);
  if (!c.last().contiguous()) raise_invalid("x: must be contiguous for a reduction over every element (use axis=)");
  const std::int64_t n = c.last().numel;
  const reduce_op o = to_op(op);
  const bool arg = o == reduce_op::argmin || o == reduce_op::argmax;
  const tensor_view r = c.out("out", out);
  if (r.type != (arg ? dtype::i64 : in.type))
    raise_invalid(std::string("out: dtype ") + to_string(r.type) + ", must be " + (arg ? "i64" : to_string(in.type)));
  if (c.last().numel != 1) raise_invalid("out: must hold exactly one element");
  const stream s = c.s();
  const auto pol = keep_name(policy);
  const reduce_options opt = options(reproducible, pol);
  return finish(cp, bind, [=, pol = pol] { return reduce(s, o, in.type, in.data, n, const_cast<void*>(r.data), opt); });
}

py::object py_reduce_axis(const std::string& op, const py::handle& x, int axis, const py::handle& out, bool reproducible,
                    const std::optional<std::string>& policy, const std::optional<std::string>& device,
                    std::uintptr_t stream_handle, bool bind) {
  auto cp = std::make_shared<call>(device, stream_handle);
  call& c = *cp;
  const tensor_view in = c.in("x", x);
  const tensor_view r = c.out("out", out);
  const stream s = c.s();
  const auto pol = keep_name(policy);
  const reduce_options opt = options(reproducible, pol);
  const reduce_op o = to_op(op);
  return finish(cp, bind, [=, pol = pol] { return reduce_axis(s, o, in, axis, r, opt); });
}

py::object py_segmented(const std::string& op, const py::handle& x, const py::handle& offsets, const py::handle& out,
                  const std::optional<std::string>& policy, const std::optional<std::string>& device,
                  std::uintptr_t stream_handle, bool bind) {
  auto cp = std::make_shared<call>(device, stream_handle);
  call& c = *cp;
  const tensor_view in = c.in("x", x);
  if (!c.last().contiguous()) raise_invalid("x: must be contiguous");
  const tensor_view off = c.in("offsets", offsets);
  if (off.type != dtype::i64 || off.rank != 1 || !c.last().contiguous())
    raise_invalid("offsets: must be a contiguous rank-1 int64 tensor of segments + 1 offsets");
  const std::int64_t segments = off.shape[0] - 1;
  const reduce_op o = to_op(op);
  const bool arg = o == reduce_op::argmin || o == reduce_op::argmax;
  const tensor_view r = c.out("out", out);
  if (r.type != (arg ? dtype::i64 : in.type) || !c.last().contiguous() || c.last().numel != std::max<std::int64_t>(segments, 0))
    raise_invalid("out: must be a contiguous tensor of len(offsets) - 1 elements of " +
                  std::string(arg ? "i64" : to_string(in.type)));
  const stream s = c.s();
  const auto pol = keep_name(policy);
  const reduce_options opt = options(false, pol);
  return finish(cp, bind, [=, pol = pol] {
    return segmented_reduce(s, o, in.type, in.data, segments, static_cast<const std::int64_t*>(off.data),
                            const_cast<void*>(r.data), opt);
  });
}

py::object py_mean_var(const py::handle& x, const py::handle& mean, const py::handle& var, int correction,
                 const std::optional<std::string>& device, std::uintptr_t stream_handle, bool bind) {
  auto cp = std::make_shared<call>(device, stream_handle);
  call& c = *cp;
  const tensor_view in = c.in("x", x);
  if (!c.last().contiguous()) raise_invalid("x: must be contiguous");
  const std::int64_t n = c.last().numel;
  const dtype acc = in.type == dtype::f64 ? dtype::f64 : dtype::f32;
  auto* m = c.out_ptr<void>("mean", mean, acc, 1);
  auto* v = c.out_ptr<void>("var", var, acc, 1);
  const stream s = c.s();
  return finish(cp, bind, [=] { return reduce_mean_var(s, in.type, in.data, n, m, v, correction); });
}

//! A [rows, cols] view of x (rank >= 1; leading dimensions folded when their strides allow).
rows_desc rows_of(const tensor_view& x, const tensor_view& y) {
  const auto fold = [](const tensor_view& t, const char* name, std::int64_t& rows, std::int64_t& stride) {
    if (t.rank < 1) raise_invalid(std::string(name) + ": rank 0 (row operations take [..., cols])");
    if (t.shape[t.rank - 1] > 1 && t.stride[t.rank - 1] != 1)
      raise_invalid(std::string(name) + ": the last dimension must be contiguous (stride 1)");
    rows = 1;
    stride = t.shape[t.rank - 1];
    bool first = true;
    for (int i = t.rank - 2; i >= 0; --i) {
      if (t.shape[i] == 1) continue;
      if (first) {
        stride = t.stride[i];
        first = false;
      } else if (t.stride[i] != t.stride[i + 1] * t.shape[i + 1]) {
        raise_invalid(std::string(name) + ": the leading dimensions cannot be folded into rows of one stride");
      }
      rows *= t.shape[i];
    }
    if (first) {
      rows = 1;
      for (int i = 0; i + 1 < t.rank; ++i) rows *= t.shape[i];
    }
  };
  rows_desc r;
  std::int64_t xr = 0, yr = 0;
  fold(x, "x", xr, r.x_row_stride);
  fold(y, "out", yr, r.y_row_stride);
  if (xr != yr || x.shape[x.rank - 1] != y.shape[y.rank - 1] || y.type != x.type)
    raise_invalid("out: must have x's shape and dtype");
  r.type = x.type;
  r.x = x.data;
  r.y = const_cast<void*>(y.data);
  r.rows = xr;
  r.cols = x.shape[x.rank - 1];
  return r;
}

py::object py_rows(const std::string& op, const py::handle& x, const py::handle& out, const py::handle& weight,
             const py::handle& bias, double eps, const py::handle& mean, const py::handle& rstd,
             const std::optional<std::string>& policy, const std::optional<std::string>& device,
             std::uintptr_t stream_handle, bool bind) {
  auto cp = std::make_shared<call>(device, stream_handle);
  call& c = *cp;
  const tensor_view xv = c.in("x", x);
  const tensor_view yv = c.out("out", out);
  rows_desc r = rows_of(xv, yv);
  const auto pol = keep_name(policy);
  r.policy = c_str(pol);
  const stream s = c.s();
  if (op == "softmax") return finish(cp, bind, [=, pol = pol] { return softmax(s, r); });
  if (op == "log_softmax") return finish(cp, bind, [=, pol = pol] { return log_softmax(s, r); });
  if (op != "layer_norm" && op != "rms_norm")
    raise_invalid("op = '" + op + "': must be softmax, log_softmax, layer_norm or rms_norm");
  norm_args a;
  a.rows = r;
  a.weight = c.in_ptr<void>("weight", weight, r.type, r.cols);
  a.bias = c.in_ptr<void>("bias", bias, r.type, r.cols);
  a.eps = eps;
  a.mean = c.out_ptr<float>("mean", mean, dtype::f32, r.rows);
  a.rstd = c.out_ptr<float>("rstd", rstd, dtype::f32, r.rows);
  if (op == "layer_norm") return finish(cp, bind, [=, pol = pol] { return layer_norm(s, a); });
  return finish(cp, bind, [=, pol = pol] { return rms_norm(s, a); });
}

py::object py_row_mean_var(const py::handle& x, const py::handle& mean, const py::handle& var, int correction,
                     const std::optional<std::string>& device, std::uintptr_t stream_handle, bool bind) {
  auto cp = std::make_shared<call>(device, stream_handle);
  call& c = *cp;
  const tensor_view xv = c.in("x", x);
  rows_desc r = rows_of(xv, xv);
  r.y = nullptr;
  const dtype acc = xv.type == dtype::f64 ? dtype::f64 : dtype::f32;
  auto* m = c.out_ptr<void>("mean", mean, acc, r.rows);
  auto* v = c.out_ptr<void>("var", var, acc, r.rows);
  const stream s = c.s();
  return finish(cp, bind, [=] { return row_mean_var(s, r, m, v, correction); });
}

py::object py_attention(const py::handle& q, const py::handle& k, const py::handle& v, const py::handle& out,
                  const py::handle& lse, float softmax_scale, bool causal, int window_left, int window_right,
                  const py::handle& cu_seqlens_q, const py::handle& cu_seqlens_k, int max_seqlen_q, int max_seqlen_k,
                  const std::optional<std::string>& policy, const std::optional<std::string>& device,
                  std::uintptr_t stream_handle, bool bind) {
  auto cp = std::make_shared<call>(device, stream_handle);
  call& c = *cp;
  attention_args a;
  a.q = c.in("q", q);
  a.k = c.in("k", k);
  a.v = c.in("v", v);
  a.out = c.out("out", out);
  a.lse = c.out_ptr<float>("lse", lse, dtype::f32, -1);
  a.softmax_scale = softmax_scale;
  a.causal = causal;
  a.window_left = window_left;
  a.window_right = window_right;
  if (!cu_seqlens_q.is_none() || !cu_seqlens_k.is_none()) {
    a.cu_seqlens_q = c.in_ptr<std::int32_t>("cu_seqlens_q", cu_seqlens_q, dtype::i32);
    const std::int64_t count = c.last().numel;
    a.cu_seqlens_k = c.in_ptr<std::int32_t>("cu_seqlens_k", cu_seqlens_k, dtype::i32, count);
    a.varlen_batch = static_cast<int>(std::min<std::int64_t>(count - 1, INT32_MAX));
    a.max_seqlen_q = max_seqlen_q;
    a.max_seqlen_k = max_seqlen_k;
  }
  const auto pol = keep_name(policy);
  a.policy = c_str(pol);
  const stream s = c.s();
  return finish(cp, bind, [=, pol = pol] { return attention_forward(s, a); });
}

//! The cache of decode and append: paged when block_table is given, contiguous otherwise.
kv_cache cache_of(call& c, const py::handle& k_cache, const py::handle& v_cache, const py::handle& block_table,
                  const py::handle& cache_seqlens, const py::handle& k_scale, const py::handle& v_scale,
                  const std::optional<std::string>& kv_dtype) {
  kv_cache kc;
  const std::optional<dtype> as = kv_dtype ? std::optional<dtype>(to_dtype(*kv_dtype)) : std::nullopt;
  kc.k = c.in("k_cache", k_cache, as);
  kc.v = c.in("v_cache", v_cache, as);
  kc.block_table = c.opt_in("block_table", block_table);
  kc.seqlens = c.in_ptr<std::int32_t>("cache_seqlens", cache_seqlens, dtype::i32);
  kc.k_scale = c.in_ptr<float>("k_scale", k_scale, dtype::f32);
  kc.v_scale = c.in_ptr<float>("v_scale", v_scale, dtype::f32);
  return kc;
}

py::object py_decode(const py::handle& q, const py::handle& out, const py::handle& k_cache, const py::handle& v_cache,
               const py::handle& block_table, const py::handle& cache_seqlens, const py::handle& k_scale,
               const py::handle& v_scale, const std::optional<std::string>& kv_dtype, const py::handle& lse,
               float softmax_scale, bool causal, int window_left, int window_right, int num_splits, int max_seqlen_k,
               const py::handle& error, const std::optional<std::string>& policy, const std::optional<std::string>& device,
               std::uintptr_t stream_handle, bool bind) {
  auto cp = std::make_shared<call>(device, stream_handle);
  call& c = *cp;
  decode_args a;
  a.q = c.in("q", q);
  a.out = c.out("out", out);
  a.cache = cache_of(c, k_cache, v_cache, block_table, cache_seqlens, k_scale, v_scale, kv_dtype);
  a.lse = c.out_ptr<float>("lse", lse, dtype::f32, -1);
  a.softmax_scale = softmax_scale;
  a.causal = causal;
  a.window_left = window_left;
  a.window_right = window_right;
  a.num_splits = num_splits;
  a.max_seqlen_k = max_seqlen_k;
  a.error = c.out_ptr<std::int32_t>("error", error, dtype::i32, 1);
  const auto pol = keep_name(policy);
  a.policy = c_str(pol);
  const stream s = c.s();
  return finish(cp, bind, [=, pol = pol] { return attention_decode(s, a); });
}

py::object py_append(const py::handle& k_cache, const py::handle& v_cache, const py::handle& block_table,
               const py::handle& cache_seqlens, const py::handle& k_scale, const py::handle& v_scale,
               const std::optional<std::string>& kv_dtype, const py::handle& k_new, const py::handle& v_new,
               const py::handle& error, const std::optional<std::string>& device, std::uintptr_t stream_handle, bool bind) {
  auto cp = std::make_shared<call>(device, stream_handle);
  call& c = *cp;
  kv_append_args a;
  a.cache = cache_of(c, k_cache, v_cache, block_table, cache_seqlens, k_scale, v_scale, kv_dtype);
  a.k_new = c.in("k_new", k_new);
  a.v_new = c.in("v_new", v_new);
  a.error = c.out_ptr<std::int32_t>("error", error, dtype::i32, 1);
  const stream s = c.s();
  return finish(cp, bind, [=] { return kv_cache_append(s, a); });
}

// ------------------------------------------------------------------------------------------------
// Devices and plans.

py::dict device_dict(const archdb::device_desc& d) {
  py::dict r;
  r["name"] = d.name;
  r["vendor"] = d.vendor_id == archdb::vendor::nvidia ? "nvidia" : "amd";
  r["isa"] = archdb::name_of(d.isa);
  r["sm_count"] = d.sm_count;
  r["warp_size"] = d.warp_size;
  r["smem_per_block_optin"] = d.smem_per_block_optin;
  r["smem_per_sm"] = d.smem_per_sm;
  r["l2_bytes"] = d.l2_bytes;
  r["mem_bw_gbps"] = d.mem_bw_gbps;
  r["peak_bf16_tflops"] = d.peak_bf16_tflops;
  return r;
}

py::dict py_devices() {
  py::list db;
  for (const auto& d : archdb::all_devices()) db.append(device_dict(d));
  py::list gpus;
  const auto add_gpus = [&gpus](int count, status (*open)(void*, int, stream&)) {
    for (int i = 0; i < count; ++i) {
      stream s;
      if (!open(nullptr, i, s)) continue;
      py::dict g = device_dict(s.device());
      g["backend"] = to_string(s.backend());
      g["ordinal"] = i;
      g["code_target"] = to_string(s.code_target());
      gpus.append(g);
    }
  };
  add_gpus(cuda_device_count(), &stream::cuda);
  add_gpus(hip_device_count(), &stream::hip);
  py::list targets;
  for (const code_target_info& t : code_targets)
    if (t.built) targets.append(t.name);
  py::dict r;
  r["database"] = db;
  r["gpus"] = gpus;
  r["code_targets"] = targets;
  return r;
}

const archdb::device_desc& find(const std::string& name) {
  if (const auto* d = archdb::find_device(name)) return *d;
  raise(status{errc::not_found, "device = '" + name + "': not in the database (pk.devices() lists it)"});
}

py::dict plan_dict(const archdb::plan& p) {
  py::dict r;
  r["name"] = p.name;
  r["predicted_us"] = p.predicted_us;
  r["why"] = p.why;
  r["from_tuning_cache"] = p.from_tuning_cache;
  py::list all;
  for (const auto& c : p.all) {
    py::dict e;
    e["name"] = c.name;
    e["fits"] = c.fits;
    e["reason"] = c.reason;
    e["predicted_us"] = c.predicted_us;
    all.append(e);
  }
  r["candidates"] = all;
  return r;
}

py::dict py_plan_reduce(const std::string& device, std::int64_t n, const std::string& type, bool reproducible) {
  const archdb::device_desc& d = find(device);
  const int eb = size_of(to_dtype(type));
  if (n < 0) raise_invalid("n = " + std::to_string(n) + ": must be >= 0");
  return plan_dict(reproducible ? reduction::plan_reduce_reproducible(d, n, eb) : reduction::plan_reduce(d, n, eb));
}

py::dict py_plan_rows(const std::string& device, const std::string& op, std::int64_t rows, std::int64_t cols,
                      const std::string& type) {
  static const std::map<std::string, reduction::row_op> ops = {{"softmax", reduction::row_op::softmax},
                                                               {"log_softmax", reduction::row_op::log_softmax},
                                                               {"layer_norm", reduction::row_op::layer_norm},
                                                               {"rms_norm", reduction::row_op::rms_norm},
                                                               {"mean_var", reduction::row_op::mean_var}};
  const auto it = ops.find(op);
  if (it == ops.end()) raise_invalid("op = '" + op + "': must be softmax, log_softmax, layer_norm, rms_norm or mean_var");
  if (rows < 0 || cols < 0) raise_invalid("rows, cols: must be >= 0");
  return plan_dict(reduction::plan_rows(find(device), it->second, rows, cols, size_of(to_dtype(type))));
}

py::dict py_plan_attention(const std::string& device, const std::string& type, int batch, int heads_q, int heads_kv,
                           int head_dim, std::int64_t seqlen_q, std::int64_t seqlen_k, bool causal, int window_left,
                           int window_right) {
  attention::attention_problem p;
  p.type = to_dtype(type);
  p.batch = batch;
  p.heads_q = heads_q;
  p.heads_kv = heads_kv;
  p.head_dim = head_dim;
  p.seqlen_q = seqlen_q;
  p.seqlen_k = seqlen_k;
  p.causal = causal;
  p.window_left = window_left;
  p.window_right = window_right;
  const attention::attention_plan ap = attention::plan(find(device), p);
  py::dict r = plan_dict(ap.choice);
  r["strategy"] = attention::to_string(ap.strat);
  r["grid"] = py::make_tuple(ap.grid_x, ap.grid_y, ap.grid_z);
  r["block_threads"] = ap.block_threads;
  r["smem_bytes"] = ap.smem_bytes;
  return r;
}

py::dict py_plan_decode(const std::string& device, const std::string& type, const std::string& kv_type, int batch,
                        int heads_q, int heads_kv, int head_dim, int seqlen_q, std::int64_t context, int page_size,
                        bool causal, int window_left, int window_right, int num_splits) {
  attention::decode_problem p;
  p.type = to_dtype(type);
  p.kv_type = to_dtype(kv_type);
  p.batch = batch;
  p.heads_q = heads_q;
  p.heads_kv = heads_kv;
  p.head_dim = head_dim;
  p.seqlen_q = seqlen_q;
  p.context = context;
  p.page_size = page_size;
  p.causal = causal;
  p.window_left = window_left;
  p.window_right = window_right;
  p.num_splits = num_splits;
  const attention::decode_plan dp = attention::plan_decode(find(device), p);
  py::dict r = plan_dict(dp.choice);
  r["splits"] = dp.splits;
  r["rows"] = dp.rows;
  r["m_blocks"] = dp.m_blocks;
  return r;
}

}  // namespace
}  // namespace pk::python

PYBIND11_MODULE(_pk, m) {
  using namespace pk::python;
  namespace pyd = pybind11;
  using pyd::arg;
  m.doc() = "pk's native layer; use the pk package (pk/__init__.py), which documents every function.";
  m.attr("version") = PK_VERSION_STRING;
  pyd::class_<bound>(m, "Bound").def("__call__", &bound::operator());
  m.def("set_error_types", [](pyd::dict types) {
    delete error_types;
    error_types = new pyd::dict(std::move(types));
  });
  m.def("reduce", &py_reduce, arg("op"), arg("x"), arg("out"), arg("reproducible"), arg("policy"), arg("device"),
        arg("stream"), arg("bind") = false);
  m.def("reduce_axis", &py_reduce_axis, arg("op"), arg("x"), arg("axis"), arg("out"), arg("reproducible"),
        arg("policy"), arg("device"), arg("stream"), arg("bind") = false);
  m.def("segmented_reduce", &py_segmented, arg("op"), arg("x"), arg("offsets"), arg("out"), arg("policy"),
        arg("device"), arg("stream"), arg("bind") = false);
  m.def("mean_var", &py_mean_var, arg("x"), arg("mean"), arg("var"), arg("correction"), arg("device"), arg("stream"), arg("bind") = false);
  m.def("rows", &py_rows, arg("op"), arg("x"), arg("out"), arg("weight"), arg("bias"), arg("eps"), arg("mean"),
        arg("rstd"), arg("policy"), arg("device"), arg("stream"), arg("bind") = false);
  m.def("row_mean_var", &py_row_mean_var, arg("x"), arg("mean"), arg("var"), arg("correction"), arg("device"),
        arg("stream"), arg("bind") = false);
  m.def("attention", &py_attention, arg("q"), arg("k"), arg("v"), arg("out"), arg("lse"), arg("softmax_scale"),
        arg("causal"), arg("window_left"), arg("window_right"), arg("cu_seqlens_q"), arg("cu_seqlens_k"),
        arg("max_seqlen_q"), arg("max_seqlen_k"), arg("policy"), arg("device"), arg("stream"), arg("bind") = false);
  m.def("decode", &py_decode, arg("q"), arg("out"), arg("k_cache"), arg("v_cache"), arg("block_table"),
        arg("cache_seqlens"), arg("k_scale"), arg("v_scale"), arg("kv_dtype"), arg("lse"), arg("softmax_scale"),
        arg("causal"), arg("window_left"), arg("window_right"), arg("num_splits"), arg("max_seqlen_k"), arg("error"), arg("policy"),
        arg("device"), arg("stream"), arg("bind") = false);
  m.def("kv_cache_append", &py_append, arg("k_cache"), arg("v_cache"), arg("block_table"), arg("cache_seqlens"),
        arg("k_scale"), arg("v_scale"), arg("kv_dtype"), arg("k_new"), arg("v_new"), arg("error"), arg("device"), arg("stream"), arg("bind") = false);
  m.def("devices", &py_devices);
  m.def("plan_reduce", &py_plan_reduce, arg("device"), arg("n"), arg("dtype"), arg("reproducible"));
  m.def("plan_rows", &py_plan_rows, arg("device"), arg("op"), arg("rows"), arg("cols"), arg("dtype"));
  m.def("plan_attention", &py_plan_attention, arg("device"), arg("dtype"), arg("batch"), arg("heads_q"),
        arg("heads_kv"), arg("head_dim"), arg("seqlen_q"), arg("seqlen_k"), arg("causal"), arg("window_left"),
        arg("window_right"));
  m.def("plan_decode", &py_plan_decode, arg("device"), arg("dtype"), arg("kv_dtype"), arg("batch"), arg("heads_q"),
        arg("heads_kv"), arg("head_dim"), arg("seqlen_q"), arg("context"), arg("page_size"), arg("causal"),
        arg("window_left"), arg("window_right"), arg("num_splits"));
  m.def("default_device", [] {
    pk::stream s;
    pk::python::check(pk::default_host_stream(s));
    return s.device().name;
  });
}
