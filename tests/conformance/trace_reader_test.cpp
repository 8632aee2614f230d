// The trace reader refuses numbers it cannot hold (spec/trace-format.md): a float, a negative
// or an out-of-range value where an integer is expected gives a parse error naming the line and
// the field, never a silent cast (nlohmann's get<T>() casts; a float out of range is undefined
// behaviour, found by fuzz_trace_reader).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "tools/replay/trace.hpp"

namespace hc::test {
namespace {

const char* const kHeader =
    R"({"op":"config","format":"sglang-mamba-trace","version":1,"page_size":PAGE,)"
    R"("strategy":"no_buffer","kv_pool_tokens":64,"mamba_pool_slots":4,"req_pool_rows":2,)"
    R"("tokens":{"generator":"splitmix64-v1","seed":1,"vocab":100,"sys_len":4,"sys_groups":1,)"
    R"("conv_lengths":[8]}})";

std::string header(const std::string& page_size) {
  std::string h = kHeader;
  return h.replace(h.find("PAGE"), 4, page_size);
}

class TraceReader : public ::testing::Test {
 protected:
  const std::string path_ = ::testing::TempDir() + "hc-trace-reader-" + std::to_string(::getpid());
  void TearDown() override { std::remove(path_.c_str()); }

  result<replay::trace> read(const std::string& text) {
    std::ofstream(path_) << text;
    return replay::read_trace(path_);
  }
};

TEST_F(TraceReader, AcceptsAWellFormedTrace) {
  auto t = read(header("1") + "\n" + R"({"op":"match","req":0,"conv":0,"input_len":3})" + "\n");
  ASSERT_TRUE(t.ok()) << t.err().message;
  EXPECT_EQ(t->config.page_size, 1u);
  ASSERT_EQ(t->ops.size(), 1u);
  EXPECT_EQ(t->ops[0].input_len, 3u);
}

// "-" reads standard input (`zcat trace.jsonl.gz | hcctl replay -`), whose errors name it
// <stdin>; a file that cannot be opened is refused saying why.
TEST_F(TraceReader, ADashReadsStandardInputAndAnOpenFailureSaysWhy) {
  std::ofstream(path_) << header("1") << "\n"
                       << R"({"op":"match","req":0,"conv":0,"input_len":3})"
                       << "\n{\"op\":\n";
  const int saved = ::dup(STDIN_FILENO);
  ASSERT_GE(saved, 0);
  FILE* in = std::fopen(path_.c_str(), "rb");
  ASSERT_NE(in, nullptr);
  ASSERT_EQ(::dup2(::fileno(in), STDIN_FILENO), STDIN_FILENO);
  auto t = replay::read_trace("-");
  ::dup2(saved, STDIN_FILENO);
  ::close(saved);
  std::fclose(in);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.err().message, "<stdin>:3: not a JSON object");

  auto missing = replay::read_trace(path_ + "-no-such-file");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.err().message,
            "cannot open trace '" + path_ + "-no-such-file': No such file or directory");
}

// A NUL byte is not text: the line that holds one is refused, naming the line (the
// reader once read lines as C strings, so everything after a NUL up to the line's end was
// dropped silently and the rest of the line joined the next).
TEST_F(TraceReader, RefusesALineWithANulByteNamingIt) {
  using namespace std::string_literals;
  const std::string op = R"({"op":"match","req":0,"conv":0,"input_len":3})";
  for (const std::string& text : {"\0garbage\n"s + header("1") + "\n" + op + "\n",
                                  header("1") + "\n" + op + "\0"s + "\n" + op + "\n",
                                  header("1") + "\n" + op + "\n" + "{\"op\"\0"s + "\n"}) {
    auto t = read(text);
    ASSERT_FALSE(t.ok()) << "accepted a trace with a NUL byte";
    EXPECT_EQ(t.err().code, errc::parse_error);
    EXPECT_NE(t.err().message.find("NUL"), std::string::npos) << t.err().message;
  }
  auto first = read("\0garbage\n"s + header("1") + "\n");
  ASSERT_FALSE(first.ok());
  EXPECT_NE(first.err().message.find(":1: "), std::string::npos) << first.err().message;
  auto third = read(header("1") + "\n" + op + "\n" + "{\"op\"\0"s + "\n");
  ASSERT_FALSE(third.ok());
  EXPECT_NE(third.err().message.find(":3: "), std::string::npos) << third.err().message;
}

// A last line without its newline is read like the others.
TEST_F(TraceReader, ReadsALastLineWithoutItsNewline) {
  auto t = read(header("1") + "\n" + R"({"op":"match","req":0,"conv":0,"input_len":3})");
  ASSERT_TRUE(t.ok()) << t.err().message;
  ASSERT_EQ(t->ops.size(), 1u);
}

// Errors and ops name the file's line, blank lines counted (an editor's line number):
// the reader once counted only the lines that are not blank. A last line cut short (a copy
// that did not finish) says so.
TEST_F(TraceReader, LineNumbersAreTheFilesAndACutLastLineIsNamedAsSuch) {
  const std::string op = R"({"op":"match","req":0,"conv":0,"input_len":3})";
  const std::string blank_first = "\n";
  auto t = read(blank_first + header("1") + "\n\n\n" + op + "\n  \n" + op + "\n");
  ASSERT_TRUE(t.ok()) << t.err().message;
  ASSERT_EQ(t->ops.size(), 2u);
  EXPECT_EQ(t->ops[0].line, 5u);
  EXPECT_EQ(t->ops[1].line, 7u);
  auto bad = read(header("1") + "\n\n" + op + "\n\nnot json\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.err().message.find(":5: not a JSON object"), std::string::npos)
      << bad.err().message;
  EXPECT_EQ(bad.err().message.find("cut short"), std::string::npos) << bad.err().message;
  auto cut = read(header("1") + "\n" + op + "\n" + op.substr(0, 20));
  ASSERT_FALSE(cut.ok());
  EXPECT_NE(cut.err().message.find(":3: not a JSON object (the file ends inside this line: cut "
                                   "short?)"),
            std::string::npos)
      << cut.err().message;
}

TEST_F(TraceReader, RefusesAFloatWhereAnIntegerIsExpected) {
  for (const char* bad : {"1e300", "1.5", "-1", "18446744073709551616"}) {
    auto t = read(header(bad) + "\n");
    ASSERT_FALSE(t.ok()) << bad;
    EXPECT_EQ(t.err().code, errc::parse_error) << bad;
    EXPECT_NE(t.err().message.find(":1: "), std::string::npos) << t.err().message;
    EXPECT_NE(t.err().message.find("page_size"), std::string::npos) << t.err().message;
  }
}

TEST_F(TraceReader, RefusesOutOfRangeOpFieldsNamingTheLine) {
  auto t = read(header("1") + "\n" + R"({"op":"match","req":-3,"conv":0,"input_len":3})" + "\n");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.err().message.find(":2: "), std::string::npos) << t.err().message;
  EXPECT_NE(t.err().message.find("'req' must not be negative"), std::string::npos)
      << t.err().message;
  t = read(header("1") + "\n" + R"({"op":"match","req":0,"conv":1e40,"input_len":3})" + "\n");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.err().message.find("'conv' must be an integer"), std::string::npos)
      << t.err().message;
  // A conversation the header does not list (conv 10^12 aborted the replay).
  for (const std::string conv : {"1", "1000000000000"}) {
    t = read(header("1") + "\n" + R"({"op":"match","req":0,"conv":)" + conv + R"(,"input_len":3})" +
             "\n");
    ASSERT_FALSE(t.ok()) << conv;
    EXPECT_NE(t.err().message.find(":2: conv " + conv + ": the header lists 1 conversations"),
              std::string::npos)
        << t.err().message;
  }
}

// A header whose cache SGLang would not build, or that names no strategy the cache has, is
// refused on line 1 (a typo must not replay silently as another strategy), as a node
// refuses such an instance.
TEST_F(TraceReader, RefusesAHeaderWhoseCacheCannotRunNamingWhy) {
  auto with = [](std::string h, const std::string& from, const std::string& to) {
    const auto at = h.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return h.replace(at, from.size(), to) + "\n";
  };
  const std::string h1 = header("1");
  const struct {
    std::string text, says;
  } cases[] = {
      {with(h1, R"("no_buffer")", R"("extra_bufer")"), "strategy 'extra_bufer' is not"},
      {with(h1, R"("strategy")", R"("ping_pong_size":3,"strategy")"), "ping_pong_size must be 1"},
      {with(h1, R"("req_pool_rows":2)", R"("req_pool_rows":0)"), "requestRows"},
      {with(h1, R"("mamba_pool_slots":4)", R"("mamba_pool_slots":0)"), "ssmSlots"},
      // page 64 without the extra buffer: SGLang asserts page 1 for no_buffer
      {header("64") + "\n", "strategy no_buffer needs pageSize 1"},
      {with(with(header("64"), R"("no_buffer")", R"("extra_buffer")"), R"("strategy")",
            R"("mamba_cache_chunk_size":100,"strategy")"),
       "chunkSize (100)"},
      // made whole when an op names it: 10^12 tokens aborted the replay (std::bad_alloc)
      {with(h1, R"("conv_lengths":[8])", R"("conv_lengths":[8,1000000000000])"),
       "conv_lengths[1] = 1000000000000 is longer than the KV pool (64 tokens)"},
      {with(h1, R"("conv_lengths":[8])", R"("conv_lengths":[65])"),
       "conv_lengths[0] = 65 is longer than the KV pool"},
      {with(h1, R"("vocab":100)", R"("vocab":2147483648)"),
       "vocab 2147483648 is more than 32-bit token ids can hold"},
  };
  for (const auto& c : cases) {
    auto t = read(c.text);
    ASSERT_FALSE(t.ok()) << c.says;
    EXPECT_EQ(t.err().code, errc::parse_error) << t.err().message;
    EXPECT_NE(t.err().message.find(":1: "), std::string::npos) << t.err().message;
    EXPECT_NE(t.err().message.find(c.says), std::string::npos) << t.err().message;
  }
  // The same header with the extra buffer at page 64 is a cache that runs.
  auto ok = read(with(header("64"), R"("no_buffer")", R"("extra_buffer")"));
  EXPECT_TRUE(ok.ok()) << ok.err().message;
}

TEST_F(TraceReader, ASelfTestWithAFloatIsAnErrorNotACrash) {
  std::string h = header("1");
  h.insert(h.size() - 1, R"(,"self_test":{"sys_stream_0_first4":[6.8e300]})");
  auto t = read(h + "\n");
  ASSERT_TRUE(t.ok()) << t.err().message;
  replay::token_generator gen(t->config);
  auto s = gen.self_test();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.err().message.find("must be an integer"), std::string::npos) << s.err().message;
}

}  // namespace
}  // namespace hc::test
