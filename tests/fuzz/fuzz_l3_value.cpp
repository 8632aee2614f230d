// Fuzz target 4: the L3 value codec (storage/value_codec.hpp) and the L3 store's reads of
// corrupted values (rocksdb_store: value segments, RocksDB index). For any bytes:
// The stored bytes are either the input itself or (half the inputs) a real encoding of a
// payload from the input with a few bytes changed and its length cut or grown, so that the
// checks past the header (length, checksum) are reached too.
//  - decode_value either refuses them or returns the payload inside them, whose re-encoding
//    is exactly the input (the header admits one payload only);
//  - encode then decode gives the bytes back;
//  - a value stored in the L3 store whose stored bytes are replaced by the input is served only
//    if the input decodes, and then exactly its payload; otherwise the read is a miss, the
//    value is deleted and counted corrupt — never served, never a crash.
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "storage/rocksdb_store.hpp"
#include "storage/value_codec.hpp"
#include "tests/fuzz/fuzz_input.hpp"
#include "tests/support/temp_dir.hpp"

namespace {

struct store_fixture {
  hc::test::temp_dir dir;
  std::unique_ptr<hc::rocksdb_store> store;
  store_fixture() {
    hc::rocksdb_store_config cfg;
    cfg.path = dir.sub("l3");
    cfg.capacity_bytes = 64ull << 20;
    cfg.write_buffer_bytes = 1 << 20;
    auto s = hc::rocksdb_store::open(cfg);
    if (!s) hc::fuzz::fail("cannot open the store: " + s.err().message);
    store = std::move(*s);
  }
};

store_fixture& fixture() {
  static store_fixture f;  // one database per process; values are overwritten in place
  return f;
}

std::span<const std::byte> as_bytes(const std::uint8_t* d, std::size_t n) {
  return {reinterpret_cast<const std::byte*>(d), n};
}

/// The bytes to decode and store (see the file comment).
std::vector<std::uint8_t> stored_bytes(hc::fuzz::fuzz_input& in) {
  if (in.flag()) {
    auto raw = in.rest();
    return {raw.begin(), raw.end()};
  }
  const auto payload = in.bytes(512);
  std::vector<std::byte> enc;
  hc::l3::encode_value(as_bytes(payload.data(), payload.size()), enc);
  std::vector<std::uint8_t> out(enc.size());
  std::memcpy(out.data(), enc.data(), enc.size());
  for (std::uint64_t flips = in.range(0, 3); flips > 0; --flips)
    out[in.range(0, out.size() - 1)] = in.byte();
  if (in.range(0, 3) == 0) out.resize(in.range(0, out.size() + 8));
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* fuzz_data, std::size_t fuzz_size) {
  using namespace hc;
  fuzz::fuzz_input in(fuzz_data, fuzz_size);
  const std::vector<std::uint8_t> bytes = stored_bytes(in);
  const std::uint8_t* data = bytes.data();
  const std::size_t size = bytes.size();
  const auto input = as_bytes(data, size);

  // The decoder on arbitrary bytes.
  auto decoded = l3::decode_value(input);
  std::vector<std::byte> again;
  if (decoded) {
    const std::byte* lo = input.data();
    if (decoded->data() < lo + l3::value_header_bytes || decoded->size() > size ||
        decoded->data() + decoded->size() > lo + size)
      fuzz::fail("decoded payload lies outside the value");
    l3::encode_value(*decoded, again);
    if (again.size() != size || std::memcmp(again.data(), data, size) != 0)
      fuzz::fail("a value that decodes must be exactly the encoding of its payload");
  }

  // Round trip of the input as a payload.
  l3::encode_value(input, again);
  auto back = l3::decode_value(again);
  if (!back || back->size() != size || (size && std::memcmp(back->data(), data, size) != 0))
    fuzz::fail("encode then decode lost the payload");

  // The store: a good value, then its stored bytes replaced by the input.
  rocksdb_store& store = *fixture().store;
  const auto pool = size % 2 ? l3_pool::ssm_state : l3_pool::kv_page;
  const std::string key = "fuzz/" + std::to_string(size % 7);
  const std::vector<std::byte> good(64, std::byte{0x5a});
  if (status s = store.set(pool, key, good); !s) fuzz::fail("set: " + s.err().message);
  if (status s = store.overwrite_stored(pool, key, input); !s)
    fuzz::fail("overwrite: " + s.err().message);
  const std::uint64_t corrupt_before = store.usage().corrupt;
  std::vector<std::byte> out;
  status got = store.get(pool, key, out);
  if (decoded) {
    if (!got) fuzz::fail("a valid value was not served: " + got.err().message);
    if (out.size() != decoded->size() ||
        (!out.empty() && std::memcmp(out.data(), decoded->data(), out.size()) != 0))
      fuzz::fail("the store served other bytes than the value's payload");
  } else {
    if (got) fuzz::fail("a corrupt value was served");
    if (got.err().code != errc::not_found) fuzz::fail("a corrupt value must read as a miss");
    if (store.exists(pool, key)) fuzz::fail("a corrupt value must be deleted");
    if (store.usage().corrupt != corrupt_before + 1) fuzz::fail("corrupt values are counted");
  }
  return 0;
}
