// Kokkos adapter, common part: the pk stream of a Kokkos execution-space instance and the pointer,
// extents and strides of a Kokkos::View. Included by pk/interop/kokkos.hpp (reductions) and
// pk/interop/kokkos_attention.hpp (attention).
//
// Host execution spaces (Serial, OpenMP, Threads) run on pk's host backend: the emulator, impersonating
// $PK_HOST_DEVICE or the default emulated device (pass a device name to choose another). Kokkos::Cuda
// and Kokkos::HIP instances run on their stream and device. Work is enqueued on that stream, ordered
// with the space's other work; call space.fence() before reading results on the host.
//
// Optional (target pk::kokkos, built when Kokkos is found). Kokkos types stay out of pk's core headers.
#pragma once
#include <Kokkos_Core.hpp>
#include <pk/runtime.hpp>
#include <pk/status.hpp>

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

namespace pk::interop {

//! Where a view's elements are: element (i0, ..., i{rank-1}) is at data + sum(ik * strides[k]).
//! The highest rank of a Kokkos::View.
inline constexpr int max_view_rank = 8;

template <class T>
struct strided_view {
  T* data = nullptr;
  int rank = 0;
  std::array<std::int64_t, max_view_rank> extents{};
  std::array<std::int64_t, max_view_rank> strides{};
  bool contiguous = true;  //!< the elements fill [data, data + size) without gaps
  [[nodiscard]] std::int64_t size() const noexcept {
    std::int64_t n = 1;
    for (int k = 0; k < rank; ++k) n *= extents[static_cast<std::size_t>(k)];
    return n;
  }
};

//! Pointer, extents and strides (in elements) of a Kokkos::View of any rank and layout.
template <class View>
  requires Kokkos::is_view<View>::value
strided_view<typename View::value_type> describe(const View& v) {
  strided_view<typename View::value_type> d;
  d.data = v.data();
  d.rank = static_cast<int>(View::rank);
  for (int k = 0; k < d.rank; ++k) {
    d.extents[static_cast<std::size_t>(k)] = static_cast<std::int64_t>(v.extent(static_cast<std::size_t>(k)));
    d.strides[static_cast<std::size_t>(k)] = static_cast<std::int64_t>(v.stride(static_cast<std::size_t>(k)));
  }
  d.contiguous = v.span_is_contiguous();
  return d;
}

namespace detail {
template <class ExecSpace>
inline constexpr bool is_host_space =
    Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename ExecSpace::memory_space>::accessible;
}  // namespace detail

//! The pk stream for a Kokkos execution-space instance. Host spaces: the emulator impersonating
//! `host_device` (empty: $PK_HOST_DEVICE or the default). Kokkos::Cuda / Kokkos::HIP: the instance's
//! stream and device (pk must be built with that backend).
template <class ExecSpace>
  requires Kokkos::is_execution_space<ExecSpace>::value
status make_stream(const ExecSpace& space, stream& out, std::string_view host_device = {}) {
#if defined(KOKKOS_ENABLE_CUDA)
  if constexpr (std::is_same_v<ExecSpace, Kokkos::Cuda>) {
    return stream::cuda(space.cuda_stream(), space.cuda_device(), out);
  } else
#endif
#if defined(KOKKOS_ENABLE_HIP)
#if KOKKOS_VERSION >= 40000
  if constexpr (std::is_same_v<ExecSpace, Kokkos::HIP>) {
#else
  if constexpr (std::is_same_v<ExecSpace, Kokkos::Experimental::HIP>) {
#endif
    return stream::hip(space.hip_stream(), space.hip_device(), out);
  } else
#endif
  if constexpr (detail::is_host_space<ExecSpace>) {
    (void)space;
    if (!host_device.empty()) return stream::host(host_device, out);
    return default_host_stream(out);
  } else {
    (void)space;
    (void)host_device;
    return unsupported(std::string("pk::interop::make_stream: execution space ") + ExecSpace::name() +
                       " has no pk backend (supported: host spaces, Cuda, HIP)");
  }
}

namespace detail {
template <class ExecSpace, class View>
inline constexpr bool accessible_from = Kokkos::SpaceAccessibility<ExecSpace, typename View::memory_space>::accessible;

//! Host spaces: the emulator runs on the calling thread, so earlier work of the space must be done.
template <class ExecSpace>
void order_before(const ExecSpace& space) {
  if constexpr (is_host_space<ExecSpace>) space.fence();
}
}  // namespace detail

}  // namespace pk::interop
