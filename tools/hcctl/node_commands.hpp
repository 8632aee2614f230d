#pragma once
// `hcctl ping | stats | inspect` against a running node.

#include <string>

namespace hc::cli {

struct node_options {
  std::string address;  ///< "unix:/path" or host:port
  std::string token;    ///< TCP shared secret ("" over a Unix socket)
  bool json = false;    ///< print one JSON object instead of text
};

/// Exit status: 0 when the node answered, 1 when it could not be reached.
int run_ping(const node_options& o);
int run_stats(const node_options& o);
int run_inspect(const node_options& o);

}  // namespace hc::cli
