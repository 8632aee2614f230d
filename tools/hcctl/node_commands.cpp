#include "tools/hcctl/node_commands.hpp"

#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <utility>

#include "cli/standard_streams.hpp"
#include "schema/client.hpp"
#include "tools/hcctl/inspect_view.hpp"

namespace hc::cli {
namespace {

using nlohmann::json;

std::unique_ptr<client> connect_or_say(const node_options& o) {
  auto c = client::connect(o.address, o.token, o.timeout);
  if (!c) {
    std::fprintf(stderr, "hcctl: cannot reach the node at %s: %s\n", o.address.c_str(),
                 c.err().message.c_str());
    return nullptr;
  }
  return std::move(*c);
}

}  // namespace

int run_ping(const node_options& o) {
  const auto t0 = std::chrono::steady_clock::now();
  auto c = connect_or_say(o);
  if (!c) return 1;
  auto r = c->ping();
  if (!r) {
    std::fprintf(stderr, "hcctl ping: %s\n", r.err().message.c_str());
    return 1;
  }
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (o.json)
    std::puts(json{{"ok", true},
                   {"protocol_version", r->protocol_version},
                   {"node_version", r->node_version},
                   {"ms", ms}}
                  .dump()
                  .c_str());
  else
    fmt::print("node at {} answered: hybridcached {} (protocol {}) in {:.2f} ms\n", o.address,
               r->node_version, r->protocol_version, ms);
  return 0;
}

int run_stats(const node_options& o) {
  auto c = connect_or_say(o);
  if (!c) return 1;
  auto r = c->stats();
  if (!r) {
    std::fprintf(stderr, "hcctl stats: %s\n", r.err().message.c_str());
    return 1;
  }
  if (o.json) {
    json j = json::object();
    for (const auto& [k, v] : *r)
      j[k] = v;
    std::puts(j.dump().c_str());
  } else {
    for (const auto& [k, v] : *r)
      fmt::print("{:<24} {}\n", k, v);
  }
  return 0;
}

int run_inspect(const node_options& o) {
  auto c = connect_or_say(o);
  if (!c) return 1;
  auto r = c->inspect(o.blocks);
  if (!r) {
    std::fprintf(stderr, "hcctl inspect: %s\n", r.err().message.c_str());
    return 1;
  }
  json doc = json::parse(*r, nullptr, false);
  if (o.json || doc.is_discarded()) {
    std::puts(r->c_str());
    return 0;
  }
  std::fputs(inspect_text(doc).c_str(), stdout);
  return 0;
}

}  // namespace hc::cli

namespace hc::cli {
namespace {

/// The counters `top` shows as rates, with their labels (stats names: sum_stats).
constexpr std::pair<const char*, const char*> top_rates[] = {
    {"steps", "steps/s"},
    {"commands", "commands/s"},
    {"matches", "matches/s"},
    {"queried_tokens", "queried tokens/s"},
    {"matched_kv_tokens", "KV hit tokens/s"},
    {"matched_resumable_tokens", "resumable hit tokens/s"},
    {"inserted_tokens", "inserted tokens/s"},
    {"evicted_tokens", "evicted tokens/s"},
    {"evicted_slots", "evicted slots/s"},
    {"command_errors", "command errors/s"},
};

/// The tiers' counters `top` shows as rates (its JSON's `tier_rates` / `tier_totals`): the
/// instances' host tiers (the stats sum them) and the node's L3 store (inspect's
/// host_storage.l3: tier_figures), with their labels.
constexpr std::pair<const char*, const char*> tier_rates[] = {
    {"backed_up_tokens", "L2 backed-up tokens/s"},
    {"loaded_back_tokens", "L2 loaded-back tokens/s"},
    {"demoted_tokens", "L2 demoted tokens/s"},
    {"host_evicted_tokens", "L2 evicted tokens/s"},
    {"host_evicted_slots", "L2 evicted slots/s"},
    {"l3_pages_written", "L3 pages written/s"},
    {"l3_pages_read", "L3 pages read/s"},
};

/// The L2 pools' gauges (the stats sum the host tiers'), under `top`'s JSON `host_gauges`.
constexpr const char* host_gauges[] = {"host_kv_tokens_capacity", "host_kv_tokens_free",
                                       "host_ssm_slots_capacity", "host_ssm_slots_free"};

using stat_map = std::map<std::string, double>;

/// The node's stats, and from its inspect document what they do not have (tier_figures).
result<stat_map> poll(client& c) {
  auto r = c.stats();
  if (!r) return r.err();
  stat_map m;
  for (const auto& [k, v] : *r)
    m[k] = v;
  auto text = c.inspect(false);
  if (!text) return text.err();
  const json doc = json::parse(*text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object())
    return error{errc::io_error, "the node's inspect answer is not JSON"};
  for (const auto& [k, v] : tier_figures(doc))
    m[k] = v;
  return m;
}

double at(const stat_map& m, const char* k) {
  auto it = m.find(k);
  return it == m.end() ? 0.0 : it->second;
}

}  // namespace

int run_top(const node_options& o, const top_options& t) {
  auto c = connect_or_say(o);
  if (!c) return 1;
  auto prev = poll(*c);
  if (!prev) {
    std::fprintf(stderr, "hcctl top: %s\n", prev.err().message.c_str());
    return 1;
  }
  auto prev_t = std::chrono::steady_clock::now();
  const bool tty = !o.json && ::isatty(STDOUT_FILENO);
  for (std::size_t n = 0; t.count == 0 || n < t.count; ++n) {
    std::this_thread::sleep_for(std::chrono::duration<double>(t.interval_s));
    auto cur = poll(*c);
    if (!cur) {
      std::fprintf(stderr, "hcctl top: %s\n", cur.err().message.c_str());
      return 1;
    }
    const auto now = std::chrono::steady_clock::now();
    const double dt = std::chrono::duration<double>(now - prev_t).count();
    json rates = json::object(), tiers = json::object();
    for (const auto& [k, label] : top_rates)
      rates[k] = std::max(0.0, at(*cur, k) - at(*prev, k)) / dt;
    for (const auto& [k, label] : tier_rates)
      tiers[k] = std::max(0.0, at(*cur, k) - at(*prev, k)) / dt;
    const double matched = at(*cur, "matched_kv_tokens") - at(*prev, "matched_kv_tokens");
    const double resumable =
        at(*cur, "matched_resumable_tokens") - at(*prev, "matched_resumable_tokens");
    const double queried = at(*cur, "queried_tokens") - at(*prev, "queried_tokens");
    if (o.json) {
      json gauges = json::object();
      for (const char* k :
           {"sessions", "instances", "live_requests", "pins", "pinned_tokens", "kv_tokens_capacity",
            "kv_tokens_free", "kv_tokens_evictable", "kv_tokens_protected", "ssm_slots_capacity",
            "ssm_slots_free", "ssm_slots_evictable", "ssm_slots_protected", "invariant_violations"})
        gauges[k] = at(*cur, k);
      json totals = json::object(), tier_totals = json::object(), host = json::object();
      for (const auto& [k, label] : top_rates)
        totals[k] = at(*cur, k);
      for (const auto& [k, label] : tier_rates)
        tier_totals[k] = at(*cur, k);
      for (const char* k : host_gauges)
        host[k] = at(*cur, k);
      host["host_tiers"] = at(*cur, "host_tiers");
      std::puts(json{{"interval_s", dt},
                     {"rates", rates},
                     {"totals", totals},
                     {"resumable_share", matched > 0 ? json(resumable / matched) : json(nullptr)},
                     {"kv_hit_share", queried > 0 ? json(matched / queried) : json(nullptr)},
                     {"gauges", gauges},
                     {"tier_rates", tiers},
                     {"tier_totals", tier_totals},
                     {"host_gauges", host}}
                    .dump()
                    .c_str());
    } else {
      if (tty) std::fputs("\033[H\033[2J", stdout);  // home + clear: redraw in place
      fmt::print("hybridcached at {} — every {:.1f} s (Ctrl-C to stop)\n\n", o.address, dt);
      for (const auto& [k, label] : top_rates)
        fmt::print("  {:<24} {:>14.1f}\n", label, rates[k].get<double>());
      fmt::print("  {:<24} {:>14}\n", "KV hits of queried",
                 queried > 0 ? fmt::format("{:.1f} %", 100.0 * matched / queried) : "-");
      fmt::print("  {:<24} {:>14}\n", "resumable share of hits",
                 matched > 0 ? fmt::format("{:.1f} %", 100.0 * resumable / matched) : "-");
      if (at(*cur, "host_tiers") > 0)  // the tiers' rates, where an instance has a host tier
        for (const auto& [k, label] : tier_rates)
          fmt::print("  {:<24} {:>14.1f}\n", label, tiers[k].get<double>());
      const auto pct = [](double used, double cap) { return cap > 0 ? 100.0 * used / cap : 0.0; };
      const double kv_cap = at(*cur, "kv_tokens_capacity"),
                   slot_cap = at(*cur, "ssm_slots_capacity");
      fmt::print(
          "\n  sessions {:.0f}, instances {:.0f}, live requests {:.0f}, pins {:.0f} ({:.0f} "
          "tokens)\n",
          at(*cur, "sessions"), at(*cur, "instances"), at(*cur, "live_requests"), at(*cur, "pins"),
          at(*cur, "pinned_tokens"));
      fmt::print(
          "  KV tokens  {:.0f} used of {:.0f} ({:.1f} %), protected {:.0f}, evictable {:.0f}\n",
          kv_cap - at(*cur, "kv_tokens_free"), kv_cap,
          pct(kv_cap - at(*cur, "kv_tokens_free"), kv_cap), at(*cur, "kv_tokens_protected"),
          at(*cur, "kv_tokens_evictable"));
      fmt::print(
          "  SSM slots  {:.0f} used of {:.0f} ({:.1f} %), protected {:.0f}, evictable {:.0f}\n",
          slot_cap - at(*cur, "ssm_slots_free"), slot_cap,
          pct(slot_cap - at(*cur, "ssm_slots_free"), slot_cap), at(*cur, "ssm_slots_protected"),
          at(*cur, "ssm_slots_evictable"));
      if (at(*cur, "host_tiers") > 0) {
        const double host_kv = at(*cur, "host_kv_tokens_capacity"),
                     host_slots = at(*cur, "host_ssm_slots_capacity");
        fmt::print(
            "  L2 pools of {:.0f} host tier{}: KV tokens {:.0f} used of {:.0f} ({:.1f} %), "
            "SSM slots {:.0f} used of {:.0f} ({:.1f} %)\n",
            at(*cur, "host_tiers"), at(*cur, "host_tiers") == 1 ? "" : "s",
            host_kv - at(*cur, "host_kv_tokens_free"), host_kv,
            pct(host_kv - at(*cur, "host_kv_tokens_free"), host_kv),
            host_slots - at(*cur, "host_ssm_slots_free"), host_slots,
            pct(host_slots - at(*cur, "host_ssm_slots_free"), host_slots));
      }
      if (at(*cur, "invariant_violations") > 0)
        fmt::print("  INVARIANT VIOLATIONS: {:.0f} (see the node's log)\n",
                   at(*cur, "invariant_violations"));
      if (!tty) std::puts("");
    }
    // A reader that went away (`hcctl top | head -1`) or a full disk: stop (main says why).
    if (cli::flush_standard_output() != 0) return 1;
    prev = std::move(cur);
    prev_t = now;
  }
  return 0;
}

}  // namespace hc::cli
