#pragma once
// hcsim: a worker simulator that drives a running hybridcached over RPC exactly as an
// SGLang scheduler would, with the toy hybrid model's bytes, and verifies every prefix
// hit (device, host and storage) against recomputation.
//
// One worker = one process = one session on the node (several workers with the same
// spec share one cache instance, like DP workers). A worker keeps up to `batch` requests
// in flight: multi-turn conversations over shared system prompts, chunked prefill,
// decode steps with track boundaries, requests that finish on a boundary, random aborts;
// every forward is bracketed by beginForward / endForward and the worker writes the
// forward's bytes into the mapped L1 pools.

#include <cstdint>
#include <string>

#include "actors/common/device_kind.hpp"
#include "actors/common/status.hpp"
#include "actors/common/strategy.hpp"
#include "tools/hcsim/latency_histogram.hpp"

namespace hc::sim {

struct sim_config {
  std::string socket = "/tmp/hybridcache.sock";
  strategy strat = strategy::extra_buffer;
  std::uint64_t ops = 20000;  ///< commands to send, over all workers
  unsigned workers = 1;
  std::uint64_t seed = 1;
  // workload
  unsigned conversations = 16;
  unsigned system_prompts = 2;       ///< conversations share one of these prefixes
  unsigned system_prompt_len = 300;  ///< tokens
  unsigned turn_len = 120;           ///< mean new user tokens per turn
  unsigned output_len = 40;          ///< mean decode steps per request
  unsigned batch = 4;                ///< requests in flight per worker
  unsigned chunked_prefill = 256;    ///< tokens per prefill chunk
  double abort_rate = 0.03;          ///< probability a request is aborted at a step
  unsigned max_context = 3000;       ///< a conversation restarts beyond this length
  // instance (small pools force eviction)
  std::size_t page_size = 1;
  std::size_t kv_tokens = 8192;
  std::size_t slots = 48;
  std::size_t chunk = 64;
  bool mamba2 = false;  ///< Mamba2 chunk-state convention (else FLA)
  std::size_t track_interval = 64;
  bool overlap = true;  ///< the instance's ping-pong size (2 when true)
  /// Experimental: forwards on a thread while the next batch is scheduled and the previous
  /// batch's results are processed (SGLang's overlap event loop). Known to report
  /// mismatches and errors (issue 6 notes). Default: off.
  bool overlap_scheduling = false;
  /// Where the instance's L1 pools live and the forwards run: cpu (shared memory, the toy
  /// model on the worker's threads) or cuda (the node's CUDA pools, the toy model's kernels
  /// on the worker's stream, fenced by the session's events).
  device_kind device = device_kind::cpu;
  std::uint32_t device_ordinal = 0;
  double host_ratio = 0;  ///< > 1: a host tier (HiCache) of this ratio
  /// > 0: the host SSM pool on its own, this many slots (InstanceSpec.hicacheSsmBytes =
  /// slots x the toy model's slot bytes; the +1 slot comes on top). 0: by host_ratio.
  std::size_t host_ssm_slots = 0;
  bool prefetch = false;  ///< storage prefetch before each admission (needs L3)
  /// Probability that a finished turn pins a conversation (Command.pin) for 10-200 of the
  /// worker's steps (at most 2 pins a worker): its own, or half the time another one, whose
  /// prefix may be on the host tier only (the pin loads it back). Every pinned prefix must
  /// stay matchable, whatever the workers evict, until it is unpinned. 0: no pins.
  double pin_rate = 0;
  /// Probability that a finished turn demotes its conversation (Command.demote) at the
  /// worker's next step: off the device now, resumable from the host tier (the next turn
  /// loads it back, and the toy model checks the bytes), evicted without one. Pins must
  /// survive it. 0: no demotes.
  double demote_rate = 0;
  /// Probability that a finished turn waits on a tool: its conversation gets no new turn
  /// for `tool_steps` iterations of the worker's scheduling loop (an agent's tool call).
  /// 0: none.
  double tool_rate = 0;
  std::uint64_t tool_steps = 100;
  /// Demote a conversation when its tool wait begins (what an agent framework that knows
  /// the wait would ask); without it the cache sees only the requests, as SGLang's does.
  bool demote_tools = false;
  std::string model = "hcsim-toy";
  bool json = false;
  bool progress = true;
};

struct sim_report {
  std::uint64_t ops = 0, steps = 0, forwards = 0, requests = 0, finished = 0, aborted = 0;
  std::uint64_t rejected = 0;  ///< not admitted: out of memory at admission (recomputed later)
  /// Decoding requests retracted for lack of KV (released without insert, re-admitted later
  /// with their outputs so far as prompt, as SGLang's retract_decode does).
  std::uint64_t retracted = 0;
  std::uint64_t mismatches = 0, kv_mismatches = 0, state_mismatches = 0;
  std::uint64_t leaks = 0, errors = 0;
  /// Pins made (pin_rate), and pinned prefixes found shorter than pinned before their unpin.
  std::uint64_t pins = 0, pin_losses = 0;
  /// Tokens the pins loaded back from the host tier (res::pin::loaded_tokens).
  std::uint64_t pin_loaded_tokens = 0;
  /// Demotes sent (demote_rate) and their results' device KV: demoted to the host or
  /// evicted at once, demoted after the backups they queued, kept on the device.
  std::uint64_t tool_waits = 0;  ///< finished turns that waited on a tool (tool_rate)
  std::uint64_t demotes = 0, demoted_tokens = 0, demote_evicted_tokens = 0,
                demote_deferred_tokens = 0, demote_kept_tokens = 0;
  std::uint64_t prompt_tokens = 0, reused_tokens = 0, computed_tokens = 0;
  std::uint64_t l1_hit_tokens = 0, l2_hit_tokens = 0, l3_hit_tokens = 0;
  /// Of the matches that succeeded: the tokens their keys looked up (each prompt but its
  /// last token) and the KV tokens they matched — what the node's counters of the
  /// instance must have grown by (check_idle).
  std::uint64_t queried_tokens = 0, matched_kv_tokens = 0;
  double seconds = 0;
  std::string first_error;
  latency_histogram step_latency;  ///< of every step RPC (send to answer)

  void merge(const sim_report& o);
  std::string json() const;
  std::string text() const;
  static bool from_json(const std::string& s, sim_report& out);
};

/// The settings of `cfg` the node would refuse at open (its own `validate` of the instance
/// the workers open, default limits), or SGLang would refuse for the model (the Mamba2
/// backend's rules on the model's chunk, which the instance does not carry), naming the
/// rule; ok otherwise.
status check_instance(const sim_config& cfg);

/// Runs worker `index` of `cfg` against the node (blocking). Returns its counts.
sim_report run_worker(const sim_config& cfg, unsigned index);

/// The node's served counters of the instance `cfg` opens (inspect: its tree.served), which
/// the run's matches add to.
struct served_counts {
  std::uint64_t instance = 0;  ///< the instance's id (its PoolInfo.instanceId)
  std::uint64_t queried_tokens = 0, matched_kv_tokens = 0;
};

/// Before any worker: the instance's counters (opening it if the node has none yet). Adds
/// an error to `r` when the node cannot say.
served_counts served_before(const sim_config& cfg, sim_report& r);

/// After every worker closed: the instance's full sanity check (nothing locked, every
/// id accounted for), and its served counters grown by exactly what the workers' matches
/// looked up and matched since `before`. Adds leaks / errors to `r`.
void check_idle(const sim_config& cfg, const served_counts& before, sim_report& r);

}  // namespace hc::sim
