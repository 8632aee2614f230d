// The checks every numeric and true / false option of hybridcached, hcctl and hcsim goes
// through (cli/number_checks.hpp): what a whole-number or floating-point option takes, what it
// refuses with which message, and that a parse through CLI11 reads the digits in decimal
// ("010" is ten, where CLI11 alone reads C's octal eight and refuses "08").
#include <gtest/gtest.h>

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "cli/number_checks.hpp"
#include "tests/support/parse_command_line.hpp"

namespace hc::test {
namespace {

// The message whole_number() gives for `text` ("" = taken), and the text it leaves.
std::pair<std::string, std::string> whole(std::string text, bool units = false) {
  std::string why = cli::whole_number(text, units);
  return {why, text};
}

TEST(NumberChecks, WholeNumbersAreDecimalDigitsWithoutLeadingZeros) {
  EXPECT_EQ(whole("0"), std::make_pair(std::string{}, std::string{"0"}));
  EXPECT_EQ(whole("000"), std::make_pair(std::string{}, std::string{"0"}));
  EXPECT_EQ(whole("010"), std::make_pair(std::string{}, std::string{"10"}));
  EXPECT_EQ(whole("08"), std::make_pair(std::string{}, std::string{"8"}));
  EXPECT_EQ(whole(" 7 "), std::make_pair(std::string{}, std::string{"7"}));
  EXPECT_EQ(whole("18446744073709551615"),
            std::make_pair(std::string{}, std::string{"18446744073709551615"}));
  EXPECT_EQ(whole("0018446744073709551615"),
            std::make_pair(std::string{}, std::string{"18446744073709551615"}));
}

TEST(NumberChecks, WholeNumbersRefuseWhatIsNotOne) {
  for (const char* text : {"abc", "1.5", "0x10", "+5", "5 6", "2s", "64GB", "1e3", "٣"})
    EXPECT_EQ(whole(text).first, std::string("Value ") + text + " is not a whole number") << text;
  EXPECT_EQ(whole("").first, "Value is empty: a whole number is expected");
  EXPECT_EQ(whole("  ").first, "Value is empty: a whole number is expected");
  EXPECT_EQ(whole("-1").first, "Value -1 is negative: a whole number of at least 0 is expected");
  EXPECT_EQ(whole("18446744073709551616").first,
            "Value 18446744073709551616 is too large (at most 18446744073709551615)");
}

TEST(NumberChecks, SizesTakeAUnitAfterTheirDigits) {
  EXPECT_EQ(whole("64GB", true), std::make_pair(std::string{}, std::string{"64GB"}));
  EXPECT_EQ(whole("064 GB", true), std::make_pair(std::string{}, std::string{"64 GB"}));
  EXPECT_EQ(whole("4096", true), std::make_pair(std::string{}, std::string{"4096"}));
  const std::string hint = " is not a whole number (with a unit or none: 4096, 512MB, 64GB)";
  for (const char* text : {"1.5GB", "GB", "0x10", "64G B", "64GB2"})
    EXPECT_EQ(whole(text, true).first, std::string("Value ") + text + hint) << text;
  EXPECT_EQ(whole("", true).first, "Value is empty: a whole number is expected");
}

TEST(NumberChecks, SignedWholeNumbersTakeAMinusSign) {
  const auto integer = [](std::string text) {
    std::string why = cli::integer(text);
    return std::make_pair(why, text);
  };
  EXPECT_EQ(integer("010"), std::make_pair(std::string{}, std::string{"10"}));
  EXPECT_EQ(integer("-010"), std::make_pair(std::string{}, std::string{"-10"}));
  EXPECT_EQ(integer("-0"), std::make_pair(std::string{}, std::string{"-0"}));
  EXPECT_EQ(integer("-9223372036854775808").first, "");
  EXPECT_EQ(integer("9223372036854775807").first, "");
  EXPECT_EQ(integer("9223372036854775808").first,
            "Value 9223372036854775808 is too large (at most 9223372036854775807)");
  EXPECT_EQ(integer("-9223372036854775809").first,
            "Value -9223372036854775809 is too small (at least -9223372036854775808)");
  for (const char* text : {"abc", "-", "--1", "-abc", "1.5", "-0x10"})
    EXPECT_EQ(integer(text).first, std::string("Value ") + text + " is not a whole number") << text;
  EXPECT_EQ(integer("").first, "Value is empty: a whole number is expected");
}

TEST(NumberChecks, TrueOrFalseIsOneOfItsWords) {
  for (const char* yes : {"true", "TRUE", "Yes", "on", "1", " true "}) {
    std::string t = yes;
    EXPECT_EQ(cli::boolean(t), "") << yes;
    EXPECT_EQ(t, "true") << yes;
  }
  for (const char* no : {"false", "No", "OFF", "0"}) {
    std::string t = no;
    EXPECT_EQ(cli::boolean(t), "") << no;
    EXPECT_EQ(t, "false") << no;
  }
  for (const char* text : {"abc", "2", "-1", "tru", "10"}) {
    std::string t = text;
    EXPECT_EQ(cli::boolean(t), std::string("Value ") + text +
                                   " is not: true or false is expected (or yes / no, on / off, "
                                   "1 / 0)");
  }
  std::string empty;
  EXPECT_EQ(cli::boolean(empty),
            "Value is empty: true or false is expected (or yes / no, on / off, 1 / 0)");
}

TEST(NumberChecks, FloatsAreFiniteNumbers) {
  for (std::string text : {"1.5", "0", " 2 ", "1e3"}) {
    EXPECT_EQ(cli::finite_number(text), "") << text;
  }
  for (const char* text : {"abc", "2s", "1.5GB", "1,5"}) {
    std::string t = text;
    EXPECT_EQ(cli::finite_number(t), std::string("Value ") + text + " is not a number");
  }
  for (const char* text : {"nan", "-nan", "inf", "1e999"}) {
    std::string t = text;
    EXPECT_EQ(cli::finite_number(t), std::string("Value ") + text + " is not a finite number");
  }
  std::string empty;
  EXPECT_EQ(cli::finite_number(empty), "Value is empty: a number is expected");
}

// Parses `--n VALUE` (a count in [1, 64]), `--size VALUE` (bytes with units) or
// `--seconds VALUE` as the tools declare such options, with guard_numbers() in front.
struct parsed {
  std::string error;
  std::uint64_t n = 0, size = 0;
  int repeat = 0;
  bool on = true;
  double seconds = 0;
};
parsed parse(const std::vector<std::string>& args) {
  parsed p;
  CLI::App app{"t"};
  app.add_option("--n", p.n)->check(CLI::Range(1, 64));
  app.add_option("--size", p.size)->transform(CLI::AsSizeValue(false));
  app.add_option("--seconds", p.seconds)->check(CLI::Range(0.0, 60.0));
  app.add_option("--repeat", p.repeat)->check(CLI::Range(1, 1000));
  app.add_option("--on", p.on);
  cli::guard_numbers(app);
  p.error = parse_args(app, args);
  return p;
}

TEST(NumberChecks, AParseReadsDecimalAndNamesTheOptionItRefuses) {
  EXPECT_EQ(parse({"--n", "010"}).n, 10u);
  EXPECT_EQ(parse({"--n", "08"}).n, 8u);
  EXPECT_EQ(parse({"--size", "010GB"}).size, 10ull << 30);
  EXPECT_EQ(parse({"--size", "0100"}).size, 100u);
  EXPECT_EQ(parse({"--seconds", "1.5"}).seconds, 1.5);
  EXPECT_EQ(parse({"--repeat", "010"}).repeat, 10);
  EXPECT_EQ(parse({"--repeat", "abc"}).error, "--repeat: Value abc is not a whole number");
  EXPECT_FALSE(parse({"--on", "off"}).on);
  EXPECT_TRUE(parse({"--on", "Yes"}).on);
  EXPECT_EQ(parse({"--on", ""}).error,
            "--on: Value is empty: true or false is expected (or yes / no, on / off, 1 / 0)");
  EXPECT_EQ(parse({"--n", "abc"}).error, "--n: Value abc is not a whole number");
  EXPECT_EQ(parse({"--n", ""}).error, "--n: Value is empty: a whole number is expected");
  EXPECT_EQ(parse({"--n", "65"}).error, "--n: Value 65 not in range 1 to 64");
  EXPECT_EQ(parse({"--size", "1.5GB"}).error,
            "--size: Value 1.5GB is not a whole number (with a unit or none: 4096, 512MB, 64GB)");
  EXPECT_EQ(parse({"--seconds", "2s"}).error, "--seconds: Value 2s is not a number");
}

}  // namespace
}  // namespace hc::test
