#include "measure.hpp"

#include <algorithm>

namespace pk::tool {

std::vector<int> rank_fitting(const archdb::plan& model, int top) {
  std::vector<int> order;
  for (std::size_t i = 0; i < model.all.size(); ++i)
    if (model.all[i].fits) order.push_back(static_cast<int>(i));
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return model.all[static_cast<std::size_t>(a)].predicted_us < model.all[static_cast<std::size_t>(b)].predicted_us;
  });
  if (top > 0 && static_cast<std::size_t>(top) < order.size()) order.resize(static_cast<std::size_t>(top));
  return order;
}

status measure_runs(family& f, const stream& s, const archdb::plan& model, const std::vector<int>& order, int warmup,
                    int reps, const measure_progress& progress, std::vector<measured_run>& out) {
  out.clear();
  for (std::size_t k = 0; k < order.size(); ++k) {
    const int i = order[k];
    if (i >= static_cast<int>(model.all.size()) || (i < 0 && model.index < 0))
      return invalid_argument("measure_runs: run " + std::to_string(i) + " is neither a candidate nor a fitting plan");
    measured_run r;
    r.index = i;
    // The plan the run follows: the model's own, or the model with candidate i forced.
    archdb::plan p = model;
    if (i >= 0) {
      const auto& e = model.all[static_cast<std::size_t>(i)];
      p.index = i;
      p.name = e.name;
      p.occ = e.occ;
      p.predicted_us = e.predicted_us;
    }
    r.name = p.name;
    r.predicted_us = p.predicted_us;
    if (progress) progress(k, order.size(), r.name, nullptr);
    PK_TRY(time_work(s, warmup, reps, [&] { return f.launch(s, i); }, r.t));
    PK_TRY(f.verify(s, p, r.v));
    out.push_back(std::move(r));
    if (progress) progress(k, order.size(), out.back().name, &out.back());
  }
  return {};
}

}  // namespace pk::tool
