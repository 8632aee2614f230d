#pragma once
// The JSON text of an inspect document. Documents carry strings a worker chose (model ids,
// namespaces, store identities), which need not be UTF-8: nlohmann's plain dump() throws
// on them, and an exception in a handler ends the actor (found by tests/fuzz/fuzz_rpc).
// Invalid bytes become U+FFFD instead.

#include <string>

#include <nlohmann/json.hpp>

namespace hc {

inline std::string json_text(const nlohmann::json& doc) {
  return doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace hc
