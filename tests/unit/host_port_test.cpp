// A TCP address read once for every reader (actors/common/host_port.hpp): what is taken,
// what is refused and why; the node's --tcp and --kv-events endpoints refuse at start what
// kj or ZeroMQ would misread.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "actors/common/host_port.hpp"
#include "actors/daemon/daemon_options.hpp"

namespace hc::test {
namespace {

TEST(HostPort, TakesANameAnIpv4OrABracketedIpv6AddressAndAPort) {
  struct want {
    std::string address, host;
    std::uint16_t port;
    bool ipv6;
  };
  for (const want& w : std::vector<want>{{"localhost:7070", "localhost", 7070, false},
                                         {"127.0.0.1:0", "127.0.0.1", 0, false},
                                         {"0.0.0.0:65535", "0.0.0.0", 65535, false},
                                         {"node-1.example:80", "node-1.example", 80, false},
                                         {"[::1]:7070", "::1", 7070, true},
                                         {"[fe80::1:2]:1", "fe80::1:2", 1, true},
                                         {"[::ffff:10.0.0.1]:9", "::ffff:10.0.0.1", 9, true}}) {
    auto p = parse_host_port(w.address);
    ASSERT_TRUE(p.ok()) << w.address << ": " << p.err().message;
    EXPECT_EQ(p->host, w.host) << w.address;
    EXPECT_EQ(p->port, w.port) << w.address;
    EXPECT_EQ(p->ipv6, w.ipv6) << w.address;
  }
}

TEST(HostPort, RefusesWhatALibraryWouldMisreadSayingWhy) {
  for (const auto& [address, why] : std::vector<std::pair<std::string, std::string>>{
           {"localhost", "not host:port"},
           {"7070", "not host:port"},
           {"", "not host:port"},
           {":7070", "no host"},
           {"localhost:", "the port must be a number from 0 to 65535"},
           {"localhost:65536", "the port must be a number from 0 to 65535"},
           {"localhost:99999", "the port must be a number from 0 to 65535"},
           {"localhost:123456", "the port must be a number from 0 to 65535"},
           {"localhost:-1", "the port must be a number from 0 to 65535"},
           {"localhost:0x10", "the port must be a number from 0 to 65535"},
           {"localhost:http", "the port must be a number from 0 to 65535"},
           {"999.1.1.1:80", "'999.1.1.1' is not an IPv4 address"},
           {"1.2.3:80", "'1.2.3' is not an IPv4 address"},
           {"1.2.3.4.5:80", "'1.2.3.4.5' is not an IPv4 address"},
           {"01.2.3.4:80", "'01.2.3.4' is not an IPv4 address"},
           {"::1:80", "an IPv6 address goes in brackets"},
           {"[::1]", "not [IPv6 address]:port"},
           {"[::1]80", "not [IPv6 address]:port"},
           {"[]:80", "no host"},
           {"[localhost]:80", "'localhost' is not an IPv6 address"}}) {
    auto p = parse_host_port(address);
    ASSERT_FALSE(p.ok()) << address;
    EXPECT_EQ(p.err().code, errc::invalid_argument) << address;
    EXPECT_NE(p.err().message.find(why), std::string::npos) << address << ": " << p.err().message;
  }
}

// Before: a bare "localhost" listened on a random port, and "127.0.0.1:99999" or ":80"
// failed only after the L3 store had opened, in kj's words.
TEST(HostPort, TheNodesTcpOptionIsCheckedBeforeItStarts) {
  daemon_options o;
  o.token_file = "/etc/hybridcache/token";
  for (const std::string bad : {"localhost", "127.0.0.1:99999", ":80", "999.1.1.1:80"}) {
    o.tcp = bad;
    const status s = check_daemon_options(o);
    ASSERT_FALSE(s.ok()) << bad;
    EXPECT_EQ(s.err().code, errc::invalid_config);
    EXPECT_NE(s.err().message.find("--tcp " + bad + ": "), std::string::npos) << s.err().message;
    EXPECT_NE(s.err().message.find("give host:port"), std::string::npos) << s.err().message;
  }
  for (const std::string good : {"127.0.0.1:0", "0.0.0.0:7070", "[::1]:7070", "localhost:7070"}) {
    o.tcp = good;
    EXPECT_TRUE(check_daemon_options(o).ok()) << good;
  }
}

// A TCP listener needs its secret, and a secret needs the TCP listener: before, a
// --token-file without --tcp was read by nobody, and its operator believed the Unix
// socket guarded by it.
TEST(HostPort, TcpAndTokenFileComeTogether) {
  daemon_options o;
  o.tcp = "127.0.0.1:7070";
  status s = check_daemon_options(o);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.err().code, errc::invalid_config);
  EXPECT_NE(s.err().message.find("--tcp needs --token-file"), std::string::npos) << s.err().message;
  o.tcp.clear();
  o.token_file = "/etc/hybridcache/token";
  s = check_daemon_options(o);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.err().code, errc::invalid_config);
  EXPECT_NE(s.err().message.find("--token-file guards --tcp only"), std::string::npos)
      << s.err().message;
  o.tcp = "127.0.0.1:7070";
  EXPECT_TRUE(check_daemon_options(o).ok());
}

// The KV events' ZeroMQ endpoints: ZeroMQ bound tcp://*:99999 as port 34463 and took
// inproc://, which no subscriber outside the node can reach; both are refused at start.
TEST(HostPort, TheKvEventsEndpointsAreCheckedBeforeZeroMqReadsThem) {
  for (const auto& [endpoint, why] : std::vector<std::pair<std::string, std::string>>{
           {"tcp://*:99999", "the port must be a number from 0 to 65535"},
           {"tcp://localhost", "not host:port"},
           {"tcp://999.1.1.1:5557", "'999.1.1.1' is not an IPv4 address"},
           {"inproc://x", "a subscriber in another process reaches only tcp:// or ipc://"},
           {"5557", "a subscriber in another process reaches only tcp:// or ipc://"},
           {"ipc://", "no path"}}) {
    for (const bool replay : {false, true}) {
      daemon_options o;
      o.kv_events = "tcp://127.0.0.1:*";
      (replay ? o.kv_events_replay : o.kv_events) = endpoint;
      const status s = check_daemon_options(o);
      ASSERT_FALSE(s.ok()) << endpoint;
      EXPECT_EQ(s.err().code, errc::invalid_config);
      const std::string option = replay ? "--kv-events-replay " : "--kv-events ";
      EXPECT_NE(s.err().message.find(option + endpoint + ": " + why), std::string::npos)
          << s.err().message;
    }
  }
  daemon_options o;
  for (const std::string good : {"tcp://*:5557", "tcp://*:*", "tcp://127.0.0.1:*",
                                 "tcp://[::1]:5557", "ipc:///run/hc-events", "off"}) {
    o.kv_events = good == "off" ? "off" : good;
    o.kv_events_replay = good;
    EXPECT_TRUE(check_daemon_options(o).ok()) << good;
  }
}

}  // namespace
}  // namespace hc::test
