#include "storage/value_segments.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

namespace hc {
namespace {

constexpr std::uint64_t block = 4096;  // O_DIRECT alignment of offsets, lengths and buffers

std::uint64_t round_up(std::uint64_t n) noexcept {
  return (n + block - 1) / block * block;
}

/// The calling thread's 4 KiB-aligned bounce buffer for O_DIRECT transfers of unaligned
/// buffers, at least `n` bytes; null if it cannot grow. Kept across calls: a fresh 1 MiB
/// buffer per put cost 3.7 ms of page faults in a VM (BENCHMARKS.md §5.0).
std::byte* bounce_buffer(std::size_t n) {
  struct buffer {
    std::byte* p = nullptr;
    std::size_t size = 0;
    ~buffer() { std::free(p); }
  };
  thread_local buffer b;
  if (b.size < n) {
    void* v = nullptr;
    if (::posix_memalign(&v, block, n) != 0) return nullptr;
    std::free(b.p);
    b.p = static_cast<std::byte*>(v);
    b.size = n;
  }
  return b.p;
}

/// Full transfers: preadv / pwritev until done (short transfers continue, EINTR retries).
/// Returns the bytes moved (< total only at end of file for reads) or -errno.
template <class Op>
long long transfer_all(Op op, std::span<iovec> iov, std::uint64_t offset) {
  std::size_t total = 0, first = 0;
  while (first < iov.size()) {
    const ssize_t n = op(iov.data() + first, static_cast<int>(iov.size() - first),
                         static_cast<off_t>(offset + total));
    if (n < 0) {
      if (errno == EINTR) continue;
      return -errno;
    }
    if (n == 0) break;  // end of file
    total += static_cast<std::size_t>(n);
    std::size_t left = static_cast<std::size_t>(n);
    while (first < iov.size() && left >= iov[first].iov_len) {
      left -= iov[first].iov_len;
      ++first;
    }
    if (first < iov.size()) {
      iov[first].iov_base = static_cast<char*>(iov[first].iov_base) + left;
      iov[first].iov_len -= left;
    }
  }
  return static_cast<long long>(total);
}

bool aligned_for_direct(const void* p, std::size_t n) noexcept {
  return reinterpret_cast<std::uintptr_t>(p) % block == 0 && n % block == 0;
}

}  // namespace

error segment_io_error(std::string_view what, int err) {
  // Out of space either way: a full disk, or a full quota (the user's, or the directory's
  // project quota) — the store makes room by dropping its oldest values.
  if (err == ENOSPC) return {errc::out_of_memory, fmt::format("{}: disk full", what)};
  if (err == EDQUOT) return {errc::out_of_memory, fmt::format("{}: disk quota exceeded", what)};
  return {errc::io_error, fmt::format("{}: {}", what, std::strerror(err))};
}

segment_file::segment_file(std::uint64_t id, int fd, std::uint64_t size, bool direct) noexcept
    : id_(id), fd_(fd), size_(size), direct_(direct) {}

segment_file::~segment_file() {
  ::close(fd_);
}

status segment_file::read(std::uint64_t offset, std::span<std::byte> dst) const {
  const bool straight = !direct_ || aligned_for_direct(dst.data(), dst.size());
  std::byte* bounce = straight ? nullptr : bounce_buffer(round_up(dst.size()));
  if (!straight && !bounce)
    return {errc::out_of_memory, "L3 segment read: no memory for the bounce buffer"};
  std::byte* to = straight ? dst.data() : bounce;
  const std::size_t len = straight ? dst.size() : round_up(dst.size());
  iovec iov[1] = {{to, len}};
  const long long n = transfer_all(
      [this](const iovec* v, int c, off_t o) { return ::preadv(fd_, v, c, o); }, iov, offset);
  if (n < 0)
    return segment_io_error(fmt::format("L3 segment {:016x}: read", id_), static_cast<int>(-n));
  if (static_cast<std::uint64_t>(n) < dst.size())
    return {errc::parse_error, fmt::format("L3 segment {:016x} ends inside a record", id_)};
  if (!straight && !dst.empty()) std::memcpy(dst.data(), bounce, dst.size());
  return {};
}

status segment_file::overwrite(std::uint64_t offset, std::span<const std::byte> bytes) {
  // Through a descriptor of its own without O_DIRECT: a test hook, any offset and length.
  const std::string proc = fmt::format("/proc/self/fd/{}", fd_);
  const int fd = ::open(proc.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return segment_io_error("L3 segment overwrite", errno);
  iovec iov[1] = {{const_cast<std::byte*>(bytes.data()), bytes.size()}};
  const long long n = transfer_all(
      [fd](const iovec* v, int c, off_t o) { return ::pwritev(fd, v, c, o); }, iov, offset);
  ::close(fd);
  if (n < 0) return segment_io_error("L3 segment overwrite", static_cast<int>(-n));
  return {};
}

result<std::unique_ptr<value_segments>> value_segments::open(const value_segments_config& cfg) {
  std::error_code ec;
  std::filesystem::create_directories(cfg.dir, ec);
  if (ec)
    return error{errc::io_error, "L3 segments: cannot create " + cfg.dir + ": " + ec.message()};
  if (cfg.direct_io) {  // refused by some filesystems (tmpfs): say so at open, not at a put
    const std::string probe = cfg.dir + "/.odirect-probe";
    const int fd = ::open(probe.c_str(), O_CREAT | O_RDWR | O_DIRECT | O_CLOEXEC, 0600);
    const int err = errno;
    if (fd >= 0) ::close(fd);
    ::unlink(probe.c_str());
    if (fd < 0)
      return error{
          errc::invalid_argument,
          "L3 segments: " + cfg.dir + " refuses O_DIRECT (--l3-direct-io): " + std::strerror(err)};
  }
  std::unique_ptr<value_segments> vs(new value_segments(cfg));
  for (const auto& e : std::filesystem::directory_iterator(cfg.dir, ec)) {
    const std::string name = e.path().filename().string();
    if (e.path().extension() != ".seg" || name.size() != 20) continue;
    char* end = nullptr;
    const std::uint64_t id = std::strtoull(name.c_str(), &end, 16);
    if (end != name.c_str() + 16 || id == 0) continue;
    auto f = vs->open_file(id, false);
    if (!f) return f.err();
    vs->files_.emplace(id, std::move(*f));
    vs->next_id_ = std::max(vs->next_id_, id + 1);
  }
  if (ec) return error{errc::io_error, "L3 segments: cannot list " + cfg.dir + ": " + ec.message()};
  return vs;
}

value_segments::~value_segments() = default;

std::string value_segments::path_of(std::uint64_t id) const {
  return fmt::format("{}/{:016x}.seg", cfg_.dir, id);
}

result<std::shared_ptr<segment_file>> value_segments::open_file(std::uint64_t id,
                                                                bool create) const {
  const std::string path = path_of(id);
  int flags = O_RDWR | O_CLOEXEC | (create ? O_CREAT | O_EXCL : 0);
  if (cfg_.direct_io) flags |= O_DIRECT;
  const int fd = ::open(path.c_str(), flags, 0600);  // the store's owner's alone (rocksdb_store)
  if (fd < 0) {
    if (cfg_.direct_io && errno == EINVAL)
      return error{errc::invalid_argument,
                   "L3 segments: " + cfg_.dir + " refuses O_DIRECT (--l3-direct-io); tmpfs does"};
    return segment_io_error("L3 segments: cannot open " + path, errno);
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return segment_io_error("L3 segments: cannot stat " + path, err);
  }
  return std::make_shared<segment_file>(id, fd, static_cast<std::uint64_t>(st.st_size),
                                        cfg_.direct_io);
}

std::uint64_t value_segments::footprint(std::uint64_t bytes) const noexcept {
  return cfg_.direct_io ? round_up(bytes) : bytes;
}

result<value_location> value_segments::append(std::span<const std::byte> bytes) {
  const std::uint64_t space = footprint(bytes.size());
  std::shared_ptr<segment_file> seg;
  std::uint64_t offset = 0;
  {
    std::lock_guard lk(mu_);
    if (!active_ || (tail_ > 0 && tail_ + space > cfg_.segment_bytes)) {
      auto f = open_file(next_id_, true);
      if (!f) return f.err();
      ++next_id_;
      active_ = std::move(*f);
      files_.emplace(active_->id(), active_);
      tail_ = 0;
    }
    seg = active_;
    offset = tail_;
    tail_ += space;
    seg->size_.store(tail_, std::memory_order_release);
  }
  const bool straight = !cfg_.direct_io || aligned_for_direct(bytes.data(), bytes.size());
  std::byte* bounce = straight ? nullptr : bounce_buffer(space);
  if (!straight) {
    if (!bounce)
      return error{errc::out_of_memory, "L3 segment write: no memory for the bounce buffer"};
    if (!bytes.empty()) std::memcpy(bounce, bytes.data(), bytes.size());
    std::memset(bounce + bytes.size(), 0, space - bytes.size());
  }
  iovec iov[1] = {
      {straight ? const_cast<std::byte*>(bytes.data()) : bounce, straight ? bytes.size() : space}};
  const long long n = transfer_all(
      [fd = seg->fd_](const iovec* v, int c, off_t o) { return ::pwritev(fd, v, c, o); }, iov,
      offset);
  if (n < 0)
    return segment_io_error(fmt::format("L3 segment {:016x}: write", seg->id()),
                            static_cast<int>(-n));
  seg->unsynced_.store(true, std::memory_order_release);  // after the write: sync() covers it
  return value_location{seg->id(), offset};
}

std::shared_ptr<segment_file> value_segments::segment(std::uint64_t id) const {
  std::lock_guard lk(mu_);
  auto it = files_.find(id);
  return it == files_.end() ? nullptr : it->second;
}

std::map<std::uint64_t, std::uint64_t> value_segments::sizes() const {
  std::lock_guard lk(mu_);
  std::map<std::uint64_t, std::uint64_t> out;
  for (const auto& [id, f] : files_)
    out.emplace(id, f->size());
  return out;
}

std::uint64_t value_segments::active() const {
  std::lock_guard lk(mu_);
  return active_ ? active_->id() : 0;
}

void value_segments::remove(std::uint64_t id) {
  std::lock_guard lk(mu_);
  if (active_ && active_->id() == id) return;
  auto it = files_.find(id);
  if (it == files_.end()) return;
  ::unlink(path_of(id).c_str());
  files_.erase(it);
}

void value_segments::seal() {
  std::lock_guard lk(mu_);
  active_.reset();
  tail_ = 0;
}

status value_segments::sync() {
  std::vector<std::shared_ptr<segment_file>> dirty;
  {
    std::lock_guard lk(mu_);
    for (const auto& [id, f] : files_)
      if (f->unsynced_.load(std::memory_order_acquire)) dirty.push_back(f);
  }
  for (const auto& f : dirty) {
    f->unsynced_.store(false, std::memory_order_release);
    if (::fdatasync(f->fd_) != 0) {
      f->unsynced_.store(true, std::memory_order_release);
      return segment_io_error(fmt::format("L3 segment {:016x}: fdatasync", f->id()), errno);
    }
  }
  return {};
}

}  // namespace hc
