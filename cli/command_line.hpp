#pragma once
// Parsing a command line with CLI11 the way hybridcached, hcctl and hcsim share: a command
// line a tool refuses exits with status 2, the usage error a shell, a supervisor or a
// script expects (CLI11_PARSE exits with CLI11's own codes: 105 for a bad value, 109 for
// an extra argument, 114 for a repeated one); --help still exits 0.

#include <CLI/CLI.hpp>

#include <iostream>
#include <string>
#include <string_view>

namespace hc::cli {

/// Exit status of a command line the tools refuse.
inline constexpr int usage_error = 2;

/// Parses argv into `app`. Returns -1 when the tool is to go on, or the status to exit with
/// after CLI11 printed the help (0) or what it refused (usage_error).
inline int parse_command_line(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ConfigError& e) {  // a --config key that names no option
    (void)app.exit(e);
    std::cerr << "(a --config file holds `key = value` lines, each key a long option's name "
                 "without its dashes, e.g. l3-capacity = 64GB; no sections)\n";
    return usage_error;
  } catch (const CLI::ArgumentMismatch& e) {
    // CLI11 says "--x: At Most 1 required but received 2" for a flag given twice.
    const std::string what = e.what();
    const std::string::size_type at = what.find(": At Most 1 required but received ");
    if (at == std::string::npos) return app.exit(e) == 0 ? 0 : usage_error;
    std::cerr << what.substr(0, at) << " is given "
              << what.substr(at + std::string_view(": At Most 1 required but received ").size())
              << " times: give it once\nRun with --help for more information.\n";
    return usage_error;
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : usage_error;
  }
  return -1;
}

}  // namespace hc::cli
