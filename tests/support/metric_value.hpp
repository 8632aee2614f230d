#pragma once
// Reading one series out of prometheus_metrics' text exposition.

#include <string>

#include "monitoring/prometheus_metrics.hpp"

namespace hc::test {

/// The value of one series in Prometheus text (`name{labels}` as exposed), -1 if absent.
inline double metric_value(const prometheus_metrics& m, const std::string& series) {
  const std::string text = m.text();
  const auto at = text.find("\n" + series + " ");
  return at == std::string::npos ? -1 : std::stod(text.substr(at + series.size() + 2));
}

}  // namespace hc::test
