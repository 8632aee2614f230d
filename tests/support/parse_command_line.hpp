#pragma once
// Tests of command-line parsing: runs CLI11's parse of `app` on `args` (the program's name
// is added in front) and returns the ParseError's message, or "" when the parse went
// through.

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace hc::test {

inline std::string parse_args(CLI::App& app, std::vector<std::string> args) {
  args.insert(args.begin(), "test");
  std::vector<char*> argv;
  for (std::string& a : args)
    argv.push_back(a.data());
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::ParseError& e) {
    return e.what();
  }
  return "";
}

}  // namespace hc::test
