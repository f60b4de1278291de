// Attention forward instances: f16, head dim 64, every candidate policy of this target's family.
#include <pk/attention/detail/attention_launch.hpp>

PK_ATTENTION_INSTANCE(f16, pk::fp16, 64)
