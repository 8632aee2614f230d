#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "tools/hcsim/sim.hpp"

namespace hc::sim {
namespace {

// Every counter with its JSON name, so merge / json / from_json cannot drift apart.
template <class Report, class F>
void each_counter(Report& r, F&& f) {
  f("ops", r.ops);
  f("steps", r.steps);
  f("forwards", r.forwards);
  f("requests", r.requests);
  f("finished", r.finished);
  f("aborted", r.aborted);
  f("rejected", r.rejected);
  f("retracted", r.retracted);
  f("mismatches", r.mismatches);
  f("kv_mismatches", r.kv_mismatches);
  f("state_mismatches", r.state_mismatches);
  f("leaks", r.leaks);
  f("errors", r.errors);
  f("pins", r.pins);
  f("pin_losses", r.pin_losses);
  f("pin_loaded_tokens", r.pin_loaded_tokens);
  f("tool_waits", r.tool_waits);
  f("demotes", r.demotes);
  f("demoted_tokens", r.demoted_tokens);
  f("demote_evicted_tokens", r.demote_evicted_tokens);
  f("demote_deferred_tokens", r.demote_deferred_tokens);
  f("demote_kept_tokens", r.demote_kept_tokens);
  f("prompt_tokens", r.prompt_tokens);
  f("reused_tokens", r.reused_tokens);
  f("computed_tokens", r.computed_tokens);
  f("l1_hit_tokens", r.l1_hit_tokens);
  f("l2_hit_tokens", r.l2_hit_tokens);
  f("l3_hit_tokens", r.l3_hit_tokens);
  f("queried_tokens", r.queried_tokens);
  f("matched_kv_tokens", r.matched_kv_tokens);
}

}  // namespace

void sim_report::merge(const sim_report& o) {
  auto theirs = o;
  std::vector<std::uint64_t> add;
  each_counter(theirs, [&](const char*, std::uint64_t& v) { add.push_back(v); });
  std::size_t i = 0;
  each_counter(*this, [&](const char*, std::uint64_t& v) { v += add[i++]; });
  seconds = std::max(seconds, o.seconds);  // workers run side by side
  step_latency.merge(o.step_latency);
  if (first_error.empty()) first_error = o.first_error;
}

std::string sim_report::json() const {
  nlohmann::json j;
  auto self = *this;
  each_counter(self, [&](const char* k, std::uint64_t& v) { j[k] = v; });
  j["seconds"] = seconds;
  j["ops_per_second"] = seconds > 0 ? static_cast<double>(ops) / seconds : 0.0;
  j["hit_tokens"] = {{"l1", l1_hit_tokens}, {"l2", l2_hit_tokens}, {"l3", l3_hit_tokens}};
  j["first_error"] = first_error;
  j["step_latency_us"] = {{"p50", step_latency.percentile_us(0.50)},
                          {"p99", step_latency.percentile_us(0.99)},
                          {"p999", step_latency.percentile_us(0.999)},
                          {"max", step_latency.max_us()}};
  j["step_latency_buckets"] = step_latency.sparse();  // merged by the parent process
  return j.dump();
}

bool sim_report::from_json(const std::string& s, sim_report& out) {
  auto j = nlohmann::json::parse(s, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return false;
  each_counter(out, [&](const char* k, std::uint64_t& v) { v = j.value(k, std::uint64_t{0}); });
  out.seconds = j.value("seconds", 0.0);
  out.first_error = j.value("first_error", std::string());
  if (j.contains("step_latency_buckets") && j.contains("step_latency_us"))
    out.step_latency.add_sparse(
        j["step_latency_buckets"].get<std::vector<std::array<std::uint64_t, 2>>>(),
        j["step_latency_us"].value("max", std::uint64_t{0}));
  return true;
}

std::string sim_report::text() const {
  const double reuse = prompt_tokens ? 100.0 * static_cast<double>(reused_tokens) /
                                           static_cast<double>(prompt_tokens)
                                     : 0.0;
  std::string t = fmt::format(
      "ops {} in {:.1f} s ({:.0f} ops/s), {} steps, {} forwards\n"
      "requests {}: {} finished, {} aborted, {} retracted, {} not admitted\n"
      "prompt tokens {}: {} reused ({:.1f} %; L1 {}, L2 {}, L3 {}), {} computed\n"
      "step latency p50 {} us, p99 {} us, max {} us\n"
      "mismatches {} (KV {}, state {}), leaks {}, errors {}\n",
      ops, seconds, seconds > 0 ? static_cast<double>(ops) / seconds : 0.0, steps, forwards,
      requests, finished, aborted, retracted, rejected, prompt_tokens, reused_tokens, reuse,
      l1_hit_tokens, l2_hit_tokens, l3_hit_tokens, computed_tokens,
      step_latency.percentile_us(0.50), step_latency.percentile_us(0.99), step_latency.max_us(),
      mismatches, kv_mismatches, state_mismatches, leaks, errors);
  if (pins > 0 || pin_losses > 0)
    t += fmt::format("pins {} ({} tokens loaded back from the host), pinned prefixes lost {}\n",
                     pins, pin_loaded_tokens, pin_losses);
  if (demotes > 0)
    t += fmt::format(
        "demotes {}: device tokens demoted {}, evicted {}, demoted after a backup {}, kept {}\n",
        demotes, demoted_tokens, demote_evicted_tokens, demote_deferred_tokens, demote_kept_tokens);
  if (!first_error.empty()) t += "first problem: " + first_error + "\n";
  return t;
}

}  // namespace hc::sim
