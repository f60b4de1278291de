// The families of the pk tool. To add one: implement pk::tool::family (see family_reduce.cpp) and add
// one line below.
#include "family.hpp"

namespace pk::tool {

std::unique_ptr<family> make_reduce_family();
#if __has_include(<pk/attention/attention.hpp>)
std::unique_ptr<family> make_attention_family();
#define PK_TOOL_ATTENTION {"attention", &make_attention_family},
#else
#define PK_TOOL_ATTENTION
#endif

const std::vector<family_registration>& families() {
  static const std::vector<family_registration> all = {
      {"reduce", &make_reduce_family},
      PK_TOOL_ATTENTION
  };
  return all;
}

}  // namespace pk::tool
