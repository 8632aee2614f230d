// hybridcached's --config grammar (actors/daemon/config_file.hpp), parsed as main() parses
// it (add_daemon_flags): what a line sets, and what is refused naming its line — in
// particular what CLI11's own reader got wrong silently (a value cut at '#') or with a
// message that did not say why (a value with spaces or commas, a byte-order mark).
#include <gtest/gtest.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "actors/daemon/daemon_options.hpp"
#include "tests/support/parse_command_line.hpp"

namespace hc::test {
namespace {

namespace fs = std::filesystem;

class DaemonConfigFile : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = fs::temp_directory_path() /
            ("hc_config_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".conf");
  }
  void TearDown() override { fs::remove(path_); }

  // Writes `text` as the config file and parses `--config FILE extra...`; returns the
  // ConfigError / ParseError message, or "" when the parse went through.
  std::string parse(const std::string& text, std::vector<std::string> extra = {}) {
    {
      std::ofstream f(path_, std::ios::binary);
      f << text;
    }
    options = daemon_options{};
    CLI::App app{"hybridcached"};
    add_daemon_flags(app, options);
    std::vector<std::string> args{"--config", path_.string()};
    args.insert(args.end(), extra.begin(), extra.end());
    return parse_args(app, args);
  }

  daemon_options options;

 private:
  fs::path path_;
};

TEST_F(DaemonConfigFile, ValuesAreTakenToTheEndOfTheLineOrAComment) {
  ASSERT_EQ(parse("# a comment\n"
                  "; another\n"
                  "\n"
                  "   threads = 3   # scheduler threads\n"
                  "socket = /run/hc/a#b\n"
                  "data-dir = /srv/my cache,2\n"
                  "l3-capacity = 64 GB\n"
                  "metrics=off\n"
                  "log-level = debug#no comment without a space before it\n"),
            "--log-level: debug#no comment without a space before it not in "
            "{error,warn,warning,info,debug}")
      << "a '#' inside a value is part of it";
  ASSERT_EQ(parse("   threads = 3   # scheduler threads\n"
                  "socket = /run/hc/a#b\n"
                  "data-dir = /srv/my cache,2\n"
                  "l3-capacity = 64 GB\n"
                  "metrics=off\n"),
            "");
  EXPECT_EQ(options.threads, 3u);
  EXPECT_EQ(options.socket, "/run/hc/a#b");  // CLI11's reader served on /run/hc/a
  EXPECT_EQ(options.data_dir, "/srv/my cache,2");
  EXPECT_EQ(options.l3_capacity, std::uint64_t{64} << 30);
  EXPECT_EQ(options.metrics, "off");
}

TEST_F(DaemonConfigFile, QuotedValuesAreTakenAsWritten) {
  ASSERT_EQ(parse("socket = \"/run/hc/a # b\"  # the socket\n"
                  "data-dir = '  /srv/x  '\n"
                  "tcp = \"\"\n"),
            "");
  EXPECT_EQ(options.socket, "/run/hc/a # b");
  EXPECT_EQ(options.data_dir, "  /srv/x  ");
  EXPECT_EQ(options.tcp, "");
}

TEST_F(DaemonConfigFile, AByteOrderMarkAndCrLfLineEndsAreText) {
  ASSERT_EQ(parse("\xEF\xBB\xBFthreads = 4\r\nsocket = /run/hc.sock\r\nl3 = false\r\n"), "");
  EXPECT_EQ(options.threads, 4u);
  EXPECT_EQ(options.socket, "/run/hc.sock");
  EXPECT_FALSE(options.l3);
}

TEST_F(DaemonConfigFile, CommandLineFlagsOverrideTheFile) {
  ASSERT_EQ(parse("threads = 4\nsocket = /run/a.sock\n", {"--threads", "5"}), "");
  EXPECT_EQ(options.threads, 5u);
  EXPECT_EQ(options.socket, "/run/a.sock");
}

TEST_F(DaemonConfigFile, WhatIsNotKeyEqualsValueIsRefusedNamingItsLine) {
  for (const auto& [text, message] : std::vector<std::pair<std::string, std::string>>{
           {"threads = 2\nl3\n", "--config line 2: 'l3' is not key = value"},
           {"[node]\nthreads = 2\n",
            "--config line 1: '[node]': a config file has no sections, only key = value lines"},
           {"threads = 2\n= 4\n", "--config line 2: no key before '='"},
           {"threadz = 2\n",
            "--config line 1: 'threadz' is not an option (keys are the long options without "
            "their dashes, as --help lists them)"},
           {"--threads = 2\n", "--config line 1: '--threads': write the key without its dashes"},
           {"config = other.conf\n", "--config line 1: 'config' cannot be set in a config file"},
           {"help = true\n", "--config line 1: 'help' cannot be set in a config file"},
           {"threads = 2\n\nthreads = 3\n",
            "--config line 3: 'threads' is set again (first on line 1)"},
           {"socket = \"/run/a\n",
            "--config line 1: the value's opening \" is not closed on its line"},
           {"socket = \"/run/a\" /run/b\n",
            "--config line 1: '/run/b' follows the quoted value (only a # comment may)"},
           {std::string("socket = /run/a\0b\n", 18),
            "--config line 1: control character 0x00 (a config file is text)"},
           {"threads = 2\x1b[0m\n",
            "--config line 1: control character 0x1b (a config file is text)"},
       }) {
    EXPECT_EQ(parse(text), message) << text;
  }
}

TEST_F(DaemonConfigFile, ValuesGoThroughTheOptionsOwnChecks) {
  EXPECT_EQ(parse("threads = 0\n"), "--threads: Value 0 not in range 1 to 64");
  EXPECT_EQ(parse("l3-flush-seconds = nan\n"),
            "--l3-flush-seconds: Value nan is not a finite number");
  EXPECT_EQ(parse("l3 = maybe\n"),
            "--l3: Value maybe is not: true or false is expected (or yes / no, on / off, 1 / 0)");
  ASSERT_EQ(parse("threads = 010\nl3 = off\n"), "");
  EXPECT_EQ(options.threads, 10u);  // decimal, not C's octal eight
  EXPECT_FALSE(options.l3);
}

// The --config path itself: CLI11 alone read an empty one as no file (the node ran on its
// defaults) and said only "was not readable (missing?)" of a directory.
TEST(DaemonConfigPath, AnEmptyPathAMissingFileAndADirectoryAreRefusedSayingWhich) {
  const auto parse = [](std::string path) -> std::string {
    daemon_options options;
    CLI::App app{"hybridcached"};
    add_daemon_flags(app, options);
    return parse_args(app, {"--config", path});
  };
  const std::string dir = fs::temp_directory_path().string();
  EXPECT_EQ(parse(""), "--config: Value is empty: the path of a config file is expected");
  EXPECT_EQ(parse(dir), "--config: " + dir + " is a directory, not a config file");
  EXPECT_EQ(parse(dir + "/hc-no-such.conf"), "--config: no file " + dir + "/hc-no-such.conf");
}

TEST(DaemonOptions, AnEmptyDataDirIsRefusedUnlessThereIsNoL3) {
  daemon_options o;
  o.data_dir.clear();
  const status s = check_daemon_options(o);
  EXPECT_EQ(s.err().message,
            "--data-dir is empty: give the directory of the node's L3 store, or --l3 false");
  o.l3 = false;
  EXPECT_TRUE(check_daemon_options(o).ok());
}

TEST(DaemonOptions, TheL3IndexTakesASixteenthOfASmallContainer) {
  constexpr std::uint64_t gib = std::uint64_t{1} << 30;
  EXPECT_EQ(l3_index_memory_for(0), gib) << "unknown memory: the fixed default";
  EXPECT_EQ(l3_index_memory_for(64 * gib), gib);
  EXPECT_EQ(l3_index_memory_for(16 * gib), gib);
  EXPECT_EQ(l3_index_memory_for(4 * gib), gib / 4);
  EXPECT_EQ(l3_index_memory_for(gib), gib / 16);
  daemon_options o;
  EXPECT_EQ(o.l3_index_memory, l3_index_memory_auto) << "decided at start unless given";
}

TEST(DaemonOptions, AFlushIntervalUnderAMillisecondStaysTimed) {
  // 0 turns the timed flushes off; a positive --l3-flush-seconds never becomes it.
  EXPECT_EQ(l3_flush_interval(0.0), std::chrono::milliseconds(0));
  EXPECT_EQ(l3_flush_interval(0.0005), std::chrono::milliseconds(1));
  EXPECT_EQ(l3_flush_interval(0.001), std::chrono::milliseconds(1));
  EXPECT_EQ(l3_flush_interval(2.5), std::chrono::milliseconds(2500));
  EXPECT_EQ(l3_flush_interval(86400), std::chrono::milliseconds(86400000));
}

}  // namespace
}  // namespace hc::test
