#pragma once
// The ordering rules of forward_stream that hcsim's self-test turns off on purpose.

namespace hc {

/// Ordering rules turned off on purpose (`hybridcached --race-demo`, HC_RACE_DEMO builds):
/// hcsim must then report mismatches — the proof that its check can fail and that the rule
/// is what prevents them. Never turned off otherwise.
struct race_demo {
  /// Load-backs (H→D) run right after the ops of the next begin_forward instead of before
  /// them: a request resuming from a loaded-back state copies the slot before the state
  /// arrived in it.
  bool loads_after_ops = false;
};

}  // namespace hc
