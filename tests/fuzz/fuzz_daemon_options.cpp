// Fuzz target 5: hybridcached's command line and config file (actors/daemon/
// daemon_options.hpp), exactly as main() parses them: a config file (`--config FILE`, the
// first part of the input) and flags (the rest, NUL-separated). Any input must end in
// options that pass or a CLI11 parse error / an invalid_config message — never another
// exception or a crash, nor a number of seconds that is not finite.
#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "actors/daemon/daemon_options.hpp"
#include "tests/fuzz/fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  hc::fuzz::fuzz_input in(data, size);
  const std::string& config = hc::fuzz::scratch_file("config", ".conf");
  const bool with_config = in.flag();
  if (with_config) {
    const std::string text = in.text(4096);
    std::FILE* f = std::fopen(config.c_str(), "wb");
    if (!f) hc::fuzz::fail("cannot write " + config);
    std::fwrite(text.data(), 1, text.size(), f);
    std::fclose(f);
  }
  std::vector<std::string> args{"hybridcached"};
  if (with_config) {
    args.push_back("--config");
    args.push_back(config);
  }
  std::string arg;
  for (auto b : in.rest()) {
    if (b == 0) {
      args.push_back(arg);
      arg.clear();
    } else {
      arg.push_back(static_cast<char>(b));
    }
  }
  if (!arg.empty()) args.push_back(arg);
  std::vector<char*> argv;
  for (std::string& a : args)
    argv.push_back(a.data());

  hc::daemon_options o;
  CLI::App app{"hybridcached"};
  hc::add_daemon_flags(app, o);
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::ParseError& e) {
    // What main() does (cli/command_line.hpp): prints the message (or the help) and exits.
    if (e.get_exit_code() != 0 && std::string(e.what()).empty())
      hc::fuzz::fail("a parse error without a message");
    return 0;
  }
  // A number of seconds that is not finite is cast to an integer later (undefined): the
  // parse must have refused it (CLI::Range alone lets NaN through).
  if (!std::isfinite(o.l3_flush_seconds)) hc::fuzz::fail("--l3-flush-seconds is not finite");
  if (hc::status s = hc::check_daemon_options(o); !s && s.err().message.empty())
    hc::fuzz::fail("a refused option without a message");
  return 0;
}
