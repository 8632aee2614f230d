#pragma once
// CLI11 checks for the numeric options of hybridcached, hcctl and hcsim. CLI11 2.1 converts
// what it is given as best it can, and some of that is not what anyone meant:
// - an unsigned option reads "-5" through strtoull, which wraps it to 2^64 - 5 (a capacity
//   of 16 EiB), and "18446744073709551616" as 2^64 - 1 (--l3-min-free's and
//   --max-request-tokens' "decide for me" value);
// - CLI::Range lets "nan" through (every comparison with NaN is false), and a NaN of
//   seconds then became an undefined integer conversion (a flush interval, a timeout) or a
//   refresh that never waited.
// guard_numbers() puts a check in front of every such option of an App, so none is left
// out (tests/number_options_test.sh runs every numeric option of every --help with them).

#include <CLI/CLI.hpp>

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string>

namespace hc::cli {

/// Refuses an option's text that reads as a number but not a finite one ("nan", "inf",
/// "1e999"); leaves other text to the option's own conversion, which names it.
inline std::string finite_number(const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || std::isfinite(v)) return {};
  return "Value " + text + " is not a finite number";
}

/// Refuses, for an unsigned option, a minus sign and a number beyond 2^64 - 1 (units after
/// the digits, as in "64GB", are the option's to read).
inline std::string whole_number(const std::string& text) {
  std::size_t at = 0;
  while (at < text.size() && std::isspace(static_cast<unsigned char>(text[at])) != 0)
    ++at;
  if (at < text.size() && text[at] == '-')
    return "Value " + text + " is negative: a whole number of at least 0 is expected";
  if (at == text.size() || std::isdigit(static_cast<unsigned char>(text[at])) == 0) return {};
  errno = 0;
  (void)std::strtoull(text.c_str() + at, nullptr, 0);
  if (errno == ERANGE) return "Value " + text + " is too large (at most 18446744073709551615)";
  return {};
}

/// For a whole-number option whose 0 means nothing: at least 1. (CLI::PositiveNumber says
/// "not in range 2.22507e-308 to 1.79769e+308" and more digits.)
inline CLI::Validator positive() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        if (end != text.c_str() && !(v > 0)) return "Value " + text + " must be at least 1";
        return {};
      },
      "POSITIVE");
}

/// Puts whole_number() in front of every unsigned option of `app` and its subcommands, and
/// finite_number() in front of every floating-point one (by the type CLI11 names in the
/// help: UINT, FLOAT), before any conversion or unit of theirs. Call once every option is
/// added.
inline void guard_numbers(CLI::App& app) {
  for (CLI::Option* opt : app.get_options()) {
    const std::string type = opt->get_type_name();
    // transform(): in front of the option's own validators and conversions; it changes
    // nothing, and its empty description leaves the help as it was.
    if (type.rfind("UINT", 0) == 0)
      opt->transform(CLI::Validator([](std::string& text) { return whole_number(text); }, ""));
    else if (type.rfind("FLOAT", 0) == 0)
      opt->transform(CLI::Validator([](std::string& text) { return finite_number(text); }, ""));
  }
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; }))
    guard_numbers(*sub);
}

}  // namespace hc::cli
