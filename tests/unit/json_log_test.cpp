// hybridcached --log-format json (actors/daemon/json_log.hpp): a line written through the
// log is one JSON object on one line — time, level, msg in that order — whatever the
// message holds: newlines, quotes, control characters, bytes that are not UTF-8.

#include "actors/daemon/json_log.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "actors/common/log.hpp"

namespace hc::test {
namespace {

struct JsonLog : ::testing::Test {
  void SetUp() override {
    log::set_format(&json_log_line);
    log::set_level(log::level::info);
  }
  void TearDown() override {
    log::set_format(nullptr);
    log::set_level(log::level::info);
  }
  /// What `write` put on stderr.
  template <class Write>
  static std::string logged(Write write) {
    ::testing::internal::CaptureStderr();
    write();
    return ::testing::internal::GetCapturedStderr();
  }
};

TEST_F(JsonLog, ALineIsOneObjectWithTimeLevelAndMessage) {
  const std::string out = logged([] { log::warn("L3 store ready"); });
  ASSERT_FALSE(out.empty());
  EXPECT_EQ(out.find('\n'), out.size() - 1) << out;
  const auto j = nlohmann::ordered_json::parse(out);
  ASSERT_EQ(j.size(), 3u) << out;
  EXPECT_EQ(j.begin().key(), "time");
  EXPECT_EQ(j["level"], "warn");
  EXPECT_EQ(j["msg"], "L3 store ready");
  const std::string time = j["time"];
  EXPECT_EQ(time.size(), std::string("2026-11-30T16:00:52.540Z").size()) << time;
  EXPECT_EQ(time.back(), 'Z');
}

TEST_F(JsonLog, NewlinesQuotesControlsAndBadBytesStayInOneValidLine) {
  const std::string message = "two\nlines \"quoted\" \\ tab\t bell\x07 bad\xff\xfe end";
  const std::string out = logged([&] { log::error(message); });
  EXPECT_EQ(out.find('\n'), out.size() - 1) << "one record, one line: " << out;
  const auto j = nlohmann::json::parse(out);
  EXPECT_EQ(j["level"], "error");
  EXPECT_EQ(j["msg"], "two\nlines \"quoted\" \\ tab\t bell\x07 bad\xEF\xBF\xBD\xEF\xBF\xBD end")
      << "each byte that is not UTF-8 is U+FFFD, the rest as written";
}

TEST_F(JsonLog, LevelsAreNamedAndFilteredAsInText) {
  EXPECT_EQ(nlohmann::json::parse(logged([] { log::info("i"); }))["level"], "info");
  EXPECT_EQ(logged([] { log::debug("d"); }), "") << "below the level: nothing";
  log::set_level(log::level::debug);
  EXPECT_EQ(nlohmann::json::parse(logged([] { log::debug("d"); }))["level"], "debug");
  log::set_format(nullptr);
  const std::string text = logged([] { log::info("back to text"); });
  EXPECT_NE(text.find("Z info  back to text\n"), std::string::npos) << text;
}

}  // namespace
}  // namespace hc::test
