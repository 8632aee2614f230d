#include "actors/common/l1_pool.hpp"

#include <cstring>
#include <unordered_set>

namespace hc {

byte_l1_pool::byte_l1_pool(std::span<std::byte> kv, std::size_t token_bytes,
                           std::span<std::byte> ssm, std::size_t slot_bytes, l1_pool_names names)
    : kv_(kv),
      token_bytes_(token_bytes),
      ssm_(ssm),
      slot_bytes_(slot_bytes),
      names_(std::move(names)) {
  names_.kv_bytes = kv.size();
  names_.ssm_bytes = ssm.size();
}

std::vector<std::size_t> independent_runs(std::span<const slot_copy> copies) {
  std::vector<std::size_t> ends;
  std::unordered_set<slot_id> read, written;  // by the current run
  for (std::size_t i = 0; i < copies.size(); ++i) {
    const slot_copy c = copies[i];
    if (written.contains(c.src) || written.contains(c.dst) || read.contains(c.dst)) {
      ends.push_back(i);
      read.clear();
      written.clear();
    }
    read.insert(c.src);
    written.insert(c.dst);
  }
  if (!copies.empty()) ends.push_back(copies.size());
  return ends;
}

status l1_pool::check_slot(slot_id s) const {
  if (slot_bytes() == 0) return {errc::invalid_argument, "this instance has no slot bytes"};
  if (s <= 0 || static_cast<std::size_t>(s) >= slots())
    return {errc::invalid_argument,
            "slot " + std::to_string(s) + " is out of range 1.." + std::to_string(slots() - 1)};
  return {};
}

status l1_pool::check_copy(slot_copy c) const {
  if (status st = check_slot(c.src); !st) return st;
  if (status st = check_slot(c.dst); !st) return st;
  if (c.src == c.dst)
    return {errc::invalid_argument, "copy of slot " + std::to_string(c.src) + " onto itself"};
  return {};
}

status l1_pool::check_slot_buffer(std::size_t bytes) const {
  if (bytes != slot_bytes())
    return {errc::invalid_argument, "slot buffer has " + std::to_string(bytes) +
                                        " bytes, expected " + std::to_string(slot_bytes())};
  return {};
}

status l1_pool::check_kv(kv_index first, std::size_t n, std::size_t bytes) const {
  if (token_bytes() == 0) return {errc::invalid_argument, "this instance has no KV bytes"};
  if (first < 0 || static_cast<std::size_t>(first) + n > kv_tokens())
    return {errc::invalid_argument, "KV tokens " + std::to_string(first) + "+" + std::to_string(n) +
                                        " are out of range 0.." + std::to_string(kv_tokens())};
  if (bytes != n * token_bytes())
    return {errc::invalid_argument, "KV buffer has " + std::to_string(bytes) + " bytes, expected " +
                                        std::to_string(n * token_bytes())};
  return {};
}

status l1_pool::check_kv_runs(std::span<const kv_run> runs) const {
  for (const kv_run& r : runs)
    if (status st = check_kv(r.first, r.n, r.host.size()); !st) return st;
  return {};
}

status l1_pool::queue_read_kv_runs(std::span<const kv_run> runs) {
  if (status st = check_kv_runs(runs); !st) return st;
  for (const kv_run& r : runs)
    if (status st = queue_read_kv(r.first, r.n, r.host); !st) return st;
  return {};
}

status l1_pool::queue_write_kv_runs(std::span<const kv_run> runs) {
  if (status st = check_kv_runs(runs); !st) return st;
  for (const kv_run& r : runs)
    if (status st = queue_write_kv(r.first, r.n, r.host); !st) return st;
  return {};
}

std::size_t l1_pool::clear_slots(std::span<const slot_id> slots) {
  std::size_t refused = 0;
  for (slot_id s : slots)
    if (!clear_slot(s)) ++refused;
  return refused;
}

std::size_t l1_pool::copy_slots(std::span<const slot_copy> copies) {
  std::size_t refused = 0;
  for (slot_copy c : copies)
    if (!copy_slot(c.src, c.dst)) ++refused;
  return refused;
}

status byte_l1_pool::clear_slot(slot_id s) {
  if (status st = check_slot(s); !st) return st;
  std::memset(ssm_.data() + static_cast<std::size_t>(s) * slot_bytes_, 0, slot_bytes_);
  return {};
}

status byte_l1_pool::copy_slot(slot_id src, slot_id dst) {
  if (status st = check_copy({src, dst}); !st) return st;
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
  if (status st = check_slot_buffer(dst.size()); !st) return st;
  std::memcpy(dst.data(), ssm_.data() + static_cast<std::size_t>(s) * slot_bytes_, slot_bytes_);
  return {};
}

status byte_l1_pool::write_slot(slot_id s, std::span<const std::byte> src) {
  if (status st = check_slot(s); !st) return st;
  if (status st = check_slot_buffer(src.size()); !st) return st;
  std::memcpy(ssm_.data() + static_cast<std::size_t>(s) * slot_bytes_, src.data(), slot_bytes_);
  return {};
}

}  // namespace hc
