// Internal: the device files embedded at configure time (see archdb/cmake/pk_embed_json.cmake).
#pragma once

#include <cstddef>

namespace pk::archdb::detail {
struct embedded_file {
  const char* name;
  const char* const* chunks;
  std::size_t chunk_count;
};
extern const embedded_file embedded_devices[];
extern const std::size_t embedded_device_count;
}  // namespace pk::archdb::detail
