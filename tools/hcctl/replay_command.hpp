#pragma once
// `hcctl [--socket PATH] replay TRACE [--check] [--bench] [--memory] [--quiet] [--json]`:
// trace replay in process, or through a running node when a socket (or TCP address) is
// given; --memory (in process only) reports the index's memory per cached token.

#include <chrono>
#include <string>

namespace hc::cli {

struct replay_options {
  std::string trace_path;
  bool check = false;   ///< compare every op with its `expect`; exit 1 at the first divergence
  bool bench = false;   ///< time every op; print median / p99 per op kind and ops/s
  bool quiet = false;   ///< do not print the per-op result lines
  bool json = false;    ///< --bench: print the timing summary as one JSON object
  int repeat = 1;       ///< --bench: replay this many times (fresh cache each), keep the best
  std::string phase;    ///< --bench: per-op table only for ops of this phase (e.g. measure)
  bool memory = false;  ///< in process: the index's heap per cached token (index_memory.hpp)
  std::string address;  ///< "unix:/path" or host:port of a node; "" = in process
  std::string token;    ///< TCP shared secret
  std::chrono::milliseconds timeout{0};  ///< through a node: most wait per call; 0 = none
};

/// Runs the command; returns the process exit status (0 ok, 1 divergence, 2 bad input).
int run_replay(const replay_options& opts);

}  // namespace hc::cli
