#include "actors/daemon/check_config.hpp"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <fmt/format.h>
#include <algorithm>
#include <filesystem>
#include <string_view>
#include <system_error>

#include "cli/token_file.hpp"

namespace hc {
namespace {

namespace fs = std::filesystem;

/// Whether this process may create files in the directory `dir`.
bool writable_directory(const fs::path& dir) {
  std::error_code ec;
  return fs::is_directory(dir, ec) && ::access(dir.c_str(), W_OK | X_OK) == 0;
}

/// Why a Unix socket cannot be bound at `path`, or "": `option` and `value` (the path, or an
/// ipc:// endpoint) name it.
std::string socket_path_problem(const std::string& option, const std::string& value,
                                const std::string& path) {
  constexpr std::size_t most = sizeof(sockaddr_un::sun_path) - 1;
  if (path.size() > most)
    return fmt::format("{} {}: a Unix socket path has at most {} bytes, this one has {}", option,
                       value, most, path.size());
  const fs::path parent =
      fs::path(path).parent_path().empty() ? fs::path(".") : fs::path(path).parent_path();
  std::error_code ec;
  if (!fs::is_directory(parent, ec))
    return fmt::format("{} {}: no directory {} to create it in", option, value, parent.string());
  if (!writable_directory(parent))
    return fmt::format("{} {}: the directory {} is not writable by this user", option, value,
                       parent.string());
  struct stat sb {};
  if (::lstat(path.c_str(), &sb) == 0 && !S_ISSOCK(sb.st_mode))
    return fmt::format("{} {}: a file that is not a socket is there", option, value);
  return {};
}

/// Why the node could not use `dir` as its --data-dir (creating it if missing), or "".
std::string data_dir_problem(const std::string& dir) {
  std::error_code ec;
  for (const fs::path& where : {fs::path(dir), fs::path(dir) / "l3"}) {
    if (!fs::exists(where, ec)) continue;
    if (!fs::is_directory(where, ec))
      return fmt::format("--data-dir {}: {} is not a directory", dir, where.string());
    if (!writable_directory(where))
      return fmt::format("--data-dir {}: {} is not writable by this user", dir, where.string());
  }
  if (fs::exists(dir, ec)) return {};
  fs::path ancestor = fs::absolute(dir, ec).lexically_normal().parent_path();
  while (!ancestor.empty() && !fs::exists(ancestor, ec) && ancestor != ancestor.parent_path())
    ancestor = ancestor.parent_path();
  if (!writable_directory(ancestor))
    return fmt::format("--data-dir {}: cannot be created: {} is not a writable directory", dir,
                       ancestor.string());
  return {};
}

/// A value of `opt` as given, a boolean spelt one way (the command line's `1`, `0`, `on`,
/// a config file's `true` all read back alike).
std::string value_of(const CLI::Option& opt, std::string value) {
  if (opt.get_type_name() != "BOOLEAN") return value;
  try {  // CLI11's reading: 1 / true / on / yes ... > 0, 0 / false / off / no ... < 0
    return CLI::detail::to_flag_value(value) > 0 ? "true" : "false";
  } catch (const std::exception&) {  // not a boolean the parse would have taken
    return value;
  }
}

/// `value` as a config file line's value reads it back: quoted where it would not be.
std::string config_value(const std::string& value) {
  const bool plain = !value.empty() && value.front() != ' ' && value.back() != ' ' &&
                     value.front() != '"' && value.front() != '\'' &&
                     value.find(" #") == std::string::npos &&
                     value.find("\t#") == std::string::npos;
  if (plain) return value;
  return value.find('"') == std::string::npos ? '"' + value + '"' : '\'' + value + '\'';
}

/// The options of `app` a config file may set, in --help's order: not the flags (--help,
/// --version, --check-config), not --config itself.
std::vector<const CLI::Option*> settings_of(const CLI::App& app) {
  std::vector<const CLI::Option*> out;
  for (const CLI::Option* opt : app.get_options())
    if (opt->get_configurable() && !opt->get_lnames().empty() && opt->get_type_size() != 0)
      out.push_back(opt);
  return out;
}

/// What `opt` was given (command line or config file), several values joined by spaces.
std::string given_value(const CLI::Option& opt) {
  std::string value;
  for (const std::string& r : opt.results())
    value += (value.empty() ? "" : " ") + r;
  return value_of(opt, value);
}

}  // namespace

std::vector<std::string> start_problems(const daemon_options& o) {
  std::vector<std::string> problems;
  const auto note = [&](std::string p) {
    if (!p.empty()) problems.push_back(std::move(p));
  };
  if (!o.socket.empty()) note(socket_path_problem("--socket", o.socket, o.socket));
  for (const auto& [option, endpoint] : {std::pair{"--kv-events", &o.kv_events},
                                         std::pair{"--kv-events-replay", &o.kv_events_replay}})
    if (endpoint->starts_with("ipc://") && endpoint->size() > 6 && (*endpoint)[6] != '@')
      note(socket_path_problem(option, *endpoint, endpoint->substr(6)));
  if (!o.tcp.empty()) {
    const auto secret = cli::read_token_file(o.token_file);
    if (!secret)
      note(fmt::format("--token-file {}: cannot be read (or holds no line)", o.token_file));
    else if (secret->size() < cli::min_secret_chars)
      note(
          fmt::format("--token-file {}: the secret on its first line has {} characters; it "
                      "needs at least {}",
                      o.token_file, secret->size(), cli::min_secret_chars));
  }
  if (o.l3) note(data_dir_problem(o.data_dir));
  return problems;
}

std::vector<setting> app_settings(const CLI::App& app,
                                  const std::vector<decided_default>& decided) {
  std::vector<setting> out;
  for (const CLI::Option* opt : settings_of(app)) {
    setting& s = out.emplace_back();
    s.name = opt->get_single_name();
    const auto decided_here = std::find_if(
        decided.begin(), decided.end(), [&](const decided_default& d) { return d.name == s.name; });
    if (opt->count() > 0) {
      s.from = setting::origin::given;
      s.value = given_value(*opt);
    } else if (decided_here != decided.end()) {
      s.from = setting::origin::decided_at_start;
      s.value = decided_here->value;
      s.rule = decided_here->rule;
    } else if (opt->get_default_str().empty()) {
      s.from = setting::origin::unset;
    } else {
      s.value = value_of(*opt, opt->get_default_str());
    }
  }
  return out;
}

std::string effective_config(const CLI::App& app, const std::vector<decided_default>& decided) {
  std::string out =
      "# hybridcached --check-config: the settings this node starts with, as a --config file\n";
  for (const setting& s : app_settings(app, decided)) {
    switch (s.from) {
      case setting::origin::given:
      case setting::origin::default_value:
        out += fmt::format("{} = {}\n", s.name, config_value(s.value));
        break;
      case setting::origin::decided_at_start:
        out += fmt::format("# {} = {}  (the default here: {})\n", s.name, s.value, s.rule);
        break;
      case setting::origin::unset:
        out += fmt::format("# {} = (not set)\n", s.name);
        break;
    }
  }
  return out;
}

std::string given_settings(const CLI::App& app) {
  std::string out;
  for (const setting& s : app_settings(app, {}))
    if (s.from == setting::origin::given)
      out += fmt::format("{}{} = {}", out.empty() ? "" : ", ", s.name, config_value(s.value));
  return out;
}

}  // namespace hc
