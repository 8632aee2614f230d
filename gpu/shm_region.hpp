#pragma once
// A POSIX shared-memory region that a worker process can map by name (L1 pools in CPU
// mode, architecture.md §4). Created with mode 0600 (0660 with shm_access::group, whatever the
// umask), zero-filled, unlinked on destruction.
//
// Thread safety: the object is immutable after creation; the bytes are not synchronised
// (the forward stream is their only writer on the node side).

#include <cstddef>
#include <span>
#include <string>

#include "actors/common/status.hpp"

namespace hc {

/// Who may map a region the node creates: the node's user alone (mode 0600), or also the
/// users of its group (0660: workers that run as other users in the node's group).
enum class shm_access { user, group };

/// Who may map what a node creates, from its node_config::group_access.
constexpr shm_access shm_access_for(bool group_access) noexcept {
  return group_access ? shm_access::group : shm_access::user;
}

/// The mode of a file the node creates for `access`: 0600 or 0660 (its shared memory, its
/// socket, the socket files of its ipc:// event endpoints).
constexpr unsigned shm_mode(shm_access access) noexcept {
  return access == shm_access::group ? 0660u : 0600u;
}

class shm_region {
 public:
  /// Creates `name` (must start with '/', no other '/') of `bytes` bytes (> 0), its pages
  /// reserved in /dev/shm (posix_fallocate): out_of_memory, saying how much is free, when
  /// they do not fit, instead of a SIGBUS at the first write past the free space.
  static result<shm_region> create(const std::string& name, std::size_t bytes,
                                   shm_access access = shm_access::user);
  /// Maps an existing region read-write (a client of the node's memory); it is unmapped,
  /// not unlinked, on destruction. `bytes` must not exceed the region's size.
  static result<shm_region> map(const std::string& name, std::size_t bytes);
  shm_region() = default;
  shm_region(shm_region&& o) noexcept;
  shm_region& operator=(shm_region&& o) noexcept;
  shm_region(const shm_region&) = delete;
  shm_region& operator=(const shm_region&) = delete;
  ~shm_region();

  const std::string& name() const noexcept { return name_; }
  std::span<std::byte> bytes() const noexcept { return {data_, size_}; }

 private:
  void release() noexcept;
  std::string name_;
  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
  bool owner_ = true;  ///< unlinks the name on destruction
};

}  // namespace hc
