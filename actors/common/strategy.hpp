#pragma once
// The three SSM caching strategies and the model-dependent chunk conventions
// (spec/cache-semantics.md §3.10, §4.1).

#include <optional>
#include <string_view>

namespace hc {

/// How a request's SSM state is snapshotted for the prefix cache.
enum class strategy {
  no_buffer,          ///< v1: copy the working slot at each prefill end; donate it at finish
  extra_buffer,       ///< v2 eager: 1 working + pp_size ping-pong track slots
  extra_buffer_lazy,  ///< v2 lazy: 1 working + 1 resident track slot, 2nd allocated at boundaries
};

/// "no_buffer" / "extra_buffer" / "extra_buffer_lazy".
std::string_view to_string(strategy s) noexcept;
/// Parses the names above ("auto" maps to no_buffer, as in SGLang). nullopt if unknown.
std::optional<strategy> parse_strategy(std::string_view name) noexcept;

/// True for both extra_buffer strategies (ping-pong track slots exist).
constexpr bool uses_track_buffer(strategy s) noexcept {
  return s != strategy::no_buffer;
}

/// Which kernel family produces the per-chunk states of a packed extend batch.
/// The two families disagree on how many states a request contributes and what
/// state index k means; mixing them up is the regression of upstream PR 15829.
enum class chunk_convention {
  /// FLA / GDN (Qwen3-Next, Qwen3.5): ceil(extend / C) states per request;
  /// state k = state after k*C extend tokens (state 0 = the initial state).
  fla,
  /// Mamba2 (Nemotron-H, Falcon-H1, Granite): floor(extend / C) states per request
  /// (complete chunks only); state k = state after (k+1)*C extend tokens.
  mamba2,
};

std::string_view to_string(chunk_convention c) noexcept;

/// Prefill-disaggregation role of the node's worker.
enum class pd_mode { none, prefill, decode };

}  // namespace hc
