#pragma once
// CLI11 checks for the floating-point options of hybridcached, hcctl and hcsim. CLI::Range
// alone lets "nan" through: every comparison with NaN is false, so NaN is "in" every
// range, and a NaN of seconds then becomes an undefined integer conversion (a flush
// interval, a timeout) or a refresh that never waits.

#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdlib>
#include <string>

namespace hc::cli {

/// Refuses an option's text that reads as a number but not a finite one ("nan", "inf",
/// "1e999"); leaves other text to the option's own conversion, which names it.
inline CLI::Validator finite_number() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        if (end == text.c_str() || std::isfinite(v)) return {};
        return "Value " + text + " is not a finite number";
      },
      "FINITE");
}

/// CLI::Range(lo, hi) for a floating-point option, with NaN and infinities refused; the
/// help shows Range's "FLOAT in [lo - hi]".
inline CLI::Validator finite_range(double lo, double hi) {
  const CLI::Range range(lo, hi);
  const CLI::Validator finite = finite_number();
  return CLI::Validator(
      [range, finite](std::string& text) {
        std::string why = finite(text);
        return why.empty() ? range(text) : why;
      },
      range.get_description());
}

}  // namespace hc::cli
