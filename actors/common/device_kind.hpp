#pragma once
// Where an instance's L1 pools live: host shared memory (CPU mode) or CUDA device memory.
// Vocabulary header: standard library only.

#include <cstdint>
#include <optional>
#include <string_view>

namespace hc {

enum class device_kind : std::uint8_t {
  cpu,   ///< POSIX shared memory the workers map (gpu/shm_l1_pool.hpp)
  cuda,  ///< cudaMalloc'd memory the workers open by CUDA IPC (gpu/cuda_l1_pool.hpp)
};

/// "cpu" / "cuda".
constexpr std::string_view to_string(device_kind d) noexcept {
  return d == device_kind::cuda ? "cuda" : "cpu";
}
/// Parses the names above; nullopt if unknown.
constexpr std::optional<device_kind> parse_device_kind(std::string_view name) noexcept {
  if (name == "cpu") return device_kind::cpu;
  if (name == "cuda") return device_kind::cuda;
  return std::nullopt;
}

}  // namespace hc
