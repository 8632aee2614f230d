// hybridcached's --config grammar (config_file.hpp).
#include "actors/daemon/config_file.hpp"

#include <cstddef>
#include <map>
#include <memory>
#include <string_view>
#include <utility>

#include <fmt/format.h>

namespace hc {
namespace {

constexpr std::string_view kByteOrderMark = "\xEF\xBB\xBF";

bool blank(char c) {
  return c == ' ' || c == '\t';
}

std::string_view trimmed(std::string_view s) {
  while (!s.empty() && blank(s.front()))
    s.remove_prefix(1);
  while (!s.empty() && blank(s.back()))
    s.remove_suffix(1);
  return s;
}

[[noreturn]] void refuse(std::size_t line, const std::string& why) {
  throw CLI::ConfigError(fmt::format("--config line {}: {}", line, why));
}

// The value after '=': quoted (as written) or up to a comment.
std::string value_of(std::string_view rest, std::size_t line) {
  rest = trimmed(rest);
  if (!rest.empty() && (rest.front() == '"' || rest.front() == '\'')) {
    const char quote = rest.front();
    const std::size_t close = rest.find(quote, 1);
    if (close == std::string_view::npos)
      refuse(line, fmt::format("the value's opening {} is not closed on its line", quote));
    const std::string_view after = trimmed(rest.substr(close + 1));
    if (!after.empty() && after.front() != '#')
      refuse(line, fmt::format("'{}' follows the quoted value (only a # comment may)", after));
    return std::string(rest.substr(1, close - 1));
  }
  for (std::size_t i = 1; i < rest.size(); ++i)
    if (rest[i] == '#' && blank(rest[i - 1])) return std::string(trimmed(rest.substr(0, i)));
  if (!rest.empty() && rest.front() == '#') return {};  // `key = # comment`: an empty value
  return std::string(rest);
}

}  // namespace

std::vector<CLI::ConfigItem> config_file_format::from_config(std::istream& input) const {
  std::vector<CLI::ConfigItem> read;
  std::map<std::string, std::size_t> line_of;  // key -> the line that set it
  std::string text;
  for (std::size_t line = 1; std::getline(input, text); ++line) {
    std::string_view s = text;
    if (line == 1 && s.substr(0, kByteOrderMark.size()) == kByteOrderMark)
      s.remove_prefix(kByteOrderMark.size());
    if (!s.empty() && s.back() == '\r') s.remove_suffix(1);
    for (const char c : s)
      if ((static_cast<unsigned char>(c) < 0x20 && c != '\t') || c == 0x7f)
        refuse(line, fmt::format("control character 0x{:02x} (a config file is text)",
                                 static_cast<unsigned char>(c)));
    s = trimmed(s);
    if (s.empty() || s.front() == '#' || s.front() == ';') continue;
    if (s.front() == '[')
      refuse(line, fmt::format("'{}': a config file has no sections, only key = value lines", s));
    const std::size_t eq = s.find('=');
    if (eq == std::string_view::npos) refuse(line, fmt::format("'{}' is not key = value", s));
    const std::string key(trimmed(s.substr(0, eq)));
    if (key.empty()) refuse(line, "no key before '='");
    if (key.front() == '-')
      refuse(line, fmt::format("'{}': write the key without its dashes", key));
    const CLI::Option* option = app_->get_option_no_throw("--" + key);
    if (option == nullptr)
      refuse(line, fmt::format("'{}' is not an option (keys are the long options without "
                               "their dashes, as --help lists them)",
                               key));
    if (!option->get_configurable())
      refuse(line, fmt::format("'{}' cannot be set in a config file", key));
    if (const auto [at, fresh] = line_of.emplace(key, line); !fresh)
      refuse(line, fmt::format("'{}' is set again (first on line {})", key, at->second));
    CLI::ConfigItem item;
    item.name = key;
    item.inputs.push_back(value_of(s.substr(eq + 1), line));
    read.push_back(std::move(item));
  }
  return read;
}

std::string config_file_format::to_config(const CLI::App* app, bool default_also,
                                          bool write_description, std::string prefix) const {
  return CLI::ConfigTOML().to_config(app, default_also, write_description, std::move(prefix));
}

void use_config_file_format(CLI::App& app) {
  app.config_formatter(std::make_shared<config_file_format>(app));
}

}  // namespace hc
