#pragma once
// `hcctl ping | stats | inspect` against a running node.

#include <chrono>
#include <cstddef>
#include <string>

namespace hc::cli {

struct node_options {
  std::string address;  ///< "unix:/path" or host:port
  std::string token;    ///< TCP shared secret ("" over a Unix socket)
  bool json = false;    ///< print one JSON object instead of text
  bool blocks = false;  ///< inspect: also every device KV page (hash, parent, checkpoint)
  /// Most the connect and each call wait for the node's answer (then exit 1 saying so: a
  /// node that accepts but never answers must not hang a health check); 0 = no limit.
  std::chrono::milliseconds timeout{0};
};

/// Exit status: 0 when the node answered, 1 when it could not be reached.
int run_ping(const node_options& o);
int run_stats(const node_options& o);
int run_inspect(const node_options& o);

/// `hcctl top`: a live view of the node's main rates, from `stats` polled every
/// `interval_s` seconds: per-second rates of the counters (steps, commands, matches, hit and
/// inserted tokens, evictions, errors) over the last interval, and the gauges (sessions,
/// pools). On a terminal the view is redrawn in place; otherwise (or with json) one block
/// (one JSON object per line) per refresh. `count` refreshes, 0 = until interrupted.
struct top_options {
  double interval_s = 2.0;
  std::size_t count = 0;
};
int run_top(const node_options& o, const top_options& t);

}  // namespace hc::cli
