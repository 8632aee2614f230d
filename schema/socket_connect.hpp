#pragma once
// Internal to schema/: the client's socket to a node, connected here rather than by kj so
// that the client owns the descriptor — kj's connect keeps it to itself, and a client must
// be able to shut its connection down from another thread (client::sever). TCP sockets get
// TCP_NODELAY, as kj's own do.
//
// Thread safety: a plain function; it blocks the calling thread for the connect.

#include <chrono>
#include <functional>
#include <string>

#include "actors/common/status.hpp"

namespace hc::wire_convert {

/// A connected, non-blocking, close-on-exec stream socket for `address` — "unix:PATH" or
/// "HOST:PORT" (a name, an IPv4 address or an [IPv6] one) — which the caller closes.
/// Waits at most `deadline` for the connect (0: as long as the kernel does), asking
/// `interrupted` (if any; client.hpp's interrupt_check) every interrupt_check_interval
/// meanwhile. Errors: invalid_argument for an address of neither form, timeout when the
/// deadline passed, interrupted when the check said stop, io_error naming the address and
/// the system's reason otherwise. (The name's resolution, getaddrinfo, is not interrupted.)
result<int> connect_stream_socket(const std::string& address, std::chrono::milliseconds deadline,
                                  const std::function<bool()>& interrupted = {});

}  // namespace hc::wire_convert
