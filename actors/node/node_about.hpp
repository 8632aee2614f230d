#pragma once
// What the embedder says of the process that runs a node (hybridcached: its release, the
// protocol it speaks and every setting), which `inspect` answers under "node" with the
// pid, start time and uptime (inspect_document.hpp). Plain values.

#include <cstdint>
#include <string>
#include <vector>

namespace hc {

/// One setting of the process that runs the node, as `inspect` reports it under "node".
struct node_setting {
  std::string name;    ///< an option's name without its dashes, e.g. "max-sessions"
  std::string value;   ///< what the process runs with, e.g. "1024"; ignored when !set
  bool set = true;     ///< false: an option without a value (e.g. --tcp not given)
  bool given = false;  ///< set on the command line or in a config file (else a default)
};

/// What the embedder says of the process that runs the node: `inspect` answers it under
/// "node" with the process's pid, start time and uptime (hybridcached: its release, the
/// protocol it speaks and every setting). Empty by default: only pid, start and uptime.
struct node_about {
  std::string program;         ///< e.g. "hybridcached"
  std::string version;         ///< e.g. "0.1.0"
  std::uint32_t protocol = 0;  ///< the RPC protocol version; 0 = not said
  std::vector<node_setting> settings;
};

}  // namespace hc
