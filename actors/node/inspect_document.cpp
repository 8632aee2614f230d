#include "actors/node/inspect_document.hpp"

#include <fmt/format.h>

#include <charconv>
#include <ctime>

#include "actors/node/json_text.hpp"

namespace hc {
namespace {

/// The longest a page's text gets but for its namespace name:
/// {"hash":-9223372036854775808,"parent":-9223372036854775808,"checkpoint":false,"namespace":}
constexpr std::size_t page_text_bound = 96;

const char* const events_instead =
    "follow the node's KV events instead (--kv-events, README \"Route on it\")";

std::map<namespace_id, std::string> quoted_names(const block_listing& l) {
  std::map<namespace_id, std::string> quoted;
  for (const auto& [id, name] : l.names)
    quoted[id] = json_text(nlohmann::json(name));
  return quoted;
}

}  // namespace

std::size_t blocks_json_bound(const block_listing& l) {
  const std::map<namespace_id, std::string> quoted = quoted_names(l);
  std::size_t bytes = 2;
  for (const device_block& b : l.blocks) {
    const auto q = quoted.find(b.ns);
    bytes += page_text_bound + (q == quoted.end() ? 2 : q->second.size());
  }
  return bytes;
}

void append_blocks_json(std::string& out, const block_listing& l) {
  const std::map<namespace_id, std::string> quoted = quoted_names(l);
  const std::string empty = "\"\"";
  out += '[';
  char num[24];
  auto append_int = [&](std::int64_t v) {
    out.append(num, std::to_chars(num, num + sizeof num, v).ptr);
  };
  for (std::size_t i = 0; i < l.blocks.size(); ++i) {
    const device_block& b = l.blocks[i];
    out += i == 0 ? "{\"hash\":" : ",{\"hash\":";
    append_int(b.hash);
    out += ",\"parent\":";
    if (b.parent_hash) {
      append_int(*b.parent_hash);
    } else {
      out += "null";
    }
    out += b.checkpoint ? ",\"checkpoint\":true,\"namespace\":"
                        : ",\"checkpoint\":false,\"namespace\":";
    const auto q = quoted.find(b.ns);
    out += q == quoted.end() ? empty : q->second;
    out += '}';
  }
  out += ']';
}

status assemble_inspect(const nlohmann::json& doc, const std::vector<inspect_part>& parts,
                        std::uint64_t max_blocks, std::string& out) {
  std::uint64_t pages = 0;
  std::size_t bytes = 64;
  for (const inspect_part& p : parts) {
    if (p.blocks && !p.blocks->refused.empty())
      return error{errc::out_of_memory, p.blocks->refused};
    if (p.blocks) {
      pages += p.blocks->blocks.size();
      bytes += blocks_json_bound(*p.blocks);
    }
    bytes += p.fingerprint.size() * 6 + p.tree.size() + p.stream.size() + 64;
  }
  if (pages > max_blocks)
    return error{errc::out_of_memory, too_many_blocks_together(pages, parts.size(), max_blocks)};
  std::string text = json_text(doc);
  bytes += text.size();
  if (bytes > max_inspect_bytes) return error{errc::out_of_memory, too_large_inspect(bytes)};
  text.reserve(bytes);
  text.pop_back();  // the closing brace: the instances go in before it
  text += ",\"instances\":[";
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const inspect_part& p = parts[i];
    text += i == 0 ? "{\"fingerprint\":" : ",{\"fingerprint\":";
    text += json_text(nlohmann::json(p.fingerprint));
    text += ",\"tree\":";
    if (p.blocks && p.tree.size() >= 2 && p.tree.back() == '}') {
      text.append(p.tree, 0, p.tree.size() - 1);  // the tree's object, "blocks" added last
      text += p.tree.size() > 2 ? ",\"blocks\":" : "\"blocks\":";
      append_blocks_json(text, *p.blocks);
      text += '}';
    } else {
      text += p.tree;
    }
    text += ",\"stream\":";
    text += p.stream;
    text += '}';
  }
  text += "]}";
  out = std::move(text);
  return {};
}

nlohmann::json node_document(const node_about& about, std::chrono::system_clock::time_point started,
                             double uptime_seconds, long pid) {
  nlohmann::json doc = nlohmann::json::object();
  if (!about.program.empty()) doc["program"] = about.program;
  if (!about.version.empty()) doc["version"] = about.version;
  if (about.protocol != 0) doc["protocol"] = about.protocol;
  doc["pid"] = pid;
  // UTC whatever the node's TZ (fmt's time_point formatting is local time in fmt 9).
  const std::time_t t = std::chrono::system_clock::to_time_t(started);
  std::tm tm{};
  char text[32] = "?";
  if (::gmtime_r(&t, &tm) != nullptr) std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  doc["started"] = text;
  doc["uptime_seconds"] = uptime_seconds;
  nlohmann::json settings = nlohmann::json::object();
  nlohmann::json given = nlohmann::json::array();
  for (const node_setting& s : about.settings) {
    settings[s.name] = s.set ? nlohmann::json(s.value) : nlohmann::json();
    if (s.given) given.push_back(s.name);
  }
  doc["settings"] = std::move(settings);
  doc["given"] = std::move(given);
  return doc;
}

std::string too_many_blocks(std::string_view instance, std::uint64_t pages, std::uint64_t limit) {
  return fmt::format(
      "instance {} holds {} device KV pages; one inspect --blocks answer lists at most {} (its "
      "text must fit one RPC message): {}",
      instance, pages, limit, events_instead);
}

std::string too_many_blocks_together(std::uint64_t pages, std::size_t instances,
                                     std::uint64_t limit) {
  return fmt::format(
      "the {} instances hold {} device KV pages together; one inspect --blocks answer lists at "
      "most {} (its text must fit one RPC message): {}",
      instances, pages, limit, events_instead);
}

std::string too_large_inspect(std::size_t bytes) {
  return fmt::format(
      "the inspect --blocks answer would take up to {} bytes, more than the {} one RPC "
      "message carries (the namespaces' names repeat on every page): {}",
      bytes, max_inspect_bytes, events_instead);
}

}  // namespace hc
