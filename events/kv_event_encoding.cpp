#include "events/kv_event_encoding.hpp"

#include <msgpack.hpp>

#include <sstream>
#include <vector>

namespace hc::events {
namespace {

const char* group_name(kv_event::cache_group g) {
  return g == kv_event::cache_group::mamba ? "mamba" : "full";
}

/// One merged event: a run of stored pages of one chain, or of removed blocks.
struct merged {
  const kv_event* first = nullptr;
  std::vector<std::int64_t> hashes;
  std::vector<token_id> tokens;
};

bool joins(const merged& m, const kv_event& e) {
  const kv_event& f = *m.first;
  if (e.type != f.type || e.group != f.group || e.type == kv_event::kind::all_blocks_cleared)
    return false;
  if (e.type == kv_event::kind::block_removed) return true;
  // Stored: only full pages continuing the chain (a checkpoint is its own event).
  return e.group == kv_event::cache_group::full && e.parent_block_hash == m.hashes.back() &&
         e.block_size == f.block_size;
}

template <class Packer>
void pack_key(Packer& pk, const char* k) {
  pk.pack(std::string_view(k));
}

/// "key": "text".
template <class Packer>
void pack_pair(Packer& pk, const char* k, const char* v) {
  pack_key(pk, k);
  pk.pack(std::string_view(v));
}

template <class Packer>
void pack_event(Packer& pk, const merged& m) {
  const kv_event& f = *m.first;
  if (f.type == kv_event::kind::all_blocks_cleared) {
    pk.pack_map(1);
    pack_pair(pk, "type", "AllBlocksCleared");
    return;
  }
  const bool stored = f.type == kv_event::kind::block_stored;
  pk.pack_map(stored ? 8 : 4);
  pack_pair(pk, "type", stored ? "BlockStored" : "BlockRemoved");
  pack_key(pk, "block_hashes");
  pk.pack(m.hashes);
  if (stored) {
    pack_key(pk, "parent_block_hash");
    if (f.parent_block_hash) {
      pk.pack(*f.parent_block_hash);
    } else {
      pk.pack_nil();
    }
    pack_key(pk, "token_ids");
    pk.pack(m.tokens);
    pack_key(pk, "block_size");
    pk.pack(f.block_size);
    pack_key(pk, "lora_id");
    pk.pack_nil();
  }
  pack_pair(pk, "medium", "GPU");
  pack_pair(pk, "cache_group", group_name(f.group));
}

}  // namespace

std::string encode_batch(double ts, std::span<const kv_event> events) {
  std::vector<merged> runs;
  for (const kv_event& e : events) {
    if (!runs.empty() && joins(runs.back(), e)) {
      runs.back().hashes.push_back(e.block_hash);
      runs.back().tokens.insert(runs.back().tokens.end(), e.token_ids.begin(), e.token_ids.end());
      continue;
    }
    merged m;
    m.first = &e;
    if (e.type != kv_event::kind::all_blocks_cleared) m.hashes.push_back(e.block_hash);
    m.tokens = e.token_ids;
    runs.push_back(std::move(m));
  }
  std::stringstream out;
  msgpack::packer<std::stringstream> pk(out);
  pk.pack_map(2);
  pack_key(pk, "ts");
  pk.pack_double(ts);
  pack_key(pk, "events");
  pk.pack_array(static_cast<std::uint32_t>(runs.size()));
  for (const merged& m : runs)
    pack_event(pk, m);
  return out.str();
}

}  // namespace hc::events
