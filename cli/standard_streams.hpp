#pragma once
// Standard input, output and error that a tool was started without (`hybridcached 2>&-`, a
// supervisor that closes them, a daemonising wrapper): the descriptors 0, 1 and 2 are then
// free, the tool's next open() takes them, and what it writes to "stderr" lands in that file
// instead. Started so, the node's log lines went to whatever the L3 store or the RPC server
// opened first — a RocksDB file, a value segment, a worker's connection. Each tool calls
// this first thing in main(), as sshd and systemd do: /dev/null fills the gaps, so that
// 0, 1 and 2 are never a file the tool works with.

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

namespace hc::cli {

/// Opens /dev/null on each of the descriptors 0, 1 and 2 that is closed. Returns false when
/// one is closed and /dev/null cannot be opened (a chroot without /dev): the caller exits
/// then, as what it writes could land in its own files. Call before any other open().
inline bool open_missing_standard_streams() noexcept {
  for (int fd = 0; fd <= 2; ++fd) {
    if (::fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
    // open() returns the lowest free descriptor: this one, since those below are open.
    const int null_fd = ::open("/dev/null", O_RDWR);
    if (null_fd == -1) return false;
    if (null_fd != fd) {  // not reached while 0..fd-1 are open; kept exact all the same
      ::close(null_fd);
      return false;
    }
  }
  return true;
}

/// Exit status of a tool whose standard streams could not be made safe (EX_OSERR).
inline constexpr int standard_streams_error = 71;

/// open_missing_standard_streams() for `tool`'s main(): -1 when the tool is to go on, else
/// the status to exit with, having said why (as parse_command_line).
inline int make_standard_streams_safe(const char* tool) noexcept {
  if (open_missing_standard_streams()) return -1;
  std::fprintf(stderr,
               "%s: started without stdin, stdout or stderr, and /dev/null cannot be opened\n",
               tool);
  return standard_streams_error;
}

}  // namespace hc::cli
