#include "tools/replay/rpc_backend.hpp"

#include <chrono>

namespace hc::replay {

namespace {

/// A fresh instance per replay: the trace expects empty pools.
instance_spec fresh_spec_of(const trace_config& c) {
  instance_spec s = spec_of(c);
  s.ns = "replay";
  s.model_id.push_back('-');  // (two appends: GCC 12 warns spuriously on "-" + string)
  s.model_id += std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
  return s;
}

}  // namespace

result<std::unique_ptr<rpc_backend>> rpc_backend::connect(const std::string& address,
                                                          const trace_config& cfg,
                                                          const std::string& token,
                                                          std::chrono::milliseconds call_timeout) {
  auto c = client::connect(address, token, call_timeout);
  if (!c) return c.err();
  auto s = (*c)->open(fresh_spec_of(cfg));
  if (!s) return s.err();
  std::unique_ptr<rpc_backend> b(new rpc_backend());
  b->client_ = std::move(*c);
  b->session_ = std::move(*s);
  return b;
}

std::uint64_t rpc_backend::run(std::span<const command> cmds,
                               std::vector<command_result>& results) {
  const auto t0 = std::chrono::steady_clock::now();
  auto r = session_->step(cmds);
  const auto ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0)
          .count();
  if (r) {
    results = std::move(*r);
  } else {
    results.assign(cmds.size(), {});
    for (auto& x : results) {
      x.code = r.err().code;
      x.error = r.err().message;
    }
  }
  return static_cast<std::uint64_t>(ns);
}

}  // namespace hc::replay
