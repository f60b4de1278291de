// pk with Kokkos: a Kokkos::View filled by a Kokkos kernel, summed by pk through the adapter
// (pk/interop/kokkos.hpp). Host execution spaces run pk on its host backend (the emulator); a CUDA or
// HIP space runs pk on the space's own stream.
//
//   cmake -S examples/kokkos -B build/example-kokkos -DCMAKE_PREFIX_PATH="<pk prefix>;<Kokkos prefix>"
//   cmake --build build/example-kokkos && build/example-kokkos/pk_example_kokkos
#include <Kokkos_Core.hpp>
#include <pk/interop/kokkos.hpp>

#include <cmath>
#include <cstdio>

int main(int argc, char* argv[]) {
  Kokkos::ScopeGuard kokkos(argc, argv);
  constexpr int n = 1 << 18;
  using space = Kokkos::DefaultExecutionSpace;

  Kokkos::View<float*> x("x", n);
  Kokkos::View<float> total("total");
  Kokkos::parallel_for("fill", Kokkos::RangePolicy<space>(0, n), KOKKOS_LAMBDA(int i) { x(i) = 1.0f / float(1 + i % 64); });

  // The same sum by Kokkos, in double, as the reference.
  double reference = 0;
  Kokkos::parallel_reduce("reference", Kokkos::RangePolicy<space>(0, n),
                          KOKKOS_LAMBDA(int i, double& acc) { acc += double(x(i)); }, reference);

  if (auto st = pk::interop::reduce_sum(space(), x, total); !st) {
    std::fprintf(stderr, "pk::interop::reduce_sum: %s\n", st.to_string().c_str());
    return 1;
  }
  space().fence();
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), total);
  // fp32 accumulation error is bounded by n * eps * sum|x| (all terms are positive here).
  const double bound = double(n) * 0x1p-24 * reference;
  const double error = std::fabs(double(h()) - reference);
  std::printf("Kokkos %s: pk sum = %.6f, Kokkos sum = %.6f, |error| %.2e (bound %.2e)\n", space::name(), double(h()),
              reference, error, bound);

  // Non-contiguous views are refused with a message, not a crash.
  Kokkos::View<float**, Kokkos::LayoutRight> m("m", 8, 8);
  auto column = Kokkos::subview(m, Kokkos::ALL, 3);
  auto st = pk::interop::reduce_sum(space(), column, total);
  std::printf("a strided column: %s\n", st.to_string().c_str());
  return error <= bound && !st ? 0 : 1;
}
