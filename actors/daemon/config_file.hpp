#pragma once
// hybridcached's --config file: `key = value` lines, each key a long option's name without
// its dashes (deploy/hybridcached.conf.example lists them all). CLI11's own reader (its
// TOML / INI dialect) is not used: it splits a value at spaces and commas (`l3-capacity =
// 64 GB`, `data-dir = /srv/a,b` were refused as "received 2"), cut it at any '#' (`socket =
// /run/a#b` served on /run/a), read a line without '=' as the flag `true`, and refused a
// UTF-8 byte-order mark as an unknown key. This grammar, one value a key:
//
//   - a UTF-8 byte-order mark at the start is skipped; lines end in LF or CR LF;
//   - blank lines and lines whose first non-blank character is '#' or ';' are comments;
//   - `key = value`: the value is the rest of the line, its spaces and tabs around it
//     removed, up to a '#' that follows a space or tab (a comment); a '#' inside a value
//     (`/run/a#b`), spaces (`64 GB`) and commas are part of it;
//   - a value in double or single quotes is what the quotes hold, taken as written
//     (a '#' there is no comment); after the closing quote only a comment may follow.
//
// Refused, naming the line (a ConfigError, exit status 2, before the node does anything):
// a line that is not `key = value`, a `[section]`, a key that names no option or one a
// file cannot set (config, help), a key set twice, an unclosed quote, control characters.
// The values then go through the options' own checks, as on the command line.

#include <CLI/CLI.hpp>

#include <istream>
#include <string>
#include <vector>

namespace hc {

class config_file_format final : public CLI::Config {
 public:
  /// `app` names the options a key may set; it must outlive this format (CLI::App keeps
  /// its formatter, so the app that holds it does).
  explicit config_file_format(const CLI::App& app) : app_(&app) {}

  std::vector<CLI::ConfigItem> from_config(std::istream& input) const override;

  /// Writes the options as this grammar reads them back (CLI11's TOML writer).
  std::string to_config(const CLI::App* app, bool default_also, bool write_description,
                        std::string prefix) const override;

 private:
  const CLI::App* app_;
};

/// Makes `app` read its --config file with config_file_format.
void use_config_file_format(CLI::App& app);

}  // namespace hc
