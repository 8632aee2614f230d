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

namespace hc::cli {
namespace {

using nlohmann::json;

/// `b` bytes in binary units with one decimal ("512 B", "1.5 KiB", "64.0 GiB").
std::string human_bytes(std::uint64_t b) {
  if (b < 1024) return fmt::format("{} B", b);
  constexpr const char* units[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
  double v = static_cast<double>(b) / 1024;
  std::size_t u = 0;
  for (; v >= 1024 && u + 1 < std::size(units); ++u)
    v /= 1024;
  return fmt::format("{:.1f} {}", v, units[u]);
}

/// A counter of an inspect document (0 when absent).
std::uint64_t count_of(const json& j, const char* key) {
  return j.value(key, std::uint64_t{0});
}

/// `seconds` for people, to its two largest units ("45 s", "12 min 5 s", "3 h 12 min",
/// "2 d 3 h").
std::string human_duration(double seconds) {
  const auto s = static_cast<std::uint64_t>(std::max(0.0, seconds));
  if (s < 60) return fmt::format("{} s", s);
  if (s < 3600) return fmt::format("{} min {} s", s / 60, s % 60);
  if (s < 86400) return fmt::format("{} h {} min", s / 3600, s % 3600 / 60);
  return fmt::format("{} d {} h", s / 86400, s % 86400 / 3600);
}

/// The process that runs the node, as inspect's "node" has it (absent from a node before
/// it): its release, pid, uptime and the settings given beyond the defaults (--json: all).
void print_node(const json& n) {
  if (!n.is_object()) return;
  std::string what = n.value("program", "node");
  if (n.contains("version")) what += fmt::format(" {}", n.value("version", ""));
  if (n.contains("protocol")) what += fmt::format(" (protocol {})", n.value("protocol", 0));
  fmt::print("node: {}, pid {}, up {} (since {})\n", what, n.value("pid", 0),
             human_duration(n.value("uptime_seconds", 0.0)), n.value("started", "?"));
  const json settings = n.value("settings", json::object());
  if (settings.empty()) return;
  std::string given;
  for (const auto& name : n.value("given", json::array())) {
    if (!name.is_string()) continue;
    const json v = settings.value(name.get<std::string>(), json());
    given += fmt::format("{}{} = {}", given.empty() ? "" : ", ", name.get<std::string>(),
                         v.is_string() ? v.get<std::string>() : v.dump());
  }
  fmt::print("  settings: {} (inspect --json lists all {})\n",
             given.empty() ? "all defaults" : given + ", the rest defaults", settings.size());
}

/// The node's L3 store, as inspect's "host_storage" has it (null: a node without one).
void print_l3(const json& l3) {
  if (!l3.is_object()) {
    fmt::print("L3 store: none (the node runs with --l3 false)\n");
    return;
  }
  const auto n = [&](const char* k) { return count_of(l3, k); };
  fmt::print("L3 store: {} values, {} of {}{}\n", n("values"), human_bytes(n("bytes")),
             human_bytes(n("capacity")),
             l3.value("loading", false) ? " (reading its index: misses until it has)" : "");
  if (l3.value("index_failing", false))
    fmt::print(
        "  its index cannot write to its disk: RocksDB retries every second, L3 writes may "
        "fail meanwhile (the node's log says why)\n");
  fmt::print("  backups: {} ({} failed, {} skipped while its index loaded), {} pages written\n",
             n("backups"), n("backup_failures"), n("backups_skipped_loading"), n("pages_written"));
  fmt::print("  prefetch reads: {}, {} pages read; values evicted: {}, found corrupt: {}\n",
             n("prefetch_reads"), n("pages_read"), n("evicted"), n("corrupt"));
  fmt::print("  Store clients: {} calls, {} gets ({} hits), {} sets\n", n("external_calls"),
             n("external_gets"), n("external_hits"), n("external_sets"));
}

/// What an instance served (inspect's tree.served).
void print_served(const json& s) {
  const auto n = [&](const char* k) { return count_of(s, k); };
  fmt::print(
      "  served: {} steps, {} commands ({} errors), {} matches ({} KV / {} resumable tokens "
      "hit), {} lookups, {} tokens inserted\n",
      n("steps"), n("commands"), n("command_errors"), n("matches"), n("matched_kv_tokens"),
      n("matched_resumable_tokens"), n("lookups"), n("inserted_tokens"));
  fmt::print(
      "  evicted: {} tokens and {} slots ({} and {} under pressure); tombstones: {} by "
      "eviction, {} by split\n",
      n("evicted_tokens"), n("evicted_slots"), n("pressure_evicted_tokens"),
      n("pressure_evicted_slots"), n("tombstones_by_eviction"), n("tombstones_by_split"));
}

/// An instance's host tier (inspect's tree.host), if it has one.
void print_host_tier(const json& h) {
  const auto n = [&](const char* k) { return count_of(h, k); };
  fmt::print(
      "  L2 pools: KV tokens {} free of {}, slots {} free of {}; the tree holds {} tokens and {} "
      "slots there\n",
      n("kv_available"), n("kv_capacity"), n("slot_available"), n("slot_capacity"),
      n("tree_tokens"), n("tree_slots"));
  fmt::print(
      "  L2 traffic: {} tokens backed up ({} backups refused), {} loaded back, {} demoted, {} "
      "evicted from L2\n",
      n("backed_up_tokens"), n("backups_refused"), n("loaded_back_tokens"), n("demoted_tokens"),
      n("host_evicted_tokens"));
  if (h.value("l3", false))
    fmt::print("  to L3: {} writes ({} failed, {} skipped while its index loaded)\n",
               n("l3_writes"), n("l3_write_failures"), n("l3_writes_skipped"));
  std::string outcomes;
  if (h.contains("prefetch") && h["prefetch"].is_object())
    for (const auto& [k, v] : h["prefetch"].items())
      outcomes += fmt::format(", {} {}", v.get<std::uint64_t>(), k);
  fmt::print("  prefetch: {} in flight ({} tokens of L2 held){}\n", n("prefetches_in_flight"),
             n("prefetch_occupied_tokens"), outcomes);
}

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
  print_node(doc.value("node", json()));
  fmt::print("sessions: {}\n", doc.value("sessions", 0));
  const std::uint64_t violations = doc.value("invariant_violations", std::uint64_t{0});
  fmt::print(
      "invariant violations: {}{}\n", violations,
      violations > 0
          ? " (a hybridcache bug; the first: " + doc.value("first_invariant_violation", "") + ")"
          : std::string());
  const auto storage = doc.find("host_storage");  // null when its actor did not answer
  print_l3(storage != doc.end() && storage->is_object() ? storage->value("l3", json()) : json());
  for (const auto& in : doc.value("instances", json::array())) {
    // A part its actor did not answer (or a stream not yet attached) is null: printed as
    // zeros rather than ending hcctl with a JSON type error.
    const auto part = [&in](const char* key) {
      const auto it = in.is_object() ? in.find(key) : in.end();
      return it != in.end() && it->is_object() ? *it : json::object();
    };
    const json t = part("tree"), s = part("stream");
    fmt::print("instance {} [{}]\n", t.value("instance", 0), in.value("fingerprint", ""));
    fmt::print("  tree: {} nodes, {} leaves, page size {}\n", t.value("nodes", 0),
               t.value("leaves", 0), t.value("page_size", 0));
    fmt::print("  KV tokens: {} free of {} (evictable {}, protected {})\n",
               t.value("kv_available", 0), t.value("kv_capacity", 0), t.value("full_evictable", 0),
               t.value("full_protected", 0));
    fmt::print("  SSM slots: {} free of {} (evictable {}, protected {})\n",
               t.value("slot_available", 0), t.value("slot_capacity", 0),
               t.value("mamba_evictable", 0), t.value("mamba_protected", 0));
    fmt::print("  sessions: {}, live requests: {}\n", t.value("sessions", 0),
               t.value("live_requests", 0));
    if (t.contains("served")) print_served(t["served"]);
    if (t.contains("host") && t["host"].is_object()) print_host_tier(t["host"]);
    if (t.contains("blocks")) {
      std::size_t checkpoints = 0;
      for (const auto& b : t["blocks"])
        checkpoints += b.value("checkpoint", false) ? 1 : 0;
      const std::string topic = t.value("event_topic", "");
      fmt::print(
          "  device KV pages: {}, with an SSM checkpoint: {} ({})\n", t["blocks"].size(),
          checkpoints,
          topic.empty() ? "no KV events published: --kv-events off" : "events topic " + topic);
    }
    fmt::print(
        "  stream: {} snapshots, {} clears, {} COWs run; {} tier loads, {} demotions, {} "
        "backups ({} to the host, {} to the device)\n",
        s.value("snapshots_run", 0), s.value("clears_run", 0), s.value("cows_run", 0),
        s.value("tier_loads", 0), s.value("tier_demotions", 0), s.value("tier_backups", 0),
        human_bytes(s.value("bytes_to_host", std::uint64_t{0})),
        human_bytes(s.value("bytes_to_device", std::uint64_t{0})));
    if (s.value("device", "cpu") == "cuda")
      fmt::print("  pools: on cuda:{} (KV {}, SSM {})\n", s.value("device_ordinal", 0),
                 human_bytes(s.value("kv_bytes", std::uint64_t{0})),
                 human_bytes(s.value("ssm_bytes", std::uint64_t{0})));
    else if (s.value("kv_shm", "").empty() && s.value("ssm_shm", "").empty())
      fmt::print("  pools: none (kvBytesPerToken and ssmSlotBytes 0: the index alone)\n");
    else
      fmt::print("  pools: {} ({}), {} ({})\n", s.value("kv_shm", ""),
                 human_bytes(s.value("kv_bytes", std::uint64_t{0})), s.value("ssm_shm", ""),
                 human_bytes(s.value("ssm_bytes", std::uint64_t{0})));
  }
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
    {"matched_kv_tokens", "KV hit tokens/s"},
    {"matched_resumable_tokens", "resumable hit tokens/s"},
    {"inserted_tokens", "inserted tokens/s"},
    {"evicted_tokens", "evicted tokens/s"},
    {"evicted_slots", "evicted slots/s"},
    {"command_errors", "command errors/s"},
};

/// The tiers' counters `top` shows as rates (its JSON's `tier_rates` / `tier_totals`): the
/// instances' host tiers (inspect's tree.host, summed) and the node's L3 store (inspect's
/// host_storage.l3), with their labels.
constexpr std::pair<const char*, const char*> tier_rates[] = {
    {"backed_up_tokens", "L2 backed-up tokens/s"},
    {"loaded_back_tokens", "L2 loaded-back tokens/s"},
    {"demoted_tokens", "L2 demoted tokens/s"},
    {"host_evicted_tokens", "L2 evicted tokens/s"},
    {"l3_pages_written", "L3 pages written/s"},
    {"l3_pages_read", "L3 pages read/s"},
};

/// The L2 pools' gauges (inspect's tree.host, summed), under `top`'s JSON `host_gauges`.
constexpr std::pair<const char*, const char*> host_gauges[] = {
    {"host_kv_tokens_capacity", "kv_capacity"},
    {"host_kv_tokens_free", "kv_available"},
    {"host_ssm_slots_capacity", "slot_capacity"},
    {"host_ssm_slots_free", "slot_available"},
};

using stat_map = std::map<std::string, double>;

/// A number of a JSON object (0 when absent or not a number).
double number_in(const json& j, const char* key) {
  if (!j.is_object()) return 0.0;
  const auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : 0.0;
}

/// The node's stats, and from its inspect document the tiers' figures above and
/// "host_tiers" (how many instances have one).
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
  for (const auto& in : doc.value("instances", json::array())) {
    // A part an actor did not answer is null (inspect_document.hpp): skipped, not a throw.
    const auto tree = in.is_object() ? in.find("tree") : in.end();
    if (tree == in.end() || !tree->is_object()) continue;
    const auto host = tree->find("host");
    if (host == tree->end() || !host->is_object()) continue;
    m["host_tiers"] += 1;
    for (const auto& [k, label] : tier_rates)
      m[k] += number_in(*host, k);
    for (const auto& [k, field] : host_gauges)
      m[k] += number_in(*host, field);
  }
  const auto storage = doc.find("host_storage");
  const json l3 =
      storage != doc.end() && storage->is_object() ? storage->value("l3", json()) : json();
  m["l3_pages_written"] = number_in(l3, "pages_written");
  m["l3_pages_read"] = number_in(l3, "pages_read");
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
    if (o.json) {
      json gauges = json::object();
      for (const char* k :
           {"sessions", "instances", "live_requests", "kv_tokens_capacity", "kv_tokens_free",
            "kv_tokens_evictable", "kv_tokens_protected", "ssm_slots_capacity", "ssm_slots_free",
            "ssm_slots_evictable", "ssm_slots_protected", "invariant_violations"})
        gauges[k] = at(*cur, k);
      json totals = json::object(), tier_totals = json::object(), host = json::object();
      for (const auto& [k, label] : top_rates)
        totals[k] = at(*cur, k);
      for (const auto& [k, label] : tier_rates)
        tier_totals[k] = at(*cur, k);
      for (const auto& [k, field] : host_gauges)
        host[k] = at(*cur, k);
      host["host_tiers"] = at(*cur, "host_tiers");
      std::puts(json{{"interval_s", dt},
                     {"rates", rates},
                     {"totals", totals},
                     {"resumable_share", matched > 0 ? json(resumable / matched) : json(nullptr)},
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
      fmt::print("  {:<24} {:>14}\n", "resumable share of hits",
                 matched > 0 ? fmt::format("{:.1f} %", 100.0 * resumable / matched) : "-");
      if (at(*cur, "host_tiers") > 0)  // the tiers' rates, where an instance has a host tier
        for (const auto& [k, label] : tier_rates)
          fmt::print("  {:<24} {:>14.1f}\n", label, tiers[k].get<double>());
      const auto pct = [](double used, double cap) { return cap > 0 ? 100.0 * used / cap : 0.0; };
      const double kv_cap = at(*cur, "kv_tokens_capacity"),
                   slot_cap = at(*cur, "ssm_slots_capacity");
      fmt::print("\n  sessions {:.0f}, instances {:.0f}, live requests {:.0f}\n",
                 at(*cur, "sessions"), at(*cur, "instances"), at(*cur, "live_requests"));
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
