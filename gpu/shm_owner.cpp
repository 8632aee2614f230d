#include "gpu/shm_owner.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <random>
#include <utility>

namespace hc {
namespace {

constexpr const char* shm_dir = "/dev/shm/";
constexpr std::size_t nonce_digits = 16;
constexpr const char* owner_suffix = "-owner";

bool all_of(const std::string& s, const char* chars) {
  return !s.empty() && s.find_first_not_of(chars) == std::string::npos;
}

/// Whether the node that claimed `group` ("<stem><pid>-<nonce>", no '/') still lives: its
/// marker exists and someone holds its lock. Unknown (a marker this process may not open,
/// a lock the filesystem does not keep) counts as alive.
bool owner_alive(const std::string& group) {
  const std::string marker = shm_dir + group + owner_suffix;
  const int fd = ::open(marker.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return errno != ENOENT;
  int rc = 0;
  do
    rc = ::flock(fd, LOCK_SH | LOCK_NB);
  while (rc != 0 && errno == EINTR);
  const bool alive = rc != 0;  // EWOULDBLOCK: held; anything else: cannot tell
  ::close(fd);                 // drops the shared lock taken from a dead owner
  return alive;
}

}  // namespace

result<shm_owner> shm_owner::claim(const std::string& stem) {
  std::random_device rd;
  const std::uint64_t nonce = (std::uint64_t{rd()} << 32) ^ rd();
  char hex[nonce_digits + 1];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(nonce));
  const std::string group = stem + std::to_string(::getpid()) + "-" + hex;
  // Locked under a name no sweep reads, then renamed: the marker is never seen unlocked.
  const std::string pending = shm_dir + ("." + group + owner_suffix);
  const std::string marker = shm_dir + group + owner_suffix;
  const int fd = ::open(pending.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) {
    const int e = errno;  // read before the message's strings allocate
    return error{errc::io_error, "cannot create " + pending + ": " + std::strerror(e)};
  }
  const auto fail = [&](int e, const std::string& what) {  // e: errno, read at the call
    ::close(fd);
    ::unlink(pending.c_str());
    return error{errc::io_error, what + ": " + std::strerror(e)};
  };
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int e = errno;
    return fail(e, "cannot lock " + pending);
  }
  if (::rename(pending.c_str(), marker.c_str()) != 0) {
    const int e = errno;
    return fail(e, "cannot rename " + pending + " to " + marker);
  }
  shm_owner o;
  o.prefix_ = "/" + group;
  o.fd_ = fd;
  return o;
}

shm_owner::shm_owner(shm_owner&& o) noexcept
    : prefix_(std::move(o.prefix_)), fd_(std::exchange(o.fd_, -1)) {}

shm_owner& shm_owner::operator=(shm_owner&& o) noexcept {
  if (this != &o) {
    release();
    prefix_ = std::move(o.prefix_);
    fd_ = std::exchange(o.fd_, -1);
  }
  return *this;
}

shm_owner::~shm_owner() {
  release();
}

void shm_owner::release() noexcept {
  if (fd_ < 0) return;
  ::unlink((shm_dir + prefix_.substr(1) + owner_suffix).c_str());
  ::close(fd_);
  fd_ = -1;
}

std::size_t unlink_orphaned_segments(const std::string& stem) {
  std::error_code ec;
  std::size_t removed = 0;
  std::map<std::string, bool> gone;  // group -> its owner is gone (asked once per group)
  for (const auto& e : std::filesystem::directory_iterator(shm_dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(stem, 0) != 0) continue;
    const std::size_t dash = name.find('-', stem.size());
    if (dash == std::string::npos) continue;
    const std::string digits = name.substr(stem.size(), dash - stem.size());
    if (!all_of(digits, "0123456789") || digits.size() > 10) continue;
    const std::string nonce = name.substr(dash + 1, nonce_digits);
    const bool claimed = nonce.size() == nonce_digits && all_of(nonce, "0123456789abcdef") &&
                         name.size() > dash + 1 + nonce_digits &&
                         name[dash + 1 + nonce_digits] == '-';
    bool orphan = false;
    if (claimed) {
      const std::string group = name.substr(0, dash + 1 + nonce_digits);
      auto it = gone.find(group);
      if (it == gone.end()) it = gone.emplace(group, !owner_alive(group)).first;
      orphan = it->second;
    } else {
      // A node from before the claim: its pid is all there is to go by.
      const long pid = std::stol(digits);
      orphan = ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH;
    }
    if (orphan && ::unlink((shm_dir + name).c_str()) == 0) ++removed;
  }
  return removed;
}

std::size_t unlink_segments_of(const std::string& prefix) {
  std::error_code ec;
  std::size_t removed = 0;
  const std::string start = prefix.substr(prefix.starts_with('/') ? 1 : 0) + "-";
  for (const auto& e : std::filesystem::directory_iterator(shm_dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(start, 0) == 0 && ::unlink((shm_dir + name).c_str()) == 0) ++removed;
  }
  return removed;
}

}  // namespace hc
