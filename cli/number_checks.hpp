#pragma once
// CLI11 checks for the numeric (and true / false) options of hybridcached, hcctl and hcsim.
// CLI11 2.1 converts what it is given as best it can, and some of that is not what anyone
// meant:
// - an unsigned option reads "-5" through strtoull, which wraps it to 2^64 - 5 (a capacity
//   of 16 EiB), and "18446744073709551616" as 2^64 - 1 (--l3-min-free's and
//   --max-request-tokens' "decide for me" value);
// - it reads whole numbers in C's bases: "010" is 8 and "0x10" 16, and "08" is refused as
//   "not in range 1 to 64"; text that is no number at all ("abc", "1.5") is refused by the
//   option's range check as out of range, and an empty value passes;
// - CLI::Range lets "nan" through (every comparison with NaN is false), and a NaN of
//   seconds then became an undefined integer conversion (a flush interval, a timeout) or a
//   refresh that never waited;
// - a true / false option read an empty value and "-1" as false, "2" as true.
// guard_numbers() puts a check in front of every such option of an App, so none is left
// out (tests/number_options_test.sh runs every numeric option of every --help with them).

#include <CLI/CLI.hpp>

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>

namespace hc::cli {

/// Trims the spaces around an option's text (a config file's value may keep them).
inline std::string trimmed(const std::string& text) {
  const auto space = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; };
  std::size_t from = 0, to = text.size();
  while (from < to && space(text[from]))
    ++from;
  while (to > from && space(text[to - 1]))
    --to;
  return text.substr(from, to - from);
}

/// For a floating-point option: refuses text that is not a number ("abc", "", "2s") and a
/// number that is not finite ("nan", "inf", "1e999"). Leaves the text trimmed.
inline std::string finite_number(std::string& text) {
  text = trimmed(text);
  if (text.empty()) return "Value is empty: a number is expected";
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end != '\0') return "Value " + text + " is not a number";
  if (!std::isfinite(v)) return "Value " + text + " is not a finite number";
  return {};
}

/// For an unsigned option: decimal digits — after them, when `units` (a size such as
/// "64GB"), letters the option's own conversion reads as a unit. Refuses a minus sign, a
/// number beyond 2^64 - 1 and anything else that is not a whole number ("abc", "1.5", "",
/// "0x10"); leaves the text trimmed and its digits without leading zeros, so that "010" is
/// ten, not C's octal eight.
inline std::string whole_number(std::string& text, bool units) {
  text = trimmed(text);
  if (text.empty()) return "Value is empty: a whole number is expected";
  if (text[0] == '-')
    return "Value " + text + " is negative: a whole number of at least 0 is expected";
  const auto digit = [](char c) { return c >= '0' && c <= '9'; };
  std::size_t digits = 0;
  while (digits < text.size() && digit(text[digits]))
    ++digits;
  std::size_t rest = digits;
  while (rest < text.size() && text[rest] == ' ')
    ++rest;
  bool letters = rest < text.size();
  for (std::size_t i = rest; i < text.size(); ++i)
    letters = letters && std::isalpha(static_cast<unsigned char>(text[i])) != 0;
  if (digits == 0 || (digits < text.size() && !(units && letters)))
    return "Value " + text + " is not a whole number" +
           (units ? " (with a unit or none: 4096, 512MB, 64GB)" : "");
  std::size_t zeros = 0;
  while (zeros + 1 < digits && text[zeros] == '0')
    ++zeros;
  text.erase(0, zeros);
  errno = 0;
  (void)std::strtoull(text.c_str(), nullptr, 10);
  if (errno == ERANGE) return "Value " + text + " is too large (at most 18446744073709551615)";
  return {};
}

/// For a signed whole-number option: whole_number()'s rules, after an optional minus sign,
/// within the range of a 64-bit signed integer.
inline std::string integer(std::string& text) {
  text = trimmed(text);
  if (text.empty() || text[0] != '-') {
    std::string why = whole_number(text, false);
    if (why.empty() && std::strtoull(text.c_str(), nullptr, 10) > INT64_MAX)
      why = "Value " + text + " is too large (at most 9223372036854775807)";
    return why;
  }
  std::string magnitude = text.substr(1);
  std::string why = whole_number(magnitude, false);
  if (!why.empty()) return "Value " + text + " is not a whole number";
  if (std::strtoull(magnitude.c_str(), nullptr, 10) > std::uint64_t{INT64_MAX} + 1)
    return "Value " + text + " is too small (at least -9223372036854775808)";
  text = "-" + magnitude;
  return {};
}

/// For a true / false option (BOOLEAN, e.g. --l3): true, yes, on, 1 or false, no, off, 0 in
/// any case, left as "true" or "false". CLI11 alone read an empty value and "-1" as false
/// (--l3 "" turned the L3 store off) and "2" as true, and said "Could not convert" for text.
inline std::string boolean(std::string& text) {
  text = trimmed(text);
  std::string lower;
  for (char c : text)
    lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "true" || lower == "yes" || lower == "on" || lower == "1") {
    text = "true";
  } else if (lower == "false" || lower == "no" || lower == "off" || lower == "0") {
    text = "false";
  } else {
    return (text.empty() ? std::string("Value is empty") : "Value " + text + " is not") +
           ": true or false is expected (or yes / no, on / off, 1 / 0)";
  }
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

/// Puts whole_number() in front of every unsigned option of `app` and its subcommands (with
/// units where the help names a SIZE), integer() in front of every signed one,
/// finite_number() in front of every floating-point one and boolean() in front of every
/// true / false one (by the type CLI11 names in the help: UINT, INT, FLOAT, BOOLEAN), before
/// any conversion or unit of theirs. Call once every option is
/// added.
inline void guard_numbers(CLI::App& app) {
  for (CLI::Option* opt : app.get_options()) {
    const std::string type = opt->get_type_name();
    // transform(): in front of the option's own validators and conversions; it changes
    // nothing, and its empty description leaves the help as it was.
    if (type.rfind("UINT", 0) == 0) {
      const bool units = type.find("SIZE") != std::string::npos;
      opt->transform(
          CLI::Validator([units](std::string& text) { return whole_number(text, units); }, ""));
    } else if (type.rfind("BOOLEAN", 0) == 0) {
      opt->transform(CLI::Validator([](std::string& text) { return boolean(text); }, ""));
    } else if (type.rfind("INT", 0) == 0) {
      opt->transform(CLI::Validator([](std::string& text) { return integer(text); }, ""));
    } else if (type.rfind("FLOAT", 0) == 0)
      opt->transform(CLI::Validator([](std::string& text) { return finite_number(text); }, ""));
  }
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; }))
    guard_numbers(*sub);
}

}  // namespace hc::cli
