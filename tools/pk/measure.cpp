#include "measure.hpp"

#include <algorithm>
#include <cmath>

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
                    int reps, const measure_progress& progress, std::vector<measured_run>& out,
                    const std::vector<std::function<status()>>& alongside, std::vector<timing>* alongside_t) {
  out.clear();
  std::vector<std::function<status()>> works;
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
    // Checked first, on a poisoned output: a run that leaves elements unwritten fails even when the run
    // before it wrote the right values there.
    PK_TRY(f.poison(s));
    PK_TRY(f.launch(s, i));
    PK_TRY(f.verify(s, p, r.v));
    out.push_back(std::move(r));
    works.emplace_back([&f, &s, i] { return f.launch(s, i); });
  }
  works.insert(works.end(), alongside.begin(), alongside.end());
  // Short runs get more repetitions (a GPU's event timing of a 10 us call spreads over 8-12 us).
  if (s.backend() != backend_kind::host && !works.empty()) {
    timing probe;
    PK_TRY(time_work(s, 1, 3, works.front(), probe));
    if (probe.median_us > 0)
      reps = static_cast<int>(std::clamp(std::ceil(min_timed_us / probe.median_us), static_cast<double>(reps),
                                         static_cast<double>(std::max(reps, max_reps))));
  }
  std::vector<timing> t;
  PK_TRY(time_interleaved(s, warmup, reps, works, t));
  for (std::size_t k = 0; k < out.size(); ++k) {
    out[k].t = std::move(t[k]);
    if (progress) progress(k, out.size(), out[k].name, &out[k]);
  }
  if (alongside_t) alongside_t->assign(std::make_move_iterator(t.begin() + static_cast<std::ptrdiff_t>(out.size())),
                                       std::make_move_iterator(t.end()));
  return {};
}

}  // namespace pk::tool
