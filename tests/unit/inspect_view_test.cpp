// hcctl's reading of the node's inspect document (tools/hcctl/inspect_view.hpp): the text
// of a whole document, and that no part of it — absent, null (an actor that did not answer)
// or of another type (a node of another release) — ends hcctl with a JSON type error.
#include "tools/hcctl/inspect_view.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace {

using nlohmann::json;

/// A document of the shape actors/node/inspect_document.hpp writes, every part present: one
/// instance with a host tier and --blocks pages, one without.
json whole_document() {
  return json::parse(R"({
    "node": {"program": "hybridcached", "version": "0.1.0", "protocol": 2, "pid": 4242,
             "started": "2026-11-30T21:00:00Z", "uptime_seconds": 3725.5,
             "settings": {"socket": "/run/hc.sock", "threads": 2, "l3": true},
             "given": ["socket"]},
    "sessions": 3,
    "invariant_violations": 1,
    "first_invariant_violation": "lru: a locked leaf",
    "host_storage": {"l3": {"values": 10, "bytes": 2048, "capacity": 1073741824,
                            "loading": true, "index_failing": true, "backups": 5,
                            "backup_failures": 1, "backups_skipped_loading": 2,
                            "pages_written": 40, "prefetch_reads": 6, "pages_read": 30,
                            "evicted": 7, "corrupt": 8, "external_calls": 9,
                            "external_gets": 11, "external_hits": 12, "external_sets": 13}},
    "instances": [
      {"fingerprint": "m|tp0/1|P64",
       "tree": {"instance": 1, "nodes": 17, "leaves": 9, "page_size": 64,
                "kv_available": 100, "kv_capacity": 4096, "full_evictable": 50,
                "full_protected": 60, "slot_available": 4, "slot_capacity": 64,
                "mamba_evictable": 5, "mamba_protected": 6, "sessions": 2, "live_requests": 7,
                "pins": 3, "pinned_tokens": 192,
                "served": {"steps": 21, "commands": 22, "command_errors": 23, "matches": 24,
                           "queried_tokens": 99,
                           "matched_kv_tokens": 25, "matched_resumable_tokens": 26,
                           "lookups": 27, "inserted_tokens": 28, "evicted_tokens": 29,
                           "evicted_slots": 30, "pressure_evicted_tokens": 31,
                           "pressure_evicted_slots": 32, "tombstones_by_eviction": 33,
                           "tombstones_by_split": 34},
                "host": {"kv_available": 41, "kv_capacity": 42, "slot_available": 43,
                         "slot_capacity": 44, "tree_tokens": 45, "tree_slots": 46,
                         "backed_up_tokens": 47, "backups_refused": 48,
                         "loaded_back_tokens": 49, "demoted_tokens": 50,
                         "host_evicted_tokens": 51, "host_evicted_slots": 58,
                         "l3": true, "l3_writes": 52,
                         "l3_write_failures": 53, "l3_writes_skipped": 54,
                         "prefetches_in_flight": 55, "prefetch_occupied_tokens": 56,
                         "prefetch": {"completed": 57}},
                "blocks": [{"hash": 1, "checkpoint": true}, {"hash": 2, "checkpoint": false}],
                "event_topic": "kv@m"},
       "stream": {"snapshots_run": 61, "clears_run": 62, "cows_run": 63, "tier_loads": 64,
                  "tier_demotions": 65, "tier_backups": 66, "bytes_to_host": 3145728,
                  "bytes_to_device": 512, "device": "cpu", "kv_shm": "/hc-kv-1",
                  "kv_bytes": 1048576, "ssm_shm": "/hc-ssm-1", "ssm_bytes": 4096}},
      {"fingerprint": "n|tp0/1|P1",
       "tree": {"instance": 2, "nodes": 0, "leaves": 0, "page_size": 1,
                "host": {"kv_available": 1000, "kv_capacity": 2000, "slot_available": 3,
                         "slot_capacity": 4, "backed_up_tokens": 100,
                         "loaded_back_tokens": 200, "demoted_tokens": 300,
                         "host_evicted_tokens": 400}},
       "stream": {"device": "cuda", "device_ordinal": 1, "kv_bytes": 2147483648,
                  "ssm_bytes": 1024}},
      {"fingerprint": "o|tp0/1|P1",
       "tree": {"instance": 3, "nodes": 1, "leaves": 1, "page_size": 1},
       "stream": {"device": "cpu", "kv_shm": "", "ssm_shm": ""}}
    ]})");
}

bool contains(const std::string& text, const std::string& line) {
  return text.find(line) != std::string::npos;
}

TEST(InspectView, AWholeDocumentSaysEachPartOnItsLine) {
  const std::string t = hc::cli::inspect_text(whole_document());
  for (const char* line : {
           "node: hybridcached 0.1.0 (protocol 2), pid 4242, up 1 h 2 min (since "
           "2026-11-30T21:00:00Z)\n",
           "  settings: socket = /run/hc.sock, the rest defaults (inspect --json lists all 3)\n",
           "sessions: 3\n",
           "invariant violations: 1 (a hybridcache bug; the first: lru: a locked leaf)\n",
           "L3 store: 10 values, 2.0 KiB of 1.0 GiB (reading its index: misses until it has)\n",
           "  its index cannot write to its disk",
           "  backups: 5 (1 failed, 2 skipped while its index loaded), 40 pages written\n",
           "  prefetch reads: 6, 30 pages read; values evicted: 7, found corrupt: 8\n",
           "  Store clients: 9 calls, 11 gets (12 hits), 13 sets\n",
           "instance 1 [m|tp0/1|P64]\n",
           "  tree: 17 nodes, 9 leaves, page size 64\n",
           "  KV tokens: 100 free of 4096 (evictable 50, protected 60)\n",
           "  SSM slots: 4 free of 64 (evictable 5, protected 6)\n",
           "  sessions: 2, live requests: 7, pins: 3 (192 tokens)\n",
           "  served: 21 steps, 22 commands (23 errors), 24 matches (25 KV / 26 resumable "
           "tokens hit of 99 queried), 27 lookups, 28 tokens inserted\n",
           "  evicted: 29 tokens and 30 slots (31 and 32 under pressure); tombstones: 33 by "
           "eviction, 34 by split\n",
           "  L2 pools: KV tokens 41 free of 42, slots 43 free of 44; the tree holds 45 tokens "
           "and 46 slots there\n",
           "  L2 traffic: 47 tokens backed up (48 backups refused), 49 loaded back, 50 demoted, "
           "51 tokens and 58 slots evicted from L2\n",
           "  to L3: 52 writes (53 failed, 54 skipped while its index loaded)\n",
           "  prefetch: 55 in flight (56 tokens of L2 held), 57 completed\n",
           "  device KV pages: 2, with an SSM checkpoint: 1 (events topic kv@m)\n",
           "  stream: 61 snapshots, 62 clears, 63 COWs run; 64 tier loads, 65 demotions, 66 "
           "backups (3.0 MiB to the host, 512 B to the device)\n",
           "  pools: /hc-kv-1 (1.0 MiB), /hc-ssm-1 (4.0 KiB)\n",
           "instance 2 [n|tp0/1|P1]\n",
           "  pools: on cuda:1 (KV 2.0 GiB, SSM 1.0 KiB)\n",
           "instance 3 [o|tp0/1|P1]\n",
           "  pools: none (kvBytesPerToken and ssmSlotBytes 0: the index alone)\n",
       })
    EXPECT_TRUE(contains(t, line)) << "missing: " << line << "\nin:\n" << t;
  // Parts an instance does not have are not printed for it: instance 3 has no host tier.
  EXPECT_EQ(t.find("L2 pools", t.find("instance 3"), 8), std::string::npos);
}

TEST(InspectView, ANodeWithoutAnL3StoreSaysSo) {
  json doc = whole_document();
  doc["host_storage"]["l3"] = nullptr;
  EXPECT_TRUE(
      contains(hc::cli::inspect_text(doc), "L3 store: none (the node runs with --l3 false)\n"));
}

/// Every path to a value of `j` (object members and array elements), in JSON pointer form.
void paths_of(const json& j, const json::json_pointer& at, std::vector<json::json_pointer>& out) {
  if (j.is_object()) {
    for (const auto& [k, v] : j.items()) {
      out.push_back(at / k);
      paths_of(v, at / k, out);
    }
  } else if (j.is_array()) {
    for (std::size_t i = 0; i < j.size(); ++i) {
      out.push_back(at / i);
      paths_of(j[i], at / i, out);
    }
  }
}

TEST(InspectView, NoPartNullMissingOrOfAnotherTypeEndsTheReading) {
  const json whole = whole_document();
  std::vector<json::json_pointer> paths;
  paths_of(whole, json::json_pointer(), paths);
  ASSERT_GT(paths.size(), 130u);  // every field of the document above
  const std::vector<std::pair<const char*, std::function<void(json&)>>> changes = {
      {"null", [](json& v) { v = nullptr; }},
      {"a text", [](json& v) { v = "x"; }},
      {"a negative number", [](json& v) { v = -5; }},
      {"a fraction", [](json& v) { v = 2.5; }},
      {"an array",
       [](json& v) {
         v = json::array({1, "a", nullptr});
       }},
      {"an object",
       [](json& v) {
         v = json::object({{"a", 1}});
       }},
      {"a flag", [](json& v) { v = true; }},
  };
  for (const auto& p : paths)
    for (const auto& [what, change] : changes) {
      json doc = whole;
      change(doc[p]);
      std::string text;
      std::map<std::string, double> figures;
      ASSERT_NO_THROW(text = hc::cli::inspect_text(doc)) << p.to_string() << " as " << what;
      ASSERT_NO_THROW(figures = hc::cli::tier_figures(doc)) << p.to_string() << " as " << what;
      // What the change did not touch is still said: the node's sessions line stands
      // unless it is the part changed.
      if (p.to_string() != "/sessions") {
        EXPECT_TRUE(contains(text, "sessions: 3\n")) << p.to_string();
      }
    }
  // The whole document of another shape: not an object at all, or an empty one.
  for (const json& doc : {json(), json::array({1, 2}), json("text"), json(7), json::object()}) {
    std::string text;
    ASSERT_NO_THROW(text = hc::cli::inspect_text(doc)) << doc.dump();
    EXPECT_TRUE(contains(text, "sessions: 0\n")) << doc.dump();
    EXPECT_TRUE(contains(text, "L3 store: none")) << doc.dump();
    EXPECT_EQ(hc::cli::tier_figures(doc).at("host_tiers"), 0.0);
  }
}

TEST(InspectView, TheTiersFiguresCountTheHostTiersAndTakeTheL3Pages) {
  const auto f = hc::cli::tier_figures(whole_document());
  EXPECT_EQ(f.at("host_tiers"), 2.0);  // instance 3 has none
  EXPECT_EQ(f.at("l3_pages_written"), 40.0);
  EXPECT_EQ(f.at("l3_pages_read"), 30.0);

  json doc = whole_document();
  doc["instances"][0]["tree"] = nullptr;  // its actor did not answer: its tier is not counted
  EXPECT_EQ(hc::cli::tier_figures(doc).at("host_tiers"), 1.0);
}

}  // namespace
