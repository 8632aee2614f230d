#pragma once
// hybridcached --check-config: what the node would start with, checked without starting it.
//
// The checks are those run() makes before it serves that change nothing: no directory is
// created, no socket or port bound, no store opened. So a node already running on the same
// settings (the case of a config edited before a restart) does not fail them, and a file
// left by a check cannot be mistaken for the node's. What only the start can tell — a port
// another process holds, an L3 store of another format — still fails the start itself.

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "actors/daemon/daemon_options.hpp"

namespace hc {

/// Why `o` cannot start a node, one line each naming its option: a --socket (or an ipc://
/// event endpoint) whose directory is missing or not writable, whose path is too long or
/// holds a file that is not a socket; a --token-file that cannot be read or holds a secret
/// under 16 characters; a --data-dir that is not a writable directory and cannot be created
/// (its nearest existing ancestor is not a writable directory). Empty: nothing found.
std::vector<std::string> start_problems(const daemon_options& o);

/// A setting whose default is decided at start (--max-request-tokens, --l3-index-memory,
/// --l3-min-free): its option's name without dashes, and what it comes to here.
struct decided_default {
  std::string name;
  std::string value;  ///< what it comes to here, e.g. "4294967296"
  std::string rule;   ///< how, e.g. "a quarter of the memory this node may use"
};

/// One setting of a parsed `app`: what the node runs with, and where that came from.
struct setting {
  enum class origin { given, default_value, decided_at_start, unset };
  std::string name;   ///< the option's name without dashes, e.g. "max-sessions"
  std::string value;  ///< as given (several values joined by spaces), its default or what a
                      ///< default decided at start comes to here; "" when unset
  origin from = origin::default_value;
  std::string rule;  ///< decided_at_start: how (decided_default::rule)
};

/// Every option of a parsed `app` a config file may set, in --help's order (not --help,
/// --version, --check-config nor --config). A boolean's value is "true" or "false", however
/// it was spelt.
std::vector<setting> app_settings(const CLI::App& app, const std::vector<decided_default>& decided);

/// The settings of a parsed `app` as a --config file that reads back to the same settings:
/// every option a config file may set, `key = value`, the value as given (command line or
/// config file) or its default. An option without a value (--tcp unset) and one whose
/// default is decided at start are comment lines, the latter with what it comes to here.
std::string effective_config(const CLI::App& app, const std::vector<decided_default>& decided);

/// The settings of a parsed `app` that were given (command line or config file) as
/// "key = value" joined by ", " in --help's order ("" when none): the start's log line,
/// which says what a node runs with beyond its defaults.
std::string given_settings(const CLI::App& app);

}  // namespace hc
