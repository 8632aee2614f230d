// The client's own socket: connect_stream_socket's addresses, errors and deadline, and
// client::sever — the one call another thread may make — ending a connection at once.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "schema/client.hpp"
#include "schema/socket_connect.hpp"
#include "tests/support/inspect_until.hpp"
#include "tests/support/node_fixture.hpp"

namespace hc::test {
namespace {

using wire_convert::connect_stream_socket;
using namespace std::chrono_literals;

/// A listening socket (closed with the object).
struct listener {
  int fd = -1;
  ~listener() {
    if (fd >= 0) ::close(fd);
  }
};

/// A TCP listener on 127.0.0.1 and its port.
int listen_tcp(listener& l) {
  l.fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::bind(l.fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
  EXPECT_EQ(::listen(l.fd, 8), 0);
  socklen_t len = sizeof sa;
  EXPECT_EQ(::getsockname(l.fd, reinterpret_cast<sockaddr*>(&sa), &len), 0);
  return ntohs(sa.sin_port);
}

/// A Unix listener at `path` with the given backlog.
void listen_unix(listener& l, const std::string& path, int backlog) {
  l.fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  std::snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path.c_str());
  ASSERT_EQ(::bind(l.fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
  ASSERT_EQ(::listen(l.fd, backlog), 0);
}

TEST(SocketConnect, ATcpSocketIsConnectedNonBlockingCloseOnExecAndWithoutNagle) {
  listener l;
  const int port = listen_tcp(l);
  auto fd = connect_stream_socket("127.0.0.1:" + std::to_string(port), 10000ms);
  ASSERT_TRUE(fd.ok()) << fd.err().message;
  int nodelay = 0;
  socklen_t len = sizeof nodelay;
  ASSERT_EQ(::getsockopt(*fd, IPPROTO_TCP, TCP_NODELAY, &nodelay, &len), 0);
  EXPECT_NE(nodelay, 0);
  EXPECT_NE(::fcntl(*fd, F_GETFL) & O_NONBLOCK, 0);
  EXPECT_NE(::fcntl(*fd, F_GETFD) & FD_CLOEXEC, 0);
  const int peer = ::accept(l.fd, nullptr, nullptr);
  EXPECT_GE(peer, 0) << "the connection reached the listener";
  ::close(peer);
  ::close(*fd);
  // A name resolves as well.
  auto named = connect_stream_socket("localhost:" + std::to_string(port), 10000ms);
  ASSERT_TRUE(named.ok()) << named.err().message;
  ::close(*named);
}

TEST(SocketConnect, AUnixSocketIsConnected) {
  const std::string path = unique_socket_path();
  listener l;
  listen_unix(l, path, 8);
  auto fd = connect_stream_socket("unix:" + path, 0ms);
  ASSERT_TRUE(fd.ok()) << fd.err().message;
  EXPECT_NE(::fcntl(*fd, F_GETFL) & O_NONBLOCK, 0);
  ::close(*fd);
  ::unlink(path.c_str());
}

TEST(SocketConnect, BadAddressesAreRefusedSayingWhatIsExpected) {
  for (const std::string bad :
       {"localhost", "localhost:", ":80", "localhost:http", "::1:80", "[::1]", "unix:"}) {
    auto fd = connect_stream_socket(bad, 1000ms);
    ASSERT_FALSE(fd.ok()) << bad;
    EXPECT_EQ(fd.err().code, errc::invalid_argument) << bad << ": " << fd.err().message;
  }
  auto long_path = connect_stream_socket("unix:/" + std::string(200, 'x'), 1000ms);
  ASSERT_FALSE(long_path.ok());
  EXPECT_EQ(long_path.err().code, errc::invalid_argument);
  EXPECT_NE(long_path.err().message.find("201"), std::string::npos) << long_path.err().message;
}

TEST(SocketConnect, NobodyListeningIsAnIoErrorNamingTheAddressAndWhy) {
  const std::string path = unique_socket_path();
  auto missing = connect_stream_socket("unix:" + path, 1000ms);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.err().code, errc::io_error);
  EXPECT_NE(missing.err().message.find(path), std::string::npos) << missing.err().message;
  EXPECT_NE(missing.err().message.find(std::strerror(ENOENT)), std::string::npos)
      << missing.err().message;

  int port = 0;
  {
    listener l;
    port = listen_tcp(l);
  }  // closed: nothing listens on the port now
  const std::string addr = "127.0.0.1:" + std::to_string(port);
  auto refused = connect_stream_socket(addr, 1000ms);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.err().code, errc::io_error);
  EXPECT_NE(refused.err().message.find(addr), std::string::npos) << refused.err().message;
  EXPECT_NE(refused.err().message.find(std::strerror(ECONNREFUSED)), std::string::npos)
      << refused.err().message;
}

// A listener that never accepts, its backlog full: the connect waits for its deadline
// and says so (without one it would wait as long as the listener does not accept), or
// until its interrupt check says stop.
TEST(SocketConnect, AConnectThatCannotFinishEndsAtItsDeadline) {
  const std::string path = unique_socket_path();
  listener l;
  listen_unix(l, path, 0);
  std::vector<int> queued;
  for (int i = 0; i < 4; ++i) {  // fill the backlog (Linux queues backlog + 1)
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    std::snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path.c_str());
    if (::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
      ::close(fd);
      break;
    }
    queued.push_back(fd);
  }
  ASSERT_FALSE(queued.empty());
  auto late = connect_stream_socket("unix:" + path, 200ms);
  ASSERT_FALSE(late.ok());
  EXPECT_EQ(late.err().code, errc::timeout) << late.err().message;
  EXPECT_NE(late.err().message.find("200 ms"), std::string::npos) << late.err().message;
  // The same connect with an interrupt check (a binding's Ctrl-C) ends when it says stop,
  // long before its deadline.
  int asked = 0;
  auto stopped = connect_stream_socket("unix:" + path, 600000ms, [&] { return ++asked == 2; });
  ASSERT_FALSE(stopped.ok());
  EXPECT_EQ(stopped.err().code, errc::interrupted) << stopped.err().message;
  EXPECT_EQ(asked, 2);
  for (int fd : queued)
    ::close(fd);
  ::unlink(path.c_str());
}

struct ClientSever : node_fixture {};

/// The node's open sessions once they are `want` (or after inspect_until's hang guard).
int sessions_until(client& watcher, int want) {
  const auto doc = inspect_until(watcher, [want](const auto& d) { return d["sessions"] == want; });
  return doc.contains("sessions") ? doc["sessions"].get<int>() : -1;
}

// A binding whose client was dropped on another thread severs it there: the node releases
// the client's session at once, its calls fail from then on, and the objects are destroyed
// later on their own thread without harm.
TEST_F(ClientSever, AnotherThreadEndsTheConnectionAndTheNodeReleasesItsSessions) {
  auto c = client::connect(address());
  ASSERT_TRUE(c.ok()) << c.err().message;
  auto s = (*c)->open(small_spec());
  ASSERT_TRUE(s.ok()) << s.err().message;
  auto watcher = client::connect(address());
  ASSERT_TRUE(watcher.ok());
  ASSERT_EQ(sessions_until(**watcher, 1), 1);

  std::thread([&] { (*c)->sever(); }).join();
  EXPECT_EQ(sessions_until(**watcher, 0), 0) << "the node kept the severed session";
  auto ping = (*c)->ping();
  ASSERT_FALSE(ping.ok());
  EXPECT_EQ(ping.err().code, errc::io_error);
  std::vector<command> cmds{cmd::check{}};
  auto step = (*s)->step(cmds);
  ASSERT_FALSE(step.ok());
  EXPECT_EQ(step.err().code, errc::io_error);
  s = result<std::unique_ptr<client_session>>(error{errc::io_error, "dropped"});
  c = result<std::unique_ptr<client>>(error{errc::io_error, "dropped"});
  EXPECT_TRUE((*watcher)->ping().ok()) << "other connections go on";
}

}  // namespace
}  // namespace hc::test
