#include "storage/rocksdb_store.hpp"

#include <rocksdb/db.h>
#include <rocksdb/env.h>
#include <rocksdb/listener.h>
#include <rocksdb/memtablerep.h>
#include <rocksdb/options.h>
#include <rocksdb/slice.h>
#include <rocksdb/write_batch.h>

#include <fcntl.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <optional>

#include "actors/common/fault_log.hpp"
#include "actors/common/log.hpp"
#include "actors/common/thread_name.hpp"
#include "storage/rocksdb_retryable_writes.hpp"
#include "storage/value_codec.hpp"

namespace hc {
namespace {

// Metadata column family: the format marker and one index record per value.
constexpr std::string_view format_key = "format";
constexpr std::string_view format_value = "hybridcache-l3/2";
constexpr char record_prefix = 'r';
constexpr std::size_t record_bytes = 40;  // size, seq, segment, offset, checksum (u64 each)

rocksdb::Slice slice(std::string_view s) {
  return {s.data(), s.size()};
}

std::string full_key(l3_pool pool, std::string_view key) {
  std::string k(1, static_cast<char>(pool));
  k.append(key);
  return k;
}

/// The RocksDB key of the index record of `full` (record_prefix, then the key), as parts
/// a batch copies.
std::array<rocksdb::Slice, 2> record_key_parts(std::string_view full) {
  return {rocksdb::Slice(&record_prefix, 1), slice(full)};
}

/// A RocksDB failure: out_of_memory when the disk is full (like a value larger than the
/// store: no space), io_error otherwise.
error io(const rocksdb::Status& s, std::string_view what) {
  if (s.IsNoSpace())
    return {errc::out_of_memory, std::string(what) + ": disk full: " + s.ToString()};
  return {errc::io_error, std::string(what) + ": " + s.ToString()};
}

/// The error for a store whose DB::Open failed (`s`) because another process holds its
/// LOCK (RocksDB's "While lock file: <path>: Resource temporarily unavailable"), naming that
/// process: its pid from the file's POSIX record lock (F_GETLK), or "another PID namespace"
/// where the kernel reports 0. nullopt for any other failure, and when this process holds
/// the lock itself ("lock hold by current process": a second open of its own store): the
/// probe closes a descriptor of LOCK, which would drop every POSIX lock this process has on it.
std::optional<error> held_by_another_process(const rocksdb::Status& s, const std::string& path) {
  if (!s.IsIOError() || s.ToString().find("While lock file") == std::string::npos)
    return std::nullopt;
  const int fd = ::open((path + "/index/LOCK").c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  struct flock probe {};
  probe.l_type = F_WRLCK;
  probe.l_whence = SEEK_SET;
  const bool read = ::fcntl(fd, F_GETLK, &probe) == 0;
  ::close(fd);
  if (!read || probe.l_type == F_UNLCK) return std::nullopt;
  const std::string holder = probe.l_pid > 0 ? "process " + std::to_string(probe.l_pid)
                                             : std::string("a process in another PID namespace");
  return error{errc::io_error, "L3 store: " + path + " is in use by " + holder +
                                   " (another hybridcached on this --data-dir?)"};
}

/// A store's directory is its owner's alone (mode 0700), like the node's socket and shared
/// memory (0600): its values are the KV cache and SSM states of users' prompts, from which
/// the prompts can be read back. RocksDB makes its files 0644 less the umask; the directory
/// keeps others out of them. Applied at every open, so that a store an earlier build
/// left readable to all is closed to others too. Best effort: a directory this process may
/// not chmod (another user's) stays as it is, with a warning.
void keep_to_owner(const std::string& dir) {
  std::error_code ec;
  std::filesystem::permissions(dir, std::filesystem::perms::owner_all,
                               std::filesystem::perm_options::replace, ec);
  if (ec)
    log::warn("L3 store: cannot make " + dir + " its owner's alone (mode 0700): " + ec.message());
}

// The index records are small; the memtable stays moderate (a flush stalls writes,
// floors.md §7).
// The store only writes the index while it runs (it reads it once, at open): a vector
// memtable appends in O(1) and sorts at flush, where the default skip list costs a few
// cache misses per insert (≈ 4 µs with a full memtable: 18 % of a 64 KiB get's time went
// to recency records, BENCHMARKS.md §5.0).
rocksdb::ColumnFamilyOptions family_options(const rocksdb_store_config& cfg) {
  rocksdb::ColumnFamilyOptions o;
  o.write_buffer_size = cfg.write_buffer_bytes;
  o.max_write_buffer_number = 3;
  o.memtable_factory = std::make_shared<rocksdb::VectorRepFactory>();
  return o;
}

// Cache data is reconstructible: no WAL (it doubles the bytes written; floors.md §7).
// `fail_if_stalled`: a write that would wait for a flush fails at once instead (while the
// index cannot write to its disk, the flush it would wait for may be minutes away).
rocksdb::WriteOptions write_options(bool fail_if_stalled = false) {
  rocksdb::WriteOptions w;
  w.disableWAL = true;
  w.no_slowdown = fail_if_stalled;
  return w;
}

rocksdb::ReadOptions read_options() {
  return rocksdb::ReadOptions();
}

/// RocksDB's warnings and errors, in the node's log. Its default is a LOG file in the
/// index directory, on the disk the store fills: once a write to it failed (disk full),
/// Debian's build — assertions on — aborted the process at the next line it logged.
/// Lines from one place of RocksDB's source ("[db/error_handler.cc:397] ...") reach the log
/// at most once a minute: while its disk fails, RocksDB retries a flush every second and
/// says so twice each time.
class node_log_forwarder final : public rocksdb::Logger {
 public:
  node_log_forwarder() : rocksdb::Logger(rocksdb::InfoLogLevel::WARN_LEVEL) {}
  using rocksdb::Logger::Logv;
  void Logv(const char* format, va_list ap) override {
    Logv(rocksdb::InfoLogLevel::INFO_LEVEL, format, ap);
  }
  void Logv(const rocksdb::InfoLogLevel level, const char* format, va_list ap) override {
    if (level < GetInfoLogLevel() || level == rocksdb::InfoLogLevel::HEADER_LEVEL) return;
    std::array<char, 1024> line{};
    std::vsnprintf(line.data(), line.size(), format, ap);
    std::string message = std::string("L3 store (RocksDB): ") + line.data();
    while (message.back() == '\n')
      message.pop_back();
    {
      const std::string_view text(line.data());
      const std::size_t tag = text.starts_with('[') ? text.find(']') : std::string_view::npos;
      std::lock_guard lk(mu_);  // RocksDB logs from its own threads and the store's
      auto admitted = repeats_.line(tag == std::string_view::npos ? text : text.substr(0, tag + 1),
                                    message, steady().now());
      if (!admitted) return;
      message = std::move(*admitted);
    }
    if (level >= rocksdb::InfoLogLevel::ERROR_LEVEL) {
      log::error(message);
    } else {
      log::warn(message);
    }
  }

 private:
  std::mutex mu_;
  line_limiter repeats_{std::chrono::minutes(1)};
};

}  // namespace

/// Follows the index's background errors — a flush that could not write its table file (an
/// I/O error, marked retryable: rocksdb_retryable_writes.hpp) or a full disk — and their
/// recovery, which RocksDB runs on its own; says both in the log. Its callbacks run on
/// RocksDB's threads.
class index_health final : public rocksdb::EventListener {
 public:
  bool failing() const noexcept { return failing_.load(std::memory_order_relaxed); }
  /// Times it began to fail since open.
  std::uint64_t failures() const noexcept { return failures_.load(std::memory_order_relaxed); }

  void OnBackgroundError(rocksdb::BackgroundErrorReason, rocksdb::Status* e) override {
    if (e == nullptr || e->ok() || failing_.exchange(true)) return;
    failures_.fetch_add(1, std::memory_order_relaxed);
    log::warn("L3 store: its index cannot write to its disk (" + e->ToString() +
              "); RocksDB retries, and L3 writes may fail until it can");
  }
  void OnErrorRecoveryEnd(const rocksdb::BackgroundErrorRecoveryInfo& info) override {
    if (!info.new_bg_error.ok()) {
      log::error("L3 store: its index gave up writing to its disk (" +
                 info.new_bg_error.ToString() + "); L3 writes fail until the node restarts");
      return;
    }
    writes_again();
  }
  /// RocksDB recovered, or a flush of the store's own succeeded (whatever RocksDB
  /// announced): the index writes to its disk.
  void writes_again() {
    if (failing_.exchange(false)) log::info("L3 store: its index writes to its disk again");
  }

 private:
  std::atomic<bool> failing_{false};
  std::atomic<std::uint64_t> failures_{0};
};

namespace {

/// Whether RocksDB's failure says the index's files are damaged: a corruption, or a file
/// its CURRENT or MANIFEST names that is not there (deleted by a cleanup script, lost with
/// a disk: RocksDB says "IO error: No such file or directory", and the store would fail
/// every start after it). The index directory itself exists by then (open_as_is made it).
bool damaged(const rocksdb::Status& s) {
  return s.IsCorruption() || s.IsPathNotFound();
}

}  // namespace

result<std::unique_ptr<rocksdb_store>> rocksdb_store::open(const rocksdb_store_config& cfg,
                                                           const rocksdb_load_options& load) {
  auto st = open_unloaded(cfg);
  if (!st) return st;
  return rocksdb_store::load(std::move(*st), load);
}

result<std::unique_ptr<rocksdb_store>> rocksdb_store::open_unloaded(
    const rocksdb_store_config& cfg) {
  if (cfg.path.empty()) return error{errc::invalid_config, "L3 store: the path is empty"};
  if (cfg.capacity_bytes == 0)
    return error{errc::invalid_config, "L3 store: capacity must be positive"};
  if (cfg.segment_bytes == 0)
    return error{errc::invalid_config, "L3 store: segment_bytes must be positive"};
  if (!(cfg.gc_dead_fraction > 0.0 && cfg.gc_dead_fraction <= 1.0))
    return error{errc::invalid_config, "L3 store: gc_dead_fraction must be in (0, 1]"};
  bool corrupt = false;
  auto st = open_as_is(cfg, corrupt);
  if (st || !corrupt || !cfg.quarantine_corrupt) return st;
  return quarantine(cfg, st.err());  // the failed store is closed: its lock is released
}

result<std::unique_ptr<rocksdb_store>> rocksdb_store::load(std::unique_ptr<rocksdb_store> st,
                                                           const rocksdb_load_options& options) {
  bool corrupt = false;
  status s = st->load_index(corrupt, options);
  if (s) return st;
  const rocksdb_store_config cfg = st->cfg_;
  st.reset();  // closed: its lock released
  if (!corrupt || !cfg.quarantine_corrupt) return s.err();
  auto fresh = quarantine(cfg, s.err());
  if (!fresh) return fresh;
  return rocksdb_store::load(std::move(*fresh), options);  // empty: nothing to read
}

result<std::unique_ptr<rocksdb_store>> rocksdb_store::quarantine(const rocksdb_store_config& cfg,
                                                                 const error& why) {
  const std::string aside = cfg.path + ".corrupt";
  std::error_code ec;
  std::filesystem::remove_all(aside, ec);
  std::filesystem::rename(cfg.path, aside, ec);
  if (ec)
    return error{errc::io_error,
                 why.message + "; moving it aside to " + aside + " failed: " + ec.message()};
  // The index stays for inspection; the values, unreadable without it, would only hold
  // up to the whole capacity of the disk the fresh store needs.
  std::filesystem::remove_all(aside + "/values", ec);
  bool corrupt = false;
  auto fresh = open_as_is(cfg, corrupt);
  if (!fresh) return fresh;
  (*fresh)->quarantined_ =
      why.message + "; its index moved to " + aside + ", the store starts empty";
  return fresh;
}

result<std::unique_ptr<rocksdb_store>> rocksdb_store::open_as_is(const rocksdb_store_config& cfg,
                                                                 bool& corrupt) {
  const auto failed = [&corrupt](const rocksdb::Status& s, std::string_view what) {
    corrupt = corrupt || damaged(s);
    return io(s, what);
  };
  std::error_code ec;
  // The index directory too: RocksDB logs an error for one it has to create.
  std::filesystem::create_directories(cfg.path + "/index", ec);
  if (ec) return error{errc::io_error, "L3 store: cannot create " + cfg.path + ": " + ec.message()};
  keep_to_owner(cfg.path);

  rocksdb::DBOptions db_opts;
  db_opts.create_if_missing = true;
  db_opts.create_missing_column_families = true;
  db_opts.max_background_jobs = 2;
  db_opts.avoid_flush_during_shutdown = false;                // with no WAL, close must flush
  db_opts.allow_concurrent_memtable_write = false;            // a vector memtable takes one writer
  db_opts.info_log = std::make_shared<node_log_forwarder>();  // no LOG file on the store's disk
  // Write errors retryable: a flush that hit one is retried by RocksDB, not fatal
  // (storage/rocksdb_retryable_writes.hpp).
  std::unique_ptr<rocksdb::Env> env = rocksdb::NewCompositeEnv(retryable_write_errors(
      cfg.env != nullptr ? cfg.env->GetFileSystem() : rocksdb::FileSystem::Default()));
  db_opts.env = env.get();
  auto health = std::make_shared<index_health>();
  db_opts.listeners.push_back(health);
  std::vector<std::string> existing;
  if (rocksdb::DB::ListColumnFamilies(db_opts, cfg.path, &existing).ok() &&
      std::find(existing.begin(), existing.end(), "pages") != existing.end())
    return error{errc::invalid_config,
                 "L3 store: " + cfg.path +
                     " holds format 'hybridcache-l3/1' (values inside RocksDB), this build "
                     "reads '" +
                     std::string(format_value) +
                     "'; remove it or point --data-dir at another directory"};
  std::vector<rocksdb::ColumnFamilyDescriptor> families{
      {rocksdb::kDefaultColumnFamilyName, family_options(cfg)},
      {"metadata", family_options(cfg)},
  };
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* raw = nullptr;
  rocksdb::Status s = rocksdb::DB::Open(db_opts, cfg.path + "/index", families, &handles, &raw);
  if (!s.ok()) {
    if (auto held = held_by_another_process(s, cfg.path)) return std::move(*held);
    return failed(s, "L3 store: cannot open " + cfg.path);
  }

  std::unique_ptr<rocksdb_store> st(new rocksdb_store());
  st->env_ = std::move(env);
  st->health_ = std::move(health);
  st->cfg_ = cfg;
  st->db_.reset(raw);
  st->default_ = handles[0];
  st->meta_ = handles[1];
  st->usage_.capacity = cfg.capacity_bytes;

  std::string marker;
  s = st->db_->Get(read_options(), st->meta_, slice(format_key), &marker);
  if (s.IsNotFound()) {
    s = st->db_->Put(write_options(), st->meta_, slice(format_key), slice(format_value));
    if (!s.ok()) return failed(s, "L3 store: cannot write the format marker");
  } else if (!s.ok()) {
    return failed(s, "L3 store: cannot read the format marker");
  } else if (marker != format_value) {
    return error{errc::invalid_config, "L3 store: " + cfg.path + " holds format '" + marker +
                                           "', this build reads '" + std::string(format_value) +
                                           "'; remove it or point --data-dir at another directory"};
  }
  auto segs = value_segments::open({cfg.path + "/values", cfg.segment_bytes, cfg.direct_io});
  if (!segs) return segs.err();
  st->segments_ = std::move(*segs);
  return st;
}

void rocksdb_store::flush_loop() {
  name_this_thread("hc-l3-flush");
  using steady_clock = std::chrono::steady_clock;
  const bool timed = cfg_.flush_interval.count() > 0;
  auto next_flush = steady_clock::now() + cfg_.flush_interval;
  auto next_flush_while_failing = steady_clock::now() + std::chrono::minutes(1);
  std::unique_lock lk(flush_mu_);
  for (;;) {
    if (background_held_) {  // hold_background(): no work until released or closed
      flush_cv_.wait(lk, [this] { return stopping_ || !background_held_; });
      if (stopping_) return;
      next_flush = steady_clock::now() + cfg_.flush_interval;
    }
    auto woken = [this] { return stopping_ || background_held_ || gc_wanted_ || recency_wanted_; };
    if (timed) {
      flush_cv_.wait_until(lk, next_flush, woken);
    } else {
      flush_cv_.wait(lk, woken);
    }
    if (stopping_) return;
    if (background_held_) continue;
    const bool gc = std::exchange(gc_wanted_, false);
    const bool recency = std::exchange(recency_wanted_, false);
    lk.unlock();  // the work below takes mu_; wake_gc and touch_unlocking take flush_mu_ under mu_
    if (recency) drain_recency();
    if (gc) (void)collect_garbage();
    if (timed && steady_clock::now() >= next_flush) {
      next_flush = steady_clock::now() + cfg_.flush_interval;
      drain_recency();
      keep_min_free();
      // Values first, then the index that names them. db_ lives until close() joined this
      // thread. A failed sync or flush is retried next time.
      // While the index cannot write to its disk, RocksDB retries its own flush: another
      // here would only pile up memtables until writes stop — but one a minute, so that a
      // recovery RocksDB did not announce cannot stop these flushes for good.
      const bool failing = health_->failing();
      if ((!failing || steady_clock::now() >= next_flush_while_failing) && dirty_.exchange(false)) {
        if (failing) next_flush_while_failing = steady_clock::now() + std::chrono::minutes(1);
        rocksdb::FlushOptions fo;
        fo.allow_write_stall = true;  // never wait behind the writers it is flushing for
        if (!segments_->sync() || !db_->Flush(fo, {meta_}).ok())
          dirty_ = true;
        else if (failing)
          health_->writes_again();
      }
    }
    lk.lock();
  }
}

bool rocksdb_store::index_failing() const noexcept {
  return health_ && health_->failing();
}

void rocksdb_store::wake_gc() {
  {
    std::lock_guard fl(flush_mu_);
    gc_wanted_ = true;
  }
  flush_cv_.notify_all();
}

std::uint64_t rocksdb_store::index_records_estimate() const {
  std::uint64_t estimate = 0;
  if (!db_->GetIntProperty(meta_, "rocksdb.estimate-num-keys", &estimate)) return 0;
  return estimate;
}

status rocksdb_store::load_index(bool& corrupt, const rocksdb_load_options& options) {
  // Sized once: growing the table by rehashing took a third of the time (BENCHMARKS.md §13).
  const std::uint64_t estimate = index_records_estimate();
  // An estimate is an estimate: never more than the index memory allows.
  const std::uint64_t most =
      cfg_.index_memory_bytes ? cfg_.index_memory_bytes / index_bytes_per_value(1) : 1ull << 32;
  index_.reserve(static_cast<std::size_t>(std::min(estimate, most)));
  // A scan reads every table block once: none of them is worth RocksDB's block cache.
  rocksdb::ReadOptions scan = read_options();
  scan.fill_cache = false;
  scan.readahead_size = 2u << 20;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(scan, meta_));
  const std::string prefix(1, record_prefix);
  std::vector<std::string> stale;  // records naming bytes that are not there
  std::uint64_t records = 0;
  // Nothing appends yet: the segments' sizes hold for the whole scan.
  const std::map<std::uint64_t, std::uint64_t> segment_sizes = segments_->sizes();
  for (it->Seek(slice(prefix)); it->Valid() && it->key().starts_with(prefix); it->Next()) {
    if (++records % 65536 == 0 && options.stop != nullptr &&
        options.stop->load(std::memory_order_relaxed))
      return {errc::io_error,
              "L3 store: loading the index stopped after " + std::to_string(records) + " records"};
    if (options.progress && options.progress_every > 0 && records % options.progress_every == 0)
      options.progress(records, estimate);
    const rocksdb::Slice v = it->value();
    const std::string_view full(it->key().data() + 1, it->key().size() - 1);
    if (v.size() != record_bytes || full.empty()) continue;  // not ours; ignored
    std::uint64_t f[5];
    std::memcpy(f, v.data(), record_bytes);
    entry e;
    e.size = f[0];
    e.seq = f[1];
    e.at = {f[2], f[3]};
    e.checksum = f[4];
    const auto seg = segment_sizes.find(e.at.segment);
    if (e.size < l3::value_header_bytes || seg == segment_sizes.end() ||
        e.at.offset + segments_->footprint(e.size - l3::value_header_bytes) > seg->second) {
      stale.push_back(it->key().ToString());
      continue;
    }
    next_seq_ = std::max(next_seq_, e.seq + 1);
    usage_.bytes += e.size;
    usage_.values += 1;
    index_bytes_ += index_bytes_per_value(full.size());
    add_live_locked(e.at, e.size);
    index_.insert(full, e);
  }
  index_.order_by_seq();
  if (!it->status().ok()) {
    corrupt = corrupt || damaged(it->status());
    return io(it->status(), "L3 store: cannot read the index");
  }
  it.reset();
  if (!stale.empty()) {
    rocksdb::WriteBatch batch;
    for (const std::string& k : stale)
      (void)batch.Delete(meta_, slice(k));
    (void)db_->Write(write_options(), &batch);  // retried at the next open if it fails
    dirty_ = true;
  }
  // Segments nothing points at (their records were lost in a crash, or all dropped).
  for (const auto& [id, size] : segment_sizes)
    if (!live_.count(id)) segments_->remove(id);
  // A capacity or index limit lowered since the last run takes effect now.
  if (status d = evict_for_locked(0, 0); !d) return d;
  if (!gc_candidates_locked().empty()) gc_wanted_ = true;  // the thread starts after this
  {
    rocksdb::WriteBatch evicted;  // nothing else runs yet: mu_ is not needed
    keep_min_free_into_locked(evicted);
    (void)write_index_locked(evicted);  // a failed write only leaves the values' records
  }
  flusher_ = std::thread([this] { flush_loop(); });
  return {};
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
  std::lock_guard gl(gc_mu_);
  std::lock_guard lk(mu_);
  { std::lock_guard w(index_write_mu_); }  // a put's index write in flight lands first
  if (!db_) return {};
  {
    rocksdb::WriteBatch recency;
    (void)batch_recency_locked(recency);
    if (recency.Count() != 0) (void)write_index_locked(recency);  // lost: values look older
  }
  // Values before the index that names them (none when open failed before the segments).
  const status synced = segments_ ? segments_->sync() : status{};
  rocksdb::FlushOptions fo;
  rocksdb::Status s = db_->Flush(fo, {meta_});
  for (rocksdb::ColumnFamilyHandle* h : {meta_, default_})
    (void)db_->DestroyColumnFamilyHandle(h);
  rocksdb::Status c = db_->Close();
  db_.reset();
  if (!synced) return synced;
  if (!s.ok()) return io(s, "L3 store: flush at close failed");
  if (!c.ok()) return io(c, "L3 store: close failed");
  return {};
}

void rocksdb_store::add_live_locked(value_location at, std::uint64_t size) {
  live_[at.segment] += segments_->footprint(size - l3::value_header_bytes);
}

void rocksdb_store::remove_live_locked(value_location at, std::uint64_t size) {
  auto it = live_.find(at.segment);
  if (it == live_.end()) return;
  it->second -= std::min(it->second, segments_->footprint(size - l3::value_header_bytes));
  if (it->second > 0) {
    const auto seg = segments_->segment(at.segment);
    if (seg && at.segment != segments_->active() &&
        static_cast<double>(seg->size() - std::min(seg->size(), it->second)) >=
            cfg_.gc_dead_fraction * static_cast<double>(seg->size()))
      wake_gc();
    return;
  }
  live_.erase(it);
  segments_->remove(at.segment);  // a no-op for the active segment
}

std::vector<std::uint64_t> rocksdb_store::gc_candidates_locked() const {
  std::vector<std::pair<std::uint64_t, std::uint64_t>> dead;  // (dead bytes, segment)
  const std::uint64_t active = segments_->active();
  for (const auto& [id, size] : segments_->sizes()) {
    if (id == active) continue;
    const auto it = live_.find(id);
    const std::uint64_t live = it == live_.end() ? 0 : std::min(it->second, size);
    if (size == 0 ||
        static_cast<double>(size - live) >= cfg_.gc_dead_fraction * static_cast<double>(size))
      dead.emplace_back(size - live, id);
  }
  std::sort(dead.rbegin(), dead.rend());
  std::vector<std::uint64_t> out;
  out.reserve(dead.size());
  for (const auto& d : dead)
    out.push_back(d.second);
  return out;
}

std::size_t rocksdb_store::collect_garbage() {
  std::vector<std::uint64_t> todo;
  {
    std::lock_guard lk(mu_);
    if (!db_) return 0;
    todo = gc_candidates_locked();
  }
  std::size_t removed = 0;
  for (std::uint64_t id : todo)
    removed += compact(id) ? 1 : 0;
  return removed;
}

bool rocksdb_store::compact(std::uint64_t id) {
  std::lock_guard gl(gc_mu_);
  const auto seg = segments_->segment(id);
  if (!seg) return false;
  // The segment's values a batch at a time: the store's lock is held to list a batch (from
  // the segment's own list, not a walk of the whole index) and for each value's move, and
  // what a compaction holds is one batch, whatever the segment holds.
  std::vector<gc_value> batch;
  std::string keys;
  std::vector<std::byte> buf;
  for (;;) {
    if (!list_gc_batch(id, batch, keys)) return false;
    if (batch.empty()) break;
    std::size_t left = 0;  // values of the batch that left the segment
    for (const gc_value& v : batch) {
      const std::string_view full(keys.data() + v.key_at, v.key_size);
      const gc_move m = move_live_value(*seg, id, full, v.e, buf);
      if (m == gc_move::stop) return false;
      left += m == gc_move::left;
    }
    if (left == 0) break;  // nothing moved: what stays is retried at the next collection
  }
  std::lock_guard lk(mu_);
  if (live_.count(id)) return false;  // values left behind: their copies' segment vanished
  segments_->remove(id);
  return true;
}

bool rocksdb_store::list_gc_batch(std::uint64_t segment, std::vector<gc_value>& batch,
                                  std::string& keys) {
  batch.clear();
  keys.clear();
  {
    std::lock_guard lk(mu_);
    if (!db_) return false;
    for (const record* r = index_.first_in_segment(segment);
         r != nullptr && batch.size() < gc_batch_values; r = r->next_in_segment()) {
      batch.push_back({keys.size(), r->key().size(), r->e});
      keys.append(r->key());
    }
  }
  // Read in file order (a loaded store lists a segment's values in key order).
  std::sort(batch.begin(), batch.end(),
            [](const gc_value& a, const gc_value& b) { return a.e.at.offset < b.e.at.offset; });
  return true;
}

rocksdb_store::gc_move rocksdb_store::move_live_value(segment_file& seg, std::uint64_t segment,
                                                      std::string_view full, const entry& e,
                                                      std::vector<std::byte>& buf) {
  buf.resize(e.size - l3::value_header_bytes);
  status rd = seg.read(e.at.offset, buf);
  bool corrupt = !rd && rd.err().code == errc::parse_error;
  if (rd) corrupt = l3::payload_checksum(buf) != e.checksum;
  if (!rd && !corrupt) return gc_move::stop;  // an I/O error: leave the segment for later
  value_location to{};
  if (!corrupt) {
    auto app = segments_->append(buf);
    if (!app) return gc_move::stop;
    to = *app;
  }
  std::unique_lock lk(mu_);
  if (!db_) return gc_move::stop;
  record* r = index_.find(full);
  if (r == nullptr || !(r->e.at == e.at))  // gone meanwhile
    return r == nullptr || r->e.at.segment != segment ? gc_move::left : gc_move::stayed;
  if (!corrupt && !segments_->segment(to.segment)) return gc_move::stayed;  // copy's segment gone
  if (corrupt) {
    ++usage_.corrupt;
    (void)drop_unlocking(lk, std::string(full));
    return gc_move::left;
  }
  remove_live_locked(r->e.at, r->e.size);
  index_.relocate(r, to);
  r->e.verified = true;
  ++moved_;
  add_live_locked(to, r->e.size);
  rocksdb::WriteBatch batch;
  batch_record(batch, r);
  // A failed write leaves the record naming the old place: the value is lost once that
  // segment goes, as a crash before the next flush would lose it.
  (void)write_index_unlocking(lk, batch);
  return gc_move::left;
}

void rocksdb_store::touch_unlocking(std::unique_lock<std::mutex>& lk, record* r) {
  r->e.seq = next_seq_++;
  index_.make_most_recent(r);
  // Recency survives a restart, written in batches; a lost update only makes the value
  // look older.
  if (r->e.recency_slot == 0) {
    recency_pending_.push_back(r);
    r->e.recency_slot = static_cast<std::uint32_t>(recency_pending_.size());
  }
  // At most 2^28: the list stays under 4 × batch + 1 entries, so a slot fits 32 bits.
  const std::size_t batch = std::clamp<std::size_t>(cfg_.recency_batch, 1, std::size_t{1} << 28);
  if (recency_pending_.size() < batch) return;
  // The background thread writes them a chunk per turn of the lock; a caller writes one
  // itself only when the thread is far behind (busy compacting), which bounds the list.
  if (recency_pending_.size() >= 4 * batch) {
    rocksdb::WriteBatch chunk;
    (void)batch_recency_locked(chunk, recency_chunk);
    (void)write_index_unlocking(lk, chunk);  // a failed write only loses recency
  } else if (!recency_woken_) {
    recency_woken_ = true;
    {
      std::lock_guard fl(flush_mu_);
      recency_wanted_ = true;
    }
    flush_cv_.notify_all();
  }
}

void rocksdb_store::unlist_recency_locked(record* r) noexcept {
  if (r->e.recency_slot == 0) return;
  // The last one takes its place: the list's order does not matter.
  record* last = recency_pending_.back();
  recency_pending_[r->e.recency_slot - 1] = last;
  last->e.recency_slot = r->e.recency_slot;
  recency_pending_.pop_back();
  r->e.recency_slot = 0;
}

bool rocksdb_store::batch_recency_locked(rocksdb::WriteBatch& batch, std::size_t most) {
  for (std::size_t n = 0; n < most && !recency_pending_.empty(); ++n) {
    record* r = recency_pending_.back();
    recency_pending_.pop_back();
    r->e.recency_slot = 0;
    batch_record(batch, r);
  }
  return !recency_pending_.empty();
}

void rocksdb_store::drain_recency() {
  for (bool more = true; more;) {
    rocksdb::WriteBatch chunk;
    std::unique_lock lk(mu_);
    if (!db_) return;
    const auto start = std::chrono::steady_clock::now();
    recency_woken_ = false;  // touches from now on may wake the thread again
    more = batch_recency_locked(chunk, recency_chunk);
    const auto held = std::chrono::steady_clock::now() - start;
    (void)write_index_unlocking(lk, chunk);  // a failed write only loses recency
    // Leave the lock free for at least as long as the chunk held it: a caller woken by
    // the unlock needs tens of microseconds to run, and would find it taken again at once.
    if (more) std::this_thread::sleep_for(held);
  }
}

rocksdb::Status rocksdb_store::write_index_locked(rocksdb::WriteBatch& batch) {
  std::lock_guard w(index_write_mu_);
  return write_index_now(batch);
}

rocksdb::Status rocksdb_store::write_index_unlocking(std::unique_lock<std::mutex>& lk,
                                                     rocksdb::WriteBatch& batch) {
  std::lock_guard w(index_write_mu_);
  lk.unlock();
  if (unlocked_write_hook_) std::exchange(unlocked_write_hook_, {})();
  return write_index_now(batch);
}

rocksdb::Status rocksdb_store::write_index_now(rocksdb::WriteBatch& batch) {
  if (batch.Count() == 0) return rocksdb::Status::OK();
  if (failing_index_writes_ > 0) {
    --failing_index_writes_;
    return rocksdb::Status::IOError("an index write failure injected by a test");
  }
  rocksdb::Status s = db_->Write(write_options(health_->failing()), &batch);
  // After the write: a timed flush that saw dirty_ false leaves nothing of it unflushed.
  dirty_ = true;
  return s;
}

void rocksdb_store::fail_index_writes(std::size_t n) {
  std::lock_guard w(index_write_mu_);
  failing_index_writes_ = n;
}

void rocksdb_store::before_next_unlocked_write(std::function<void()> hook) {
  std::lock_guard w(index_write_mu_);
  unlocked_write_hook_ = std::move(hook);
}

void rocksdb_store::hold_background(bool held) {
  {
    std::lock_guard fl(flush_mu_);
    background_held_ = held;
  }
  flush_cv_.notify_all();
}

void rocksdb_store::evict_into_locked(std::uint64_t bytes, std::uint64_t index,
                                      rocksdb::WriteBatch& batch) {
  const std::uint64_t ix_limit = cfg_.index_memory_bytes ? cfg_.index_memory_bytes : UINT64_MAX;
  while (usage_.bytes + bytes > usage_.capacity || index_bytes_ + index > ix_limit) {
    record* r = index_.least_recent();
    if (r == nullptr) break;
    unindex_locked(r, batch);
    ++usage_.evicted;
  }
}

status rocksdb_store::evict_for_locked(std::uint64_t bytes, std::uint64_t index) {
  rocksdb::WriteBatch batch;
  evict_into_locked(bytes, index, batch);
  const rocksdb::Status s = write_index_locked(batch);
  if (!s.ok()) return io(s, "L3 store: delete failed");
  return {};
}

void rocksdb_store::unindex_locked(record* r, rocksdb::WriteBatch& batch) {
  const auto key = record_key_parts(r->key());
  (void)batch.Delete(meta_, rocksdb::SliceParts(key.data(), 2));  // copied before r goes
  usage_.bytes -= r->e.size;
  usage_.values -= 1;
  index_bytes_ -= index_bytes_per_value(r->key().size());
  const entry e = r->e;
  unlist_recency_locked(r);
  index_.erase(r);
  ++erasures_;
  remove_live_locked(e.at, e.size);
}

status rocksdb_store::drop_unlocking(std::unique_lock<std::mutex>& lk, const std::string& full) {
  rocksdb::WriteBatch batch;
  if (record* r = index_.find(full); r != nullptr) unindex_locked(r, batch);
  const rocksdb::Status s = write_index_unlocking(lk, batch);
  if (!s.ok()) return io(s, "L3 store: delete failed");
  return {};
}

void rocksdb_store::batch_record(rocksdb::WriteBatch& batch, const record* r) const {
  // The value little-endian (x86-64 and aarch64 hosts only).
  const entry& e = r->e;
  const std::uint64_t f[5] = {e.size, e.seq, e.at.segment, e.at.offset, e.checksum};
  const auto key = record_key_parts(r->key());
  const rocksdb::Slice value(reinterpret_cast<const char*>(f), record_bytes);
  (void)batch.Put(meta_, rocksdb::SliceParts(key.data(), 2), rocksdb::SliceParts(&value, 1));
}

void rocksdb_store::keep_min_free() {
  std::unique_lock lk(mu_);
  if (db_) keep_min_free_unlocking(lk);
}

void rocksdb_store::keep_min_free_unlocking(std::unique_lock<std::mutex>& lk) {
  rocksdb::WriteBatch evicted;
  keep_min_free_into_locked(evicted);
  (void)write_index_unlocking(lk, evicted);  // a failed write only leaves the values' records
}

void rocksdb_store::keep_min_free_into_locked(rocksdb::WriteBatch& evicted) {
  written_since_space_check_ = 0;
  if (cfg_.min_free_bytes == 0) return;
  struct statvfs fs {};
  if (::statvfs(cfg_.path.c_str(), &fs) != 0) return;  // nothing to go by: keep the capacity
  const std::uint64_t avail = static_cast<std::uint64_t>(fs.f_bavail) * fs.f_frsize;
  // What the live values may take: what they take now plus what is free beyond the reserve.
  const std::uint64_t room = usage_.bytes + avail;
  const std::uint64_t fits = room > cfg_.min_free_bytes ? room - cfg_.min_free_bytes : 0;
  const std::uint64_t capacity = std::min(cfg_.capacity_bytes, fits);
  // Logged with hysteresis: on a disk whose free space hovers near capacity + reserve the
  // capacity moved by a few MiB either way at every check, and each move was a line. A
  // shortfall of 1/64 of the capacity or more is logged, again when it deepens by 1/8,
  // and its end once the whole capacity is back.
  if (!logged_short_ ? capacity + (cfg_.capacity_bytes >> 6) <= cfg_.capacity_bytes &&
                           capacity < cfg_.capacity_bytes
                     : capacity + (capacity >> 3) < logged_capacity_) {
    log::info("L3 store: capacity " + std::to_string(capacity >> 20) + " MiB of the " +
              std::to_string(cfg_.capacity_bytes >> 20) +
              " MiB configured: what its disk takes while " +
              std::to_string(cfg_.min_free_bytes >> 20) + " MiB stay free (" +
              std::to_string(avail >> 20) + " MiB free now)");
    logged_short_ = true;
    logged_capacity_ = capacity;
  } else if (logged_short_ && capacity == cfg_.capacity_bytes) {
    log::info("L3 store: capacity back to the " + std::to_string(cfg_.capacity_bytes >> 20) +
              " MiB configured");
    logged_short_ = false;
  }
  usage_.capacity = capacity;
  evict_into_locked(0, 0, evicted);
}

std::size_t rocksdb_store::unindex_segment_locked(std::uint64_t segment, std::string_view prefix,
                                                  rocksdb::WriteBatch& batch) {
  std::size_t n = 0;
  for (record* r = index_.first_in_segment(segment); r != nullptr;) {
    record* next = r->next_in_segment();           // r may go: the rest of the list stays
    if (r->key().substr(1).starts_with(prefix)) {  // past the pool byte
      unindex_locked(r, batch);
      ++n;
    }
    r = next;
  }
  return n;
}

bool rocksdb_store::free_oldest_segment_locked() {
  const auto sizes = segments_->sizes();
  if (sizes.empty()) return false;
  const std::uint64_t oldest = sizes.begin()->first;
  const std::size_t values = index_.count_in_segment(oldest);
  if (values == 0 && oldest == segments_->active()) return false;  // nothing to free
  if (oldest == segments_->active()) segments_->seal();
  usage_.evicted += values;
  ++disk_full_evictions_;
  log::warn("L3 store: the disk is full; dropped the " + std::to_string(values) +
            " values of its oldest segment (" + std::to_string(sizes.begin()->second) +
            " bytes) to make room (the disk filled before the store reached its capacity: "
            "other files, or no min_free_bytes kept free)");
  rocksdb::WriteBatch batch;
  (void)unindex_segment_locked(oldest, "", batch);  // removes the segment once nothing is live
  (void)write_index_locked(batch);
  segments_->remove(oldest);  // and if its index deletes failed: its bytes are dead
  return true;
}

status rocksdb_store::publish(std::unique_lock<std::mutex>& lk, const std::string& full,
                              std::uint64_t size, value_location at, std::uint64_t checksum) {
  // The evicted values' deletes and the value's record: one write.
  rocksdb::WriteBatch batch;
  evict_into_locked(size, index_bytes_per_value(full.size()), batch);
  entry e;
  e.size = size;
  e.seq = next_seq_++;
  e.at = at;
  e.checksum = checksum;
  e.verified = true;
  const record* r = index_.insert(full, e);
  usage_.bytes += e.size;
  usage_.values += 1;
  index_bytes_ += index_bytes_per_value(full.size());
  add_live_locked(at, size);
  batch_record(batch, r);
  // The value is served from now on; its record is written with the lock dropped.
  const rocksdb::Status s = write_index_unlocking(lk, batch);
  if (s.ok()) return {};
  // After a flush failed for lack of space RocksDB refuses writes until it recovered on
  // its own (it checks every 5 s for write_buffer_bytes of free space). The value goes
  // (its bytes are dead space), unless it was dropped or moved meanwhile.
  lk.lock();
  if (db_) {
    if (const record* now = index_.find(full); now != nullptr && now->e.at == at)
      (void)drop_unlocking(lk, full);
  }
  return io(s, "L3 store: index write failed");
}

status rocksdb_store::set(l3_pool pool, std::string_view key, std::span<const std::byte> value) {
  if (status ok = l3_check_set(key, value.size(), cfg_.capacity_bytes); !ok) return ok;
  const std::uint64_t need = l3::value_header_bytes + value.size();
  const std::string full = full_key(pool, key);
  std::uint64_t drops_seen = 0;  // disk_full_evictions_ when this put last looked
  {
    std::unique_lock lk(mu_);
    if (!db_) return {errc::io_error, "L3 store is closed"};
    if (record* r = index_.find(full); r != nullptr) {
      touch_unlocking(lk, r);  // idempotent: the first value stays, recency refreshes
      return {};
    }
    if (need > usage_.capacity)  // short of disk space (min_free_bytes)
      return {errc::out_of_memory,
              "L3 value of " + std::to_string(need) + " bytes: the store's capacity is " +
                  std::to_string(usage_.capacity) + " bytes while its disk is short of space"};
    drops_seen = disk_full_evictions_;
    if (cfg_.min_free_bytes > 0 && (written_since_space_check_ += need) >=
                                       std::min<std::uint64_t>(cfg_.min_free_bytes / 4, 64 << 20))
      keep_min_free_unlocking(lk);  // the last use of lk in this block
  }
  // The checksum and the write run outside the lock: one pwrite of the payload.
  const std::uint64_t checksum = l3::payload_checksum(value);
  for (;;) {
    auto at = segments_->append(value);
    if (!at && at.err().code == errc::out_of_memory) {  // the disk is full: make room
      std::lock_guard lk(mu_);
      if (!db_) return at.err();
      // Puts that ran out of space together free one segment, not one each.
      if (disk_full_evictions_ == drops_seen && !free_oldest_segment_locked()) return at.err();
      drops_seen = disk_full_evictions_;
      continue;
    }
    if (!at) return at.err();
    std::unique_lock lk(mu_);
    if (!db_) return {errc::io_error, "L3 store is closed"};
    if (record* r = index_.find(full); r != nullptr) {  // set meanwhile: ours is dead
      touch_unlocking(lk, r);
      return {};
    }
    // A write in flight is not live yet: its segment, sealed meanwhile by other writes, may
    // have been removed (nothing live) or compacted away. Segments are removed only under
    // mu_, so one that is there now stays while the index counts this value in it.
    if (segments_->segment(at->segment)) return publish(lk, full, need, *at, checksum);
  }
}

template <class DstFor>
status rocksdb_store::read_value(l3_pool pool, std::string_view key, DstFor&& dst_for) {
  // The index key, built without an allocation per get.
  thread_local std::string full;
  full.assign(1, static_cast<char>(pool));
  full.append(key);
  entry e;
  record* held = nullptr;  // valid while erasures_ stays as it was (records do not move)
  std::uint64_t erasures = 0;
  std::shared_ptr<segment_file> seg;
  {
    std::lock_guard lk(mu_);
    if (!db_) return {errc::io_error, "L3 store is closed"};
    held = index_.find(full);
    if (held == nullptr) return {errc::not_found, "L3 key not found"};
    erasures = erasures_;
    e = held->e;
    // Taken under mu_: a segment that holds a live value is not removed, and once held it
    // stays readable even if garbage collection moves the value and removes it meanwhile.
    seg = segments_->segment(e.at.segment);
  }
  auto dst = dst_for(e.size - l3::value_header_bytes);
  if (!dst) return dst.err();  // the caller's buffer does not fit: the value stays
  status rd = seg ? seg->read(e.at.offset, *dst) : status{errc::parse_error, "L3 segment is gone"};
  bool corrupt = !rd && rd.err().code == errc::parse_error;
  std::string why = corrupt ? rd.err().message : "";
  if (rd && (!e.verified || cfg_.verify_every_read) && l3::payload_checksum(*dst) != e.checksum) {
    corrupt = true;
    why = "L3 value fails its checksum";
  }
  std::unique_lock lk(mu_);
  if (!db_) return {errc::io_error, "L3 store is closed"};
  if (erasures_ != erasures) held = index_.find(full);  // something was dropped meanwhile
  // Evicted or erased meanwhile (and maybe set again, to other bytes): a miss.
  if (!held || held->e.checksum != e.checksum || held->e.size != e.size)
    return {errc::not_found, "L3 key not found"};
  const bool moved = !(held->e.at == e.at);  // by garbage collection: the same bytes
  if (corrupt) {
    if (moved) return {errc::not_found, "L3 value moved while it was read; read it again"};
    ++usage_.corrupt;
    (void)drop_unlocking(lk, full);
    return {errc::not_found, "L3 value was corrupt and is deleted: " + why};
  }
  if (!rd) return rd;
  if (!moved) held->e.verified = true;
  touch_unlocking(lk, held);
  return {};
}

status rocksdb_store::get(l3_pool pool, std::string_view key, std::vector<std::byte>& out) {
  out.clear();
  status st = read_value(pool, key, [&](std::uint64_t n) -> result<std::span<std::byte>> {
    out.resize(n);
    return std::span<std::byte>(out);
  });
  if (!st) out.clear();  // nothing of a failed read is served
  return st;
}

status rocksdb_store::get_into(l3_pool pool, std::string_view key, std::span<std::byte> dst) {
  return read_value(pool, key, [&](std::uint64_t n) -> result<std::span<std::byte>> {
    if (n != dst.size()) return l3_size_mismatch(key, n, dst.size());
    return dst;
  });
}

bool rocksdb_store::exists(l3_pool pool, std::string_view key) {
  std::lock_guard lk(mu_);
  return index_.find(full_key(pool, key)) != nullptr;
}

status rocksdb_store::erase(l3_pool pool, std::string_view key) {
  const std::string full = full_key(pool, key);
  std::unique_lock lk(mu_);
  if (!db_) return {errc::io_error, "L3 store is closed"};
  record* r = index_.find(full);
  if (r == nullptr) return {errc::not_found, "L3 key not found"};
  rocksdb::WriteBatch batch;
  unindex_locked(r, batch);
  const rocksdb::Status s = write_index_unlocking(lk, batch);
  if (!s.ok()) return io(s, "L3 store: delete failed");
  return {};
}

result<std::size_t> rocksdb_store::erase_prefix(std::string_view prefix) {
  // A segment per turn of the store's lock, not the whole index in one (a store of
  // millions of values would stall every call for seconds). No compaction runs meanwhile,
  // so no value moves from a segment not yet visited into one already visited; a value
  // put during the clear may stay, as one put just after it would.
  std::lock_guard gl(gc_mu_);
  std::vector<std::uint64_t> ids;
  {
    std::lock_guard lk(mu_);
    if (!db_) return error{errc::io_error, "L3 store is closed"};
    ids = index_.segment_ids();
  }
  std::size_t removed = 0;
  for (std::uint64_t id : ids) {
    std::unique_lock lk(mu_);
    if (!db_) return error{errc::io_error, "L3 store is closed"};
    rocksdb::WriteBatch batch;
    const std::size_t n = unindex_segment_locked(id, prefix, batch);
    const rocksdb::Status s = write_index_unlocking(lk, batch);
    if (!s.ok()) return io(s, "L3 store: delete failed");
    removed += n;
  }
  return removed;
}

l3_usage rocksdb_store::usage() const {
  std::lock_guard lk(mu_);
  l3_usage u = usage_;
  u.index_failing = index_failing();
  u.index_failures = health_ ? health_->failures() : 0;
  return u;
}

std::uint64_t rocksdb_store::segment_bytes_on_disk() const {
  std::uint64_t n = 0;
  for (const auto& [id, size] : segments_->sizes())
    n += size;
  return n;
}

std::uint64_t rocksdb_store::values_moved() const {
  std::lock_guard lk(mu_);
  return moved_;
}

std::uint64_t rocksdb_store::disk_full_evictions() const {
  std::lock_guard lk(mu_);
  return disk_full_evictions_;
}

std::size_t rocksdb_store::recency_pending() const {
  std::lock_guard lk(mu_);
  return recency_pending_.size();
}

std::string rocksdb_store::check_index() const {
  std::lock_guard lk(mu_);
  return index_.check();
}

std::size_t rocksdb_store::segment_count() const {
  return segments_->sizes().size();
}

status rocksdb_store::overwrite_stored(l3_pool pool, std::string_view key,
                                       std::span<const std::byte> bytes) {
  const std::string full = full_key(pool, key);
  std::lock_guard lk(mu_);
  record* r = index_.find(full);
  if (r == nullptr) return {errc::not_found, "L3 key not found"};
  // The payload part is written; the index keeps the header's checksum if the bytes decode,
  // one that cannot match if they do not.
  const std::size_t h = std::min(bytes.size(), l3::value_header_bytes);
  const std::span<const std::byte> payload = bytes.subspan(h);
  const bool good = l3::decode_value(bytes).ok();
  const std::uint64_t size = l3::value_header_bytes + payload.size();
  if (size == r->e.size) {  // in place
    const auto seg = segments_->segment(r->e.at.segment);
    if (!seg) return {errc::not_found, "L3 segment is gone"};
    if (status s = seg->overwrite(r->e.at.offset, payload); !s) return s;
  } else {  // another length: a new record, the index pointing at it
    auto at = segments_->append(payload);
    if (!at) return at.err();
    if (!segments_->segment(at->segment))
      return {errc::io_error, "L3 segment removed under a test overwrite"};
    remove_live_locked(r->e.at, r->e.size);
    usage_.bytes = usage_.bytes - r->e.size + size;
    index_.relocate(r, *at);
    r->e.size = size;
    add_live_locked(*at, size);
  }
  r->e.checksum = l3::payload_checksum(payload) ^ (good ? 0 : 1);
  r->e.verified = false;
  return {};
}

}  // namespace hc
