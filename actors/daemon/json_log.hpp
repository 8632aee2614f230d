#pragma once
// hybridcached --log-format json: each log line one JSON object, for log collectors that
// parse fields (Loki, Vector, Fluent Bit, Elasticsearch) instead of matching text:
//
//   {"time":"2026-11-30T16:00:00.123Z","level":"info","msg":"hybridcached ready (...)"}
//
// A message's newlines, quotes and control characters are escaped, so one line is one
// record; bytes that are not UTF-8 (a path, a library's message) become U+FFFD instead of
// making the line invalid JSON.

#include <string>
#include <string_view>

#include "actors/common/log.hpp"

namespace hc {

/// One log line as JSON, with its newline (a log::line_format).
std::string json_log_line(log::level l, std::string_view time, std::string_view message);

}  // namespace hc
