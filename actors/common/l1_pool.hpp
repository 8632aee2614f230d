#pragma once
// The device seam: an instance's L1 pools as the forward_stream moves their bytes — KV
// tokens (token-major, token_bytes each) and SSM states (slot_bytes each, slot 0
// reserved). The stream clears and copies slots, the workers' byte access reads and writes
// pages and slots, and the tier copies move tokens and states to and from the L2 host
// pools (host memory) through it.
//
// Implementations: byte_l1_pool below (the bytes in host memory — CPU mode; shm_l1_pool in
// gpu/ puts them in POSIX shared memory that the workers map); a device implementation
// does the same on device memory, with read_* / write_* as D→H / H→D copies.
//
// Every call checks its ids: one out of range (or the reserved slot 0, or a copy onto
// itself) gives invalid_argument and changes nothing. A pool without KV or slot bytes
// (token_bytes or slot_bytes 0: a bookkeeping-only instance) refuses every byte call of
// that kind.
// Thread safety: none; one owner (the instance's forward_stream).

#include <cstddef>
#include <span>
#include <string>

#include "actors/common/ids.hpp"
#include "actors/common/status.hpp"

namespace hc {

/// Where the pools are, for inspect: the shared-memory names a worker maps ("" if none).
struct l1_pool_names {
  std::string kv;
  std::size_t kv_bytes = 0;
  std::string ssm;
  std::size_t ssm_bytes = 0;
};

class l1_pool {
 public:
  virtual ~l1_pool() = default;

  virtual std::size_t token_bytes() const noexcept = 0;  ///< 0: no KV bytes
  virtual std::size_t kv_tokens() const noexcept = 0;    ///< token rows
  virtual std::size_t slot_bytes() const noexcept = 0;   ///< 0: no slot bytes
  virtual std::size_t slots() const noexcept = 0;        ///< slot rows, reserved slot 0 included
  virtual l1_pool_names names() const = 0;

  virtual status clear_slot(slot_id s) = 0;
  virtual status copy_slot(slot_id src, slot_id dst) = 0;
  /// Tokens [first, first + n) to / from host memory of exactly n * token_bytes() bytes.
  virtual status read_kv(kv_index first, std::size_t n, std::span<std::byte> dst) const = 0;
  virtual status write_kv(kv_index first, std::size_t n, std::span<const std::byte> src) = 0;
  /// Slot s to / from host memory of exactly slot_bytes() bytes.
  virtual status read_slot(slot_id s, std::span<std::byte> dst) const = 0;
  virtual status write_slot(slot_id s, std::span<const std::byte> src) = 0;
};

/// L1 bytes in host memory the caller owns (which must outlive the pool).
class byte_l1_pool : public l1_pool {
 public:
  byte_l1_pool(std::span<std::byte> kv, std::size_t token_bytes, std::span<std::byte> ssm,
               std::size_t slot_bytes, l1_pool_names names = {});

  std::size_t token_bytes() const noexcept override { return token_bytes_; }
  std::size_t kv_tokens() const noexcept override {
    return token_bytes_ ? kv_.size() / token_bytes_ : 0;
  }
  std::size_t slot_bytes() const noexcept override { return slot_bytes_; }
  std::size_t slots() const noexcept override {
    return slot_bytes_ ? ssm_.size() / slot_bytes_ : 0;
  }
  l1_pool_names names() const override { return names_; }

  status clear_slot(slot_id s) override;
  status copy_slot(slot_id src, slot_id dst) override;
  status read_kv(kv_index first, std::size_t n, std::span<std::byte> dst) const override;
  status write_kv(kv_index first, std::size_t n, std::span<const std::byte> src) override;
  status read_slot(slot_id s, std::span<std::byte> dst) const override;
  status write_slot(slot_id s, std::span<const std::byte> src) override;

 private:
  status check_slot(slot_id s) const;
  status check_kv(kv_index first, std::size_t n, std::size_t bytes) const;
  std::span<std::byte> kv_;
  std::size_t token_bytes_;
  std::span<std::byte> ssm_;
  std::size_t slot_bytes_;
  l1_pool_names names_;
};

}  // namespace hc
