#include "storage/rocksdb_store.hpp"

#include <rocksdb/db.h>
#include <rocksdb/options.h>
#include <rocksdb/slice.h>
#include <rocksdb/write_batch.h>

#include <cstring>
#include <filesystem>

#include "storage/value_codec.hpp"

namespace hc {
namespace {

// Metadata column family: the format marker and one recency record per value.
constexpr std::string_view format_key = "format";
constexpr std::string_view format_value = "hybridcache-l3/1";
constexpr char recency_prefix = 'r';

rocksdb::Slice slice(std::string_view s) {
  return {s.data(), s.size()};
}
rocksdb::Slice slice(std::span<const std::byte> b) {
  return {reinterpret_cast<const char*>(b.data()), b.size()};
}

std::string full_key(l3_pool pool, std::string_view key) {
  std::string k(1, static_cast<char>(pool));
  k.append(key);
  return k;
}

std::string recency_key(std::string_view full) {
  std::string k(1, recency_prefix);
  k.append(full);
  return k;
}

std::string recency_value(std::uint64_t size, std::uint64_t seq) {
  std::string v(16, '\0');
  std::memcpy(v.data(), &size, 8);  // little-endian hosts only (x86-64, aarch64)
  std::memcpy(v.data() + 8, &seq, 8);
  return v;
}

/// A RocksDB failure: out_of_memory when the disk is full (like a value larger than the
/// store: no space), io_error otherwise.
error io(const rocksdb::Status& s, std::string_view what) {
  if (s.IsNoSpace())
    return {errc::out_of_memory, std::string(what) + ": disk full: " + s.ToString()};
  return {errc::io_error, std::string(what) + ": " + s.ToString()};
}

// Why these options (floors.md §6-§7, measured on Debian's librocksdb 7.8.3):
//  * integrated BlobDB: page and state values (KiB to MiB) go to blob files, so compaction
//    moves only small index entries, not the values;
//  * no compression for blobs: KV pages and SSM states are float data that do not compress,
//    and the CPU would cap the throughput;
//  * small memtables: a flush stalls puts (p99 17-107 ms with 64 MiB x 2).
rocksdb::ColumnFamilyOptions family_options(const rocksdb_store_config& cfg, bool blobs) {
  rocksdb::ColumnFamilyOptions o;
  o.write_buffer_size = cfg.write_buffer_bytes;
  o.max_write_buffer_number = 3;
  if (blobs) {
    o.enable_blob_files = true;
    o.min_blob_size = cfg.min_blob_bytes;
    o.blob_file_size = 256ull << 20;
    o.blob_compression_type = rocksdb::kNoCompression;
    o.enable_blob_garbage_collection = true;
  }
  return o;
}

// Cache data is reconstructible: no WAL (it doubles the bytes written; floors.md §7).
rocksdb::WriteOptions write_options() {
  rocksdb::WriteOptions w;
  w.disableWAL = true;
  return w;
}

// Debian's RocksDB checksums blocks with a software CRC32C (~1.5 GB/s; a cached 1 MiB get
// takes 0.73 ms instead of 67 µs). Every value carries its own XXH3-64 (value_codec.hpp),
// checked at memory speed on each get, so RocksDB's read-side check is turned off.
rocksdb::ReadOptions read_options() {
  rocksdb::ReadOptions r;
  r.verify_checksums = false;
  return r;
}

}  // namespace

result<std::unique_ptr<rocksdb_store>> rocksdb_store::open(const rocksdb_store_config& cfg) {
  if (cfg.path.empty()) return error{errc::invalid_config, "L3 store: the path is empty"};
  if (cfg.capacity_bytes == 0)
    return error{errc::invalid_config, "L3 store: capacity must be positive"};
  std::error_code ec;
  std::filesystem::create_directories(cfg.path, ec);
  if (ec) return error{errc::io_error, "L3 store: cannot create " + cfg.path + ": " + ec.message()};

  rocksdb::DBOptions db_opts;
  db_opts.create_if_missing = true;
  db_opts.create_missing_column_families = true;
  db_opts.max_background_jobs = 2;
  db_opts.avoid_flush_during_shutdown = false;  // with no WAL, close must flush
  db_opts.use_direct_reads = cfg.direct_io;
  db_opts.use_direct_io_for_flush_and_compaction = cfg.direct_io;
  std::vector<rocksdb::ColumnFamilyDescriptor> families{
      {rocksdb::kDefaultColumnFamilyName, family_options(cfg, false)},
      {"pages", family_options(cfg, true)},
      {"states", family_options(cfg, true)},
      {"metadata", family_options(cfg, false)},
  };
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* raw = nullptr;
  rocksdb::Status s = rocksdb::DB::Open(db_opts, cfg.path, families, &handles, &raw);
  if (!s.ok()) return io(s, "L3 store: cannot open " + cfg.path);

  std::unique_ptr<rocksdb_store> st(new rocksdb_store());
  st->cfg_ = cfg;
  st->db_.reset(raw);
  st->default_ = handles[0];
  st->pages_ = handles[1];
  st->states_ = handles[2];
  st->meta_ = handles[3];
  st->usage_.capacity = cfg.capacity_bytes;

  std::string marker;
  s = st->db_->Get(read_options(), st->meta_, slice(format_key), &marker);
  if (s.IsNotFound()) {
    s = st->db_->Put(write_options(), st->meta_, slice(format_key), slice(format_value));
    if (!s.ok()) return io(s, "L3 store: cannot write the format marker");
  } else if (!s.ok()) {
    return io(s, "L3 store: cannot read the format marker");
  } else if (marker != format_value) {
    return error{errc::invalid_config, "L3 store: " + cfg.path + " holds format '" + marker +
                                           "', this build reads '" + std::string(format_value) +
                                           "'; point --l3-dir at another directory"};
  }
  if (status ls = st->load_index(); !ls) return ls.err();
  if (cfg.flush_interval.count() > 0)
    st->flusher_ = std::thread([p = st.get()] { p->flush_loop(); });
  return st;
}

void rocksdb_store::flush_loop() {
  std::unique_lock lk(flush_mu_);
  while (!flush_cv_.wait_for(lk, cfg_.flush_interval, [this] { return stopping_; })) {
    {
      std::lock_guard ilk(mu_);
      if (db_) write_recency_locked();
    }
    if (!dirty_.exchange(false)) continue;
    rocksdb::FlushOptions fo;
    fo.allow_write_stall = true;  // never wait behind the writers it is flushing for
    // db_ lives until close() joined this thread. A failed flush is retried next time.
    if (!db_->Flush(fo, {pages_, states_, meta_}).ok()) dirty_ = true;
  }
}

status rocksdb_store::load_index() {
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(read_options(), meta_));
  const std::string prefix(1, recency_prefix);
  for (it->Seek(slice(prefix)); it->Valid() && it->key().starts_with(prefix); it->Next()) {
    const rocksdb::Slice v = it->value();
    if (v.size() != 16) continue;  // not ours; ignored
    entry e;
    std::memcpy(&e.size, v.data(), 8);
    std::memcpy(&e.seq, v.data() + 8, 8);
    std::string full(it->key().data() + 1, it->key().size() - 1);
    if (full.empty()) continue;
    next_seq_ = std::max(next_seq_, e.seq + 1);
    usage_.bytes += e.size;
    usage_.values += 1;
    index_bytes_ += index_bytes_per_value(full.size());
    by_seq_.emplace(e.seq, full);
    index_.emplace(std::move(full), e);
  }
  if (!it->status().ok()) return io(it->status(), "L3 store: cannot read the recency index");
  // A capacity or index limit lowered since the last run takes effect now.
  const std::vector<std::string> victims = victims_locked(0, 0);
  if (victims.empty()) return {};
  usage_.evicted += victims.size();
  return drop_locked(victims);
}

rocksdb_store::~rocksdb_store() {
  (void)close();
}

status rocksdb_store::close() {
  if (flusher_.joinable()) {
    {
      std::lock_guard fl(flush_mu_);
      stopping_ = true;
    }
    flush_cv_.notify_all();
    flusher_.join();
  }
  std::lock_guard lk(mu_);
  if (!db_) return {};
  write_recency_locked();
  rocksdb::FlushOptions fo;
  rocksdb::Status s = db_->Flush(fo, {pages_, states_, meta_});
  for (rocksdb::ColumnFamilyHandle* h : {pages_, states_, meta_, default_})
    (void)db_->DestroyColumnFamilyHandle(h);
  rocksdb::Status c = db_->Close();
  db_.reset();
  if (!s.ok()) return io(s, "L3 store: flush at close failed");
  if (!c.ok()) return io(c, "L3 store: close failed");
  return {};
}

rocksdb::ColumnFamilyHandle* rocksdb_store::family(l3_pool pool) const {
  return pool == l3_pool::kv_page ? pages_ : states_;
}

void rocksdb_store::touch_locked(index_map::iterator it) {
  by_seq_.erase(it->second.seq);
  it->second.seq = next_seq_++;
  by_seq_.emplace(it->second.seq, it->first);
  // Recency survives a restart, written in batches; a lost update only makes the value
  // look older.
  recency_pending_.push_back(it->first);
  if (recency_pending_.size() >= std::max<std::size_t>(cfg_.recency_batch, 1))
    write_recency_locked();
}

void rocksdb_store::write_recency_locked() {
  if (recency_pending_.empty()) return;
  rocksdb::WriteBatch batch;
  for (const std::string& full : recency_pending_) {
    auto it = index_.find(full);  // dropped since: its record is deleted, do not revive it
    if (it == index_.end()) continue;
    (void)batch.Put(meta_, slice(recency_key(full)),
                    slice(recency_value(it->second.size, it->second.seq)));
  }
  recency_pending_.clear();
  if (batch.Count() == 0) return;
  (void)db_->Write(write_options(), &batch);  // a failed write only loses recency
  dirty_ = true;
}

std::vector<std::string> rocksdb_store::victims_locked(std::uint64_t bytes,
                                                       std::uint64_t index) const {
  std::vector<std::string> victims;
  std::uint64_t b = usage_.bytes + bytes, ix = index_bytes_ + index;
  const std::uint64_t ix_limit = cfg_.index_memory_bytes ? cfg_.index_memory_bytes : UINT64_MAX;
  for (auto vi = by_seq_.begin(); (b > usage_.capacity || ix > ix_limit) && vi != by_seq_.end();
       ++vi) {
    b -= index_.at(vi->second).size;
    ix -= index_bytes_per_value(vi->second.size());
    victims.push_back(vi->second);
  }
  return victims;
}

status rocksdb_store::drop_locked(const std::vector<std::string>& full_keys) {
  rocksdb::WriteBatch batch;
  for (const std::string& full : full_keys) {
    auto it = index_.find(full);
    if (it == index_.end()) continue;
    const auto pool = static_cast<l3_pool>(full[0]);
    (void)batch.Delete(family(pool), rocksdb::Slice(full.data() + 1, full.size() - 1));
    (void)batch.Delete(meta_, slice(recency_key(full)));
    usage_.bytes -= it->second.size;
    usage_.values -= 1;
    index_bytes_ -= index_bytes_per_value(full.size());
    by_seq_.erase(it->second.seq);
    index_.erase(it);
  }
  rocksdb::Status s = db_->Write(write_options(), &batch);
  dirty_ = true;
  if (!s.ok()) return io(s, "L3 store: delete failed");
  return {};
}

status rocksdb_store::set(l3_pool pool, std::string_view key, std::span<const std::byte> value) {
  if (key.empty()) return {errc::invalid_argument, "L3 key is empty"};
  const std::uint64_t need = l3::value_header_bytes + value.size();
  if (need > usage_.capacity)
    return {errc::out_of_memory, "L3 value of " + std::to_string(need) +
                                     " bytes exceeds the store capacity " +
                                     std::to_string(usage_.capacity)};
  // Header and payload go to RocksDB as two parts: the payload is not copied to add the
  // header (the checksum runs outside the lock, at memory speed).
  const auto header = l3::encode_header(value);
  const std::string full = full_key(pool, key);
  std::lock_guard lk(mu_);
  if (!db_) return {errc::io_error, "L3 store is closed"};
  if (auto it = index_.find(full); it != index_.end()) {
    touch_locked(it);  // idempotent: the first value stays, recency refreshes
    return {};
  }
  const std::vector<std::string> victims = victims_locked(need, index_bytes_per_value(full.size()));
  if (!victims.empty()) {
    if (status d = drop_locked(victims); !d) return d;
    usage_.evicted += victims.size();
  }
  const entry e{need, next_seq_++};
  rocksdb::WriteBatch batch;
  const rocksdb::Slice key_part = slice(key);
  const rocksdb::Slice value_parts[2] = {slice(std::span<const std::byte>(header)), slice(value)};
  (void)batch.Put(family(pool), rocksdb::SliceParts(&key_part, 1),
                  rocksdb::SliceParts(value_parts, 2));
  (void)batch.Put(meta_, slice(recency_key(full)), slice(recency_value(e.size, e.seq)));
  rocksdb::Status s = db_->Write(write_options(), &batch);
  dirty_ = true;
  if (!s.ok()) return io(s, "L3 store: write failed");
  index_.emplace(full, e);
  by_seq_.emplace(e.seq, full);
  usage_.bytes += e.size;
  usage_.values += 1;
  index_bytes_ += index_bytes_per_value(full.size());
  return {};
}

template <class Use>
status rocksdb_store::read_value(l3_pool pool, std::string_view key, Use&& use) {
  const std::string full = full_key(pool, key);
  {
    std::lock_guard lk(mu_);
    if (!db_) return {errc::io_error, "L3 store is closed"};
    if (index_.find(full) == index_.end()) return {errc::not_found, "L3 key not found"};
  }
  // The read and the copy run without the index lock (RocksDB is thread-safe; the pinned
  // slice keeps the bytes alive); a concurrent eviction of this key shows up as not_found.
  rocksdb::PinnableSlice stored;
  rocksdb::Status s = db_->Get(read_options(), family(pool), slice(key), &stored);
  status used;
  bool corrupt = false;
  if (s.ok())
    used = use(std::span<const std::byte>(reinterpret_cast<const std::byte*>(stored.data()),
                                          stored.size()),
               corrupt);
  std::lock_guard lk(mu_);
  auto it = index_.find(full);
  if (s.IsNotFound() || it == index_.end()) {
    if (it != index_.end()) (void)drop_locked({full});  // index without value: repair
    return {errc::not_found, "L3 key not found"};
  }
  if (!s.ok()) return io(s, "L3 store: read failed");
  if (corrupt) {
    (void)drop_locked({full});
    ++usage_.corrupt;
    return {errc::not_found, "L3 value was corrupt and is deleted: " + used.err().message};
  }
  if (!used) return used;  // the caller's buffer does not fit: the value stays
  touch_locked(it);
  return {};
}

status rocksdb_store::get(l3_pool pool, std::string_view key, std::vector<std::byte>& out) {
  out.clear();
  return read_value(pool, key, [&](std::span<const std::byte> stored, bool& corrupt) -> status {
    auto payload = l3::decode_value(stored);
    corrupt = !payload;
    if (!payload) return payload.err();
    out.assign(payload->begin(), payload->end());
    return {};
  });
}

status rocksdb_store::get_into(l3_pool pool, std::string_view key, std::span<std::byte> dst) {
  return read_value(pool, key, [&](std::span<const std::byte> stored, bool& corrupt) {
    return l3_decode_into(key, stored, dst, corrupt);
  });
}

bool rocksdb_store::exists(l3_pool pool, std::string_view key) {
  std::lock_guard lk(mu_);
  return index_.count(full_key(pool, key)) != 0;
}

status rocksdb_store::erase(l3_pool pool, std::string_view key) {
  const std::string full = full_key(pool, key);
  std::lock_guard lk(mu_);
  if (!db_) return {errc::io_error, "L3 store is closed"};
  if (index_.find(full) == index_.end()) return {errc::not_found, "L3 key not found"};
  return drop_locked({full});
}

result<std::size_t> rocksdb_store::erase_prefix(std::string_view prefix) {
  std::lock_guard lk(mu_);
  if (!db_) return error{errc::io_error, "L3 store is closed"};
  std::vector<std::string> victims;
  for (const auto& [full, rec] : index_)
    if (std::string_view(full).substr(1).starts_with(prefix)) victims.push_back(full);
  if (status s = drop_locked(victims); !s) return s.err();
  return victims.size();
}

l3_usage rocksdb_store::usage() const {
  std::lock_guard lk(mu_);
  return usage_;
}

status rocksdb_store::overwrite_stored(l3_pool pool, std::string_view key,
                                       std::span<const std::byte> bytes) {
  const std::string full = full_key(pool, key);
  std::lock_guard lk(mu_);
  auto it = index_.find(full);
  if (it == index_.end()) return {errc::not_found, "L3 key not found"};
  rocksdb::Status s = db_->Put(write_options(), family(pool), slice(key), slice(bytes));
  if (!s.ok()) return io(s, "L3 store: write failed");
  return {};
}

}  // namespace hc
