// User-operator reductions compiled once per target, as a user's TU would be (reduce_custom.hpp):
// a (min, max) pair and a bitwise xor.
// The target header first: it opens the per-target inline namespace that the declarations reopen.
#include <pk/reduction/reduce_custom.hpp>

#include "custom_op_kernels.hpp"

PK_DETAIL_TARGET_BEGIN
namespace test_custom {

struct minmax_op {
  PK_HOST_DEVICE test::minmax operator()(const test::minmax& a, const test::minmax& b) const {
    return test::minmax{b.lo < a.lo ? b.lo : a.lo, a.hi < b.hi ? b.hi : a.hi};
  }
};
struct xor_op {
  PK_HOST_DEVICE std::uint32_t operator()(std::uint32_t a, std::uint32_t b) const { return a ^ b; }
};

status minmax_reduce(const stream& s, const test::minmax* in, std::int64_t n, test::minmax* out, int policy) {
  reduce_options o;
  const std::string forced = policy < 0 ? "" : reduction::name_of(reduction::reduce_candidates[static_cast<std::size_t>(policy)]);
  if (policy >= 0) o.policy = forced.c_str();
  return reduce_custom(s, in, n, out, minmax_op{}, test::minmax{3.0e38f, -3.0e38f}, o);
}
status xor_reduce(const stream& s, const std::uint32_t* in, std::int64_t n, std::uint32_t* out) {
  return reduce_custom(s, in, n, out, xor_op{}, std::uint32_t{0});
}

}  // namespace test_custom
PK_DETAIL_TARGET_END
