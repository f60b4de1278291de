// Attention forward instances: bf16, head dim 64, every candidate policy of this target's family.
#include <pk/attention/detail/attention_launch.hpp>

PK_ATTENTION_INSTANCE(bf16, pk::bf16, 64)
