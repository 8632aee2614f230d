#include "gpu/shm_region.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>

namespace hc {

result<shm_region> shm_region::create(const std::string& name, std::size_t bytes,
                                      shm_access access) {
  if (name.size() < 2 || name[0] != '/' || name.find('/', 1) != std::string::npos)
    return error{errc::invalid_argument, "shm name '" + name + "' must be '/' + a plain name"};
  if (bytes == 0) return error{errc::invalid_argument, "shm region '" + name + "' has 0 bytes"};
  int fd = ::shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0) return error{errc::io_error, "shm_open(" + name + "): " + std::strerror(errno)};
  // Created 0600 (less the umask), then given its mode: a umask of 022 would have left a
  // group region read-only to the group.
  if (access != shm_access::user && ::fchmod(fd, shm_mode(access)) != 0) {
    const int e = errno;
    ::close(fd);
    ::shm_unlink(name.c_str());
    return error{errc::io_error, "fchmod(" + name + "): " + std::strerror(e)};
  }
  if (::ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    const int e = errno;
    ::close(fd);
    ::shm_unlink(name.c_str());
    return error{errc::out_of_memory,
                 "ftruncate(" + name + ", " + std::to_string(bytes) + "): " + std::strerror(e)};
  }
  // Reserve the pages now: a tmpfs (a container's /dev/shm is 64 MiB by default) smaller
  // than the region would otherwise accept it and deliver SIGBUS to whoever first writes a
  // page past its free space — the node, copying into a pool (PostgreSQL's DSM segments do
  // the same, for the same reason). ENOSPC here fails the open that asked for the region.
  int fe = 0;
  do
    fe = ::posix_fallocate(fd, 0, static_cast<off_t>(bytes));
  while (fe == EINTR);
  if (fe != 0) {
    ::close(fd);
    ::shm_unlink(name.c_str());
    struct statvfs fs {};
    const std::string free_space =
        ::statvfs("/dev/shm", &fs) == 0
            ? "; /dev/shm has " + std::to_string(std::uint64_t{fs.f_bavail} * fs.f_frsize) +
                  " bytes free (a container's is set by docker run --shm-size, or a Kubernetes "
                  "emptyDir with medium Memory)"
            : std::string();
    return error{errc::out_of_memory, "shared memory '" + name + "' of " + std::to_string(bytes) +
                                          " bytes: " + std::strerror(fe) + free_space};
  }
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  const int e = errno;
  ::close(fd);
  if (p == MAP_FAILED) {
    ::shm_unlink(name.c_str());
    return error{errc::out_of_memory, "mmap(" + name + "): " + std::strerror(e)};
  }
  shm_region r;
  r.name_ = name;
  r.data_ = static_cast<std::byte*>(p);
  r.size_ = bytes;
  return r;
}

result<shm_region> shm_region::map(const std::string& name, std::size_t bytes) {
  if (bytes == 0) return error{errc::invalid_argument, "shm region '" + name + "' has 0 bytes"};
  int fd = ::shm_open(name.c_str(), O_RDWR, 0);
  if (fd < 0) return error{errc::io_error, "shm_open(" + name + "): " + std::strerror(errno)};
  struct stat st {};
  if (::fstat(fd, &st) != 0 || static_cast<std::size_t>(st.st_size) < bytes) {
    ::close(fd);
    return error{errc::invalid_argument,
                 "shm region '" + name + "' is smaller than " + std::to_string(bytes) + " bytes"};
  }
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  const int e = errno;
  ::close(fd);
  if (p == MAP_FAILED) return error{errc::io_error, "mmap(" + name + "): " + std::strerror(e)};
  shm_region r;
  r.name_ = name;
  r.data_ = static_cast<std::byte*>(p);
  r.size_ = bytes;
  r.owner_ = false;
  return r;
}

shm_region::shm_region(shm_region&& o) noexcept
    : name_(std::move(o.name_)),
      data_(std::exchange(o.data_, nullptr)),
      size_(std::exchange(o.size_, 0)),
      owner_(o.owner_) {}

shm_region& shm_region::operator=(shm_region&& o) noexcept {
  if (this != &o) {
    release();
    name_ = std::move(o.name_);
    data_ = std::exchange(o.data_, nullptr);
    size_ = std::exchange(o.size_, 0);
    owner_ = o.owner_;
  }
  return *this;
}

shm_region::~shm_region() {
  release();
}

void shm_region::release() noexcept {
  if (data_ == nullptr) return;
  ::munmap(data_, size_);
  if (owner_) ::shm_unlink(name_.c_str());
  data_ = nullptr;
  size_ = 0;
}

}  // namespace hc
