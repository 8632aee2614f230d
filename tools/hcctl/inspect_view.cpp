#include "tools/hcctl/inspect_view.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <string>
#include <utility>

namespace hc::cli {
namespace {

using nlohmann::json;

/// The member `key` of `j`, or null when `j` is not an object or has no such member.
const json& member(const json& j, const char* key) {
  static const json none;
  if (!j.is_object()) return none;
  const auto it = j.find(key);
  return it == j.end() ? none : *it;
}

/// The object `key` of `j`, or {} when it is absent or not an object.
const json& object_in(const json& j, const char* key) {
  static const json empty = json::object();
  const json& m = member(j, key);
  return m.is_object() ? m : empty;
}

/// The array `key` of `j`, or [] when it is absent or not an array.
const json& array_in(const json& j, const char* key) {
  static const json empty = json::array();
  const json& m = member(j, key);
  return m.is_array() ? m : empty;
}

/// A count of `j` (0 when absent, not a number or negative).
std::uint64_t count_of(const json& j, const char* key) {
  const json& m = member(j, key);
  if (m.is_number_unsigned()) return m.get<std::uint64_t>();
  if (m.is_number_integer())
    return static_cast<std::uint64_t>(std::max<std::int64_t>(0, m.get<std::int64_t>()));
  if (m.is_number_float()) return static_cast<std::uint64_t>(std::max(0.0, m.get<double>()));
  return 0;
}

/// A number of `j` (0 when absent or not a number).
double number_of(const json& j, const char* key) {
  const json& m = member(j, key);
  return m.is_number() ? m.get<double>() : 0.0;
}

/// A text of `j` (`otherwise` when absent or not a string).
std::string text_of(const json& j, const char* key, const char* otherwise = "") {
  const json& m = member(j, key);
  return m.is_string() ? m.get<std::string>() : otherwise;
}

/// A flag of `j` (false when absent or not a boolean).
bool flag_of(const json& j, const char* key) {
  const json& m = member(j, key);
  return m.is_boolean() && m.get<bool>();
}

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

/// `seconds` for people, to its two largest units ("45 s", "12 min 5 s", "3 h 12 min",
/// "2 d 3 h").
std::string human_duration(double seconds) {
  const auto s = static_cast<std::uint64_t>(std::max(0.0, seconds));
  if (s < 60) return fmt::format("{} s", s);
  if (s < 3600) return fmt::format("{} min {} s", s / 60, s % 60);
  if (s < 86400) return fmt::format("{} h {} min", s / 3600, s % 3600 / 60);
  return fmt::format("{} d {} h", s / 86400, s % 86400 / 3600);
}

using out_it = std::back_insert_iterator<std::string>;

/// The process that runs the node, as inspect's "node" has it (absent from a node before
/// it): its release, pid, uptime and the settings given beyond the defaults (--json: all).
void print_node(out_it out, const json& n) {
  if (!n.is_object()) return;
  std::string what = text_of(n, "program", "node");
  if (n.contains("version")) what += fmt::format(" {}", text_of(n, "version"));
  if (n.contains("protocol")) what += fmt::format(" (protocol {})", count_of(n, "protocol"));
  fmt::format_to(out, "node: {}, pid {}, up {} (since {})\n", what, count_of(n, "pid"),
                 human_duration(number_of(n, "uptime_seconds")), text_of(n, "started", "?"));
  const json& settings = object_in(n, "settings");
  if (settings.empty()) return;
  std::string given;
  for (const auto& name : array_in(n, "given")) {
    if (!name.is_string()) continue;
    const json& v = member(settings, name.get_ref<const std::string&>().c_str());
    given += fmt::format("{}{} = {}", given.empty() ? "" : ", ", name.get<std::string>(),
                         v.is_string() ? v.get<std::string>() : v.dump());
  }
  fmt::format_to(out, "  settings: {} (inspect --json lists all {})\n",
                 given.empty() ? "all defaults" : given + ", the rest defaults", settings.size());
}

/// The node's L3 store, as inspect's "host_storage" has it (null: a node without one).
void print_l3(out_it out, const json& l3) {
  if (!l3.is_object()) {
    fmt::format_to(out, "L3 store: none (the node runs with --l3 false)\n");
    return;
  }
  const auto n = [&](const char* k) { return count_of(l3, k); };
  fmt::format_to(out, "L3 store: {} values, {} of {}{}\n", n("values"), human_bytes(n("bytes")),
                 human_bytes(n("capacity")),
                 flag_of(l3, "loading") ? " (reading its index: misses until it has)" : "");
  if (flag_of(l3, "index_failing"))
    fmt::format_to(out,
                   "  its index cannot write to its disk: RocksDB retries every second, L3 "
                   "writes may fail meanwhile (the node's log says why)\n");
  fmt::format_to(out,
                 "  backups: {} ({} failed, {} skipped while its index loaded), {} pages "
                 "written\n",
                 n("backups"), n("backup_failures"), n("backups_skipped_loading"),
                 n("pages_written"));
  fmt::format_to(out,
                 "  prefetch reads: {}, {} pages read; values evicted: {}, found corrupt: {}\n",
                 n("prefetch_reads"), n("pages_read"), n("evicted"), n("corrupt"));
  fmt::format_to(out, "  Store clients: {} calls, {} gets ({} hits), {} sets\n",
                 n("external_calls"), n("external_gets"), n("external_hits"), n("external_sets"));
}

/// What an instance served (inspect's tree.served).
void print_served(out_it out, const json& s) {
  const auto n = [&](const char* k) { return count_of(s, k); };
  fmt::format_to(out,
                 "  served: {} steps, {} commands ({} errors), {} matches ({} KV / {} resumable "
                 "tokens hit of {} queried), {} lookups, {} tokens inserted\n",
                 n("steps"), n("commands"), n("command_errors"), n("matches"),
                 n("matched_kv_tokens"), n("matched_resumable_tokens"), n("queried_tokens"),
                 n("lookups"), n("inserted_tokens"));
  fmt::format_to(out,
                 "  evicted: {} tokens and {} slots ({} and {} under pressure); tombstones: {} "
                 "by eviction, {} by split\n",
                 n("evicted_tokens"), n("evicted_slots"), n("pressure_evicted_tokens"),
                 n("pressure_evicted_slots"), n("tombstones_by_eviction"),
                 n("tombstones_by_split"));
}

/// An instance's host tier (inspect's tree.host).
void print_host_tier(out_it out, const json& h) {
  const auto n = [&](const char* k) { return count_of(h, k); };
  fmt::format_to(out,
                 "  L2 pools: KV tokens {} free of {}, slots {} free of {}; the tree holds {} "
                 "tokens and {} slots there\n",
                 n("kv_available"), n("kv_capacity"), n("slot_available"), n("slot_capacity"),
                 n("tree_tokens"), n("tree_slots"));
  fmt::format_to(out,
                 "  L2 traffic: {} tokens backed up ({} backups refused), {} loaded back, {} "
                 "demoted, {} tokens and {} slots evicted from L2\n",
                 n("backed_up_tokens"), n("backups_refused"), n("loaded_back_tokens"),
                 n("demoted_tokens"), n("host_evicted_tokens"), n("host_evicted_slots"));
  if (flag_of(h, "l3"))
    fmt::format_to(out, "  to L3: {} writes ({} failed, {} skipped while its index loaded)\n",
                   n("l3_writes"), n("l3_write_failures"), n("l3_writes_skipped"));
  std::string outcomes;
  for (const auto& [k, v] : object_in(h, "prefetch").items())
    if (v.is_number()) outcomes += fmt::format(", {} {}", v.dump(), k);
  fmt::format_to(out, "  prefetch: {} in flight ({} tokens of L2 held){}\n",
                 n("prefetches_in_flight"), n("prefetch_occupied_tokens"), outcomes);
}

/// The device KV pages of an instance (inspect --blocks' tree.blocks).
void print_blocks(out_it out, const json& t, const json& blocks) {
  std::size_t checkpoints = 0;
  for (const auto& b : blocks)
    checkpoints += flag_of(b, "checkpoint") ? 1 : 0;
  const std::string topic = text_of(t, "event_topic");
  fmt::format_to(
      out, "  device KV pages: {}, with an SSM checkpoint: {} ({})\n", blocks.size(), checkpoints,
      topic.empty() ? "no KV events published: --kv-events off" : "events topic " + topic);
}

/// An instance's forward stream and pools (inspect's stream).
void print_stream(out_it out, const json& s) {
  fmt::format_to(out,
                 "  stream: {} snapshots, {} clears, {} COWs run; {} tier loads, {} demotions, "
                 "{} backups ({} to the host, {} to the device)\n",
                 count_of(s, "snapshots_run"), count_of(s, "clears_run"), count_of(s, "cows_run"),
                 count_of(s, "tier_loads"), count_of(s, "tier_demotions"),
                 count_of(s, "tier_backups"), human_bytes(count_of(s, "bytes_to_host")),
                 human_bytes(count_of(s, "bytes_to_device")));
  if (text_of(s, "device", "cpu") == "cuda")
    fmt::format_to(out, "  pools: on cuda:{} (KV {}, SSM {})\n", count_of(s, "device_ordinal"),
                   human_bytes(count_of(s, "kv_bytes")), human_bytes(count_of(s, "ssm_bytes")));
  else if (text_of(s, "kv_shm").empty() && text_of(s, "ssm_shm").empty())
    fmt::format_to(out, "  pools: none (kvBytesPerToken and ssmSlotBytes 0: the index alone)\n");
  else
    fmt::format_to(out, "  pools: {} ({}), {} ({})\n", text_of(s, "kv_shm"),
                   human_bytes(count_of(s, "kv_bytes")), text_of(s, "ssm_shm"),
                   human_bytes(count_of(s, "ssm_bytes")));
}

/// One instance of the document: its tree (with what it served, its host tier and device
/// pages) and its stream.
void print_instance(out_it out, const json& in) {
  const json& t = object_in(in, "tree");
  fmt::format_to(out, "instance {} [{}]\n", count_of(t, "instance"), text_of(in, "fingerprint"));
  fmt::format_to(out, "  tree: {} nodes, {} leaves, page size {}\n", count_of(t, "nodes"),
                 count_of(t, "leaves"), count_of(t, "page_size"));
  fmt::format_to(out, "  KV tokens: {} free of {} (evictable {}, protected {})\n",
                 count_of(t, "kv_available"), count_of(t, "kv_capacity"),
                 count_of(t, "full_evictable"), count_of(t, "full_protected"));
  fmt::format_to(out, "  SSM slots: {} free of {} (evictable {}, protected {})\n",
                 count_of(t, "slot_available"), count_of(t, "slot_capacity"),
                 count_of(t, "mamba_evictable"), count_of(t, "mamba_protected"));
  fmt::format_to(out, "  sessions: {}, live requests: {}, pins: {} ({} tokens)\n",
                 count_of(t, "sessions"), count_of(t, "live_requests"), count_of(t, "pins"),
                 count_of(t, "pinned_tokens"));
  if (t.contains("served")) print_served(out, object_in(t, "served"));
  if (member(t, "host").is_object()) print_host_tier(out, member(t, "host"));
  if (t.contains("blocks")) print_blocks(out, t, array_in(t, "blocks"));
  print_stream(out, object_in(in, "stream"));
}

}  // namespace

std::string inspect_text(const json& doc) {
  std::string text;
  const out_it out(text);
  print_node(out, member(doc, "node"));
  fmt::format_to(out, "sessions: {}\n", count_of(doc, "sessions"));
  const std::uint64_t violations = count_of(doc, "invariant_violations");
  fmt::format_to(
      out, "invariant violations: {}{}\n", violations,
      violations > 0
          ? " (a hybridcache bug; the first: " + text_of(doc, "first_invariant_violation") + ")"
          : std::string());
  print_l3(out, member(object_in(doc, "host_storage"), "l3"));
  for (const auto& in : array_in(doc, "instances"))
    print_instance(out, in);
  return text;
}

std::map<std::string, double> tier_figures(const json& doc) {
  std::map<std::string, double> m;
  m["host_tiers"] = 0;
  for (const auto& in : array_in(doc, "instances"))
    if (member(object_in(in, "tree"), "host").is_object()) m["host_tiers"] += 1;
  const json& l3 = member(object_in(doc, "host_storage"), "l3");
  m["l3_pages_written"] = number_of(l3, "pages_written");
  m["l3_pages_read"] = number_of(l3, "pages_read");
  return m;
}

}  // namespace hc::cli
