#pragma once
// The node's Unix socket paths (its --socket, its ipc:// event endpoints), taken and given
// back without harming another node: a socket file whose listener is alive is refused (a
// second hybridcached started on the same --socket used to unlink the first one's socket
// and serve in its place, leaving the first running and unreachable; ZeroMQ did the same
// to an ipc:// endpoint); a stale one (nobody listening: a node that was killed) is
// replaced; and at stop the path is removed only if it is still this node's socket.
//
// Thread safety: none needed (plain functions over the filesystem).

#include <sys/types.h>

#include <string>

#include "actors/common/status.hpp"

namespace hc::rpc {

/// Which file a path named when this node bound it.
struct socket_file {
  dev_t dev = 0;
  ino_t ino = 0;
};

/// Makes `path` free for a new listener: nothing there, or a stale socket (removed).
/// Refused (io_error, the message says why): a socket with a live listener, a file that
/// is not a socket, or a socket that cannot be probed (connect says neither "refused" nor
/// "accepted"); invalid_config: a path of 0 or more than 107 bytes (sockaddr_un's).
/// `option` is what the operator changes to go elsewhere, named in the message.
status claim_unix_socket_path(const std::string& path, const std::string& option = "--socket");

/// The file at `path` now (after bind); zeros if there is none.
socket_file socket_file_at(const std::string& path);

/// Removes `path` if it is still the socket `mine` (another node may have replaced it).
void release_unix_socket_path(const std::string& path, socket_file mine);

}  // namespace hc::rpc
