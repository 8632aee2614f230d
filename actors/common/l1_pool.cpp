#include "actors/common/l1_pool.hpp"

#include <cstring>

namespace hc {

byte_l1_pool::byte_l1_pool(std::span<std::byte> kv, std::size_t token_bytes,
                           std::span<std::byte> ssm, std::size_t slot_bytes, l1_pool_names names)
    : kv_(kv),
      token_bytes_(token_bytes),
      ssm_(ssm),
      slot_bytes_(slot_bytes),
      names_(std::move(names)) {}

status byte_l1_pool::check_slot(slot_id s) const {
  if (slot_bytes_ == 0) return {errc::invalid_argument, "this instance has no slot bytes"};
  if (s <= 0 || static_cast<std::size_t>(s) >= slots())
    return {errc::invalid_argument,
            "slot " + std::to_string(s) + " is out of range 1.." + std::to_string(slots() - 1)};
  return {};
}

status byte_l1_pool::check_kv(kv_index first, std::size_t n, std::size_t bytes) const {
  if (token_bytes_ == 0) return {errc::invalid_argument, "this instance has no KV bytes"};
  if (first < 0 || static_cast<std::size_t>(first) + n > kv_tokens())
    return {errc::invalid_argument, "KV tokens " + std::to_string(first) + "+" + std::to_string(n) +
                                        " are out of range 0.." + std::to_string(kv_tokens())};
  if (bytes != n * token_bytes_)
    return {errc::invalid_argument, "KV buffer has " + std::to_string(bytes) + " bytes, expected " +
                                        std::to_string(n * token_bytes_)};
  return {};
}

status byte_l1_pool::clear_slot(slot_id s) {
  if (status st = check_slot(s); !st) return st;
  std::memset(ssm_.data() + static_cast<std::size_t>(s) * slot_bytes_, 0, slot_bytes_);
  return {};
}

status byte_l1_pool::copy_slot(slot_id src, slot_id dst) {
  if (status st = check_slot(src); !st) return st;
  if (status st = check_slot(dst); !st) return st;
  if (src == dst)
    return {errc::invalid_argument, "copy of slot " + std::to_string(src) + " onto itself"};
  std::memcpy(ssm_.data() + static_cast<std::size_t>(dst) * slot_bytes_,
              ssm_.data() + static_cast<std::size_t>(src) * slot_bytes_, slot_bytes_);
  return {};
}

status byte_l1_pool::read_kv(kv_index first, std::size_t n, std::span<std::byte> dst) const {
  if (status st = check_kv(first, n, dst.size()); !st) return st;
  if (n)
    std::memcpy(dst.data(), kv_.data() + static_cast<std::size_t>(first) * token_bytes_,
                dst.size());
  return {};
}

status byte_l1_pool::write_kv(kv_index first, std::size_t n, std::span<const std::byte> src) {
  if (status st = check_kv(first, n, src.size()); !st) return st;
  if (n)
    std::memcpy(kv_.data() + static_cast<std::size_t>(first) * token_bytes_, src.data(),
                src.size());
  return {};
}

status byte_l1_pool::read_slot(slot_id s, std::span<std::byte> dst) const {
  if (status st = check_slot(s); !st) return st;
  if (dst.size() != slot_bytes_)
    return {errc::invalid_argument, "slot buffer has " + std::to_string(dst.size()) +
                                        " bytes, expected " + std::to_string(slot_bytes_)};
  std::memcpy(dst.data(), ssm_.data() + static_cast<std::size_t>(s) * slot_bytes_, slot_bytes_);
  return {};
}

status byte_l1_pool::write_slot(slot_id s, std::span<const std::byte> src) {
  if (status st = check_slot(s); !st) return st;
  if (src.size() != slot_bytes_)
    return {errc::invalid_argument, "slot payload has " + std::to_string(src.size()) +
                                        " bytes, expected " + std::to_string(slot_bytes_)};
  std::memcpy(ssm_.data() + static_cast<std::size_t>(s) * slot_bytes_, src.data(), slot_bytes_);
  return {};
}

}  // namespace hc
