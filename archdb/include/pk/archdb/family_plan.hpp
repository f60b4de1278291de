// pk::archdb — the planning path every kernel family shares: one plan cache (plan once per device,
// family and exact problem key), the tuning-cache lookup, and the forced-policy rule (by name).
//
// A family's entry point only describes its problem and supplies the planner call:
//
//   const std::int64_t key[] = {n, elem_bytes};
//   auto p = pk::archdb::cached_plan(dev, "reduce", key, pk::archdb::size_bucket(n, elem_bytes),
//                                    [&] { return plan_reduce(dev, n, elem_bytes); });
//   int index = 0;
//   PK_TRY(pk::archdb::select_policy(*p, options.policy, "reduce", index));
//
// Host-only, thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "pk/archdb/device.hpp"
#include "pk/archdb/planner.hpp"
#include "pk/status.hpp"

namespace pk::archdb {

//! The plan of `family` for the problem `key` on `d`: made once by `make()` (the family's planner),
//! then, unless `tuning_bucket` is empty or $PK_TUNING is "off", replaced by a measured winner from the
//! tuning cache (apply_tuning_cache), and kept. The key holds the exact problem values that the plan
//! depends on, so a call's plan never depends on earlier calls (selection is deterministic for a
//! given tuning cache). Planning costs 10-30 us of host time (fits, occupancy, the `why` text), more
//! than a small kernel takes on a GPU; a hit costs a hash lookup. The cache is bounded (cleared when
//! full); a winner stored by `pk tune` while a process runs is used by the next process.
std::shared_ptr<const plan> cached_plan(const device_desc& d, std::string_view family, std::span<const std::int64_t> key,
                                        const std::string& tuning_bucket, const std::function<plan()>& make);

//! The one rule for a forced policy, for every family. `forced` null or empty: the plan's choice
//! (index = p.index; unsupported when nothing fits, with the planner's reasons). Otherwise the candidate
//! named `forced` among p.all: unknown -> invalid_argument listing the candidates compiled for this
//! device and problem; known but not fitting the device -> unsupported with the binding limit. A forced
//! policy is never dropped silently. `fn` prefixes the message ("reduce: policy ...").
status select_policy(const plan& p, const char* forced, std::string_view fn, int& index);

//! The plan with candidate `index` of p.all as its choice (index, name, occupancy, predicted time): what
//! the families' grid functions read after select_policy. `index` must be in [0, p.all.size()).
plan with_choice(const plan& p, int index);

//! Drops every cached plan (tests; `pk tune` after storing a winner).
void clear_plan_cache();

}  // namespace pk::archdb
