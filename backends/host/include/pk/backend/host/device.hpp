// Host emulator backend: the "device" is a database entry the emulator impersonates.
#pragma once
#include <pk/archdb/device.hpp>
#include <pk/status.hpp>

#include <string_view>

namespace pk::backend::host {

//! Always 1: the emulator is always present.
int device_count() noexcept;
//! The archdb entry named `name` (any alias), or errc::not_found listing how to see the names.
pk::status impersonate(std::string_view name, const archdb::device_desc** out);

}  // namespace pk::backend::host
