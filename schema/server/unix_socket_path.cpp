#include "schema/server/unix_socket_path.hpp"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace hc::rpc {

status claim_unix_socket_path(const std::string& path, const std::string& option) {
  sockaddr_un sa{};
  if (path.empty() || path.size() >= sizeof sa.sun_path)  // whatever is there
    return {errc::invalid_config, "cannot listen on " + path +
                                      ": a Unix socket path must have 1 to " +
                                      std::to_string(sizeof sa.sun_path - 1) +
                                      " bytes, this one has " + std::to_string(path.size())};
  struct stat sb {};
  if (::lstat(path.c_str(), &sb) != 0) return {};  // nothing there
  if (!S_ISSOCK(sb.st_mode))
    return {errc::io_error, "cannot listen on " + path + ": a file that is not a socket is there"};
  sa.sun_family = AF_UNIX;
  std::memcpy(sa.sun_path, path.c_str(), path.size() + 1);
  // Non-blocking: a live listener whose backlog is full answers EAGAIN at once instead of
  // holding this start until it accepts.
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return {errc::io_error, std::string("socket: ") + std::strerror(errno)};
  int rc;
  do {
    rc = ::connect(fd, reinterpret_cast<const sockaddr*>(&sa), sizeof sa);
  } while (rc != 0 && errno == EINTR);
  const int err = rc == 0 ? 0 : errno;
  ::close(fd);
  if (rc == 0 || err == EAGAIN)  // accepted, or a live listener with a full backlog
    return {errc::io_error, "cannot listen on " + path +
                                ": another process is serving on it (a running hybridcached?); "
                                "stop it, or give this node another " +
                                option};
  if (err != ECONNREFUSED)
    return {errc::io_error, "cannot listen on " + path + ": cannot tell whether the socket " +
                                "there is in use (connect: " + std::strerror(err) + ")"};
  if (::unlink(path.c_str()) != 0 && errno != ENOENT)  // stale: a node that did not stop
    return {errc::io_error, "cannot remove the stale socket " + path + ": " + std::strerror(errno)};
  return {};
}

socket_file socket_file_at(const std::string& path) {
  struct stat sb {};
  if (::lstat(path.c_str(), &sb) != 0) return {};
  return {sb.st_dev, sb.st_ino};
}

void release_unix_socket_path(const std::string& path, socket_file mine) {
  const socket_file now = socket_file_at(path);
  if (now.ino != 0 && now.dev == mine.dev && now.ino == mine.ino) ::unlink(path.c_str());
}

}  // namespace hc::rpc
