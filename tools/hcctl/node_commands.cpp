#include "tools/hcctl/node_commands.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "schema/client.hpp"

namespace hc::cli {
namespace {

using nlohmann::json;

std::unique_ptr<client> connect_or_say(const node_options& o) {
  auto c = client::connect(o.address, o.token);
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
  auto r = c->inspect();
  if (!r) {
    std::fprintf(stderr, "hcctl inspect: %s\n", r.err().message.c_str());
    return 1;
  }
  json doc = json::parse(*r, nullptr, false);
  if (o.json || doc.is_discarded()) {
    std::puts(r->c_str());
    return 0;
  }
  fmt::print("sessions: {}\nhost storage: {}\n", doc.value("sessions", 0),
             doc["host_storage"].dump());
  for (const auto& in : doc["instances"]) {
    const auto& t = in["tree"];
    const auto& s = in["stream"];
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
    fmt::print("  stream: {} snapshots, {} clears, {} COWs run; shm {} ({} B), {} ({} B)\n",
               s.value("snapshots_run", 0), s.value("clears_run", 0), s.value("cows_run", 0),
               s.value("kv_shm", ""), s.value("kv_bytes", 0), s.value("ssm_shm", ""),
               s.value("ssm_bytes", 0));
  }
  return 0;
}

}  // namespace hc::cli
