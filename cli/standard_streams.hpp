#pragma once
// Standard input, output and error that a tool was started without (`hybridcached 2>&-`, a
// supervisor that closes them, a daemonising wrapper): the descriptors 0, 1 and 2 are then
// free, the tool's next open() takes them, and what it writes to "stderr" lands in that file
// instead. Started so, the node's log lines went to whatever the L3 store or the RPC server
// opened first — a RocksDB file, a value segment, a worker's connection. Each tool calls
// this first thing in main(), as sshd and systemd do: /dev/null fills the gaps, so that
// 0, 1 and 2 are never a file the tool works with. And standard output that cannot be
// written (a full disk, a reader gone) makes the tool fail instead of exiting 0.

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

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

/// The first error standard output met (an errno; 0 while none): a failed write leaves
/// only ferror() behind, and a later flush need not fail again.
inline int& standard_output_error() noexcept {
  static int first = 0;
  return first;
}

/// Flushes standard output: 0 when everything written so far reached it, else the errno of
/// its first failed write (EIO when unknown). kj (Cap'n Proto) ignores SIGPIPE in every tool
/// that makes RPC calls, so a reader that went away (`hcctl top | head -1`) is a failed
/// write (EPIPE) here, not a signal: a loop that prints must check this and stop.
inline int flush_standard_output() noexcept {
  int& first = standard_output_error();
  errno = 0;
  if (std::fflush(stdout) != 0 || std::ferror(stdout))
    if (first == 0) first = errno != 0 ? errno : EIO;
  return first;
}

/// The status `tool` exits with once its work returned `rc`: `rc`, or 1 when its output
/// could not all be written (a full disk: a script's `hcctl stats --json > f` would
/// otherwise find a short file and status 0), saying why on stderr — except for a reader
/// that went away (EPIPE), where a tool killed by SIGPIPE says nothing either.
inline int finish_standard_output(const char* tool, int rc) noexcept {
  const int e = flush_standard_output();
  if (e == 0) return rc;
  if (e != EPIPE) std::fprintf(stderr, "%s: cannot write its output: %s\n", tool, std::strerror(e));
  return rc == 0 ? 1 : rc;
}

}  // namespace hc::cli
