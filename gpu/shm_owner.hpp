#pragma once
// Which node owns a shared-memory name, and the sweep of the names whose node is gone.
//
// A node's segments are named "/<stem><pid>-<nonce>-<what>" (stem e.g. "hybridcache-"; the
// pid for the operator who lists /dev/shm; <nonce> 16 hex digits drawn at start). A pid
// alone does not name a process where /dev/shm is shared across PID namespaces — containers
// run with --ipc=host are each pid 1 — so neither it nor kill(pid, 0) can tell a live node
// from a dead one there. The node's claim is a marker "<prefix>-owner" in /dev/shm on which
// it holds an flock(2) for as long as it lives: the kernel drops the lock when the process
// ends, however it ends, and every process that shares the tmpfs sees the lock, whatever
// its PID namespace.
//
// Linux (/dev/shm is where glibc's shm_open keeps its names). Thread safety: a shm_owner is
// immutable; the sweep may run beside any other process's.

#include <cstddef>
#include <string>

#include "actors/common/status.hpp"

namespace hc {

class shm_owner {
 public:
  /// Draws a prefix "/<stem><pid>-<nonce>" and claims it: creates "<prefix>-owner" (mode
  /// 0600), already locked when it appears under that name, so that no sweep sees it
  /// unlocked. io_error saying why when /dev/shm refuses.
  static result<shm_owner> claim(const std::string& stem);
  shm_owner() = default;
  shm_owner(shm_owner&& o) noexcept;
  shm_owner& operator=(shm_owner&& o) noexcept;
  shm_owner(const shm_owner&) = delete;
  shm_owner& operator=(const shm_owner&) = delete;
  /// Unlinks the marker and drops the claim (the segments are their owners' to unlink).
  ~shm_owner();

  /// "/<stem><pid>-<nonce>": the node names its segments "<prefix>-<what>".
  const std::string& prefix() const noexcept { return prefix_; }

 private:
  void release() noexcept;
  std::string prefix_;
  int fd_ = -1;
};

/// Unlinks the shared-memory segments of nodes that are gone — a node killed with SIGKILL
/// cannot unlink its pools, and tmpfs keeps their memory until someone does: every name
/// "<stem><pid>-<nonce>-..." whose "-owner" marker is missing or held by no process (the
/// marker included), and every name of the earlier form "<stem><pid>-..." (no nonce, no
/// marker: nodes before the claim) whose pid no longer exists in this PID namespace.
/// Segments of a live node are never unlinked, whichever PID namespace it runs in (nor ones
/// whose marker this process may not open: another user's). Returns how many it unlinked.
std::size_t unlink_orphaned_segments(const std::string& stem);

/// Unlinks every name "<prefix>-..." (prefix as shm_owner::prefix(): with its '/'), the
/// marker included: a process that leaves its node running at exit cleans up after it.
std::size_t unlink_segments_of(const std::string& prefix);

}  // namespace hc
