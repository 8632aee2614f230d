// The /metrics endpoint stays scrapable while connections that send nothing are open (a
// port scanner, a health check that only connects, a stuck client): civetweb used to hold
// a worker on each for 30 s, and two of them took both workers — every scrape failed
// meanwhile (a Prometheus scrape times out after 10 s by default).
#include <gtest/gtest.h>

#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <utility>
#include <vector>

#include "monitoring/metrics_address.hpp"
#include "monitoring/prometheus_metrics.hpp"
#include "tests/support/raw_tcp.hpp"

namespace hc::test {
namespace {

TEST(MetricsEndpoint, IdleConnectionsDoNotBlockAScrape) {
  prometheus_metrics m;
  ASSERT_TRUE(m.serve("127.0.0.1:0").ok());
  std::vector<int> idle;  // twice the endpoint's worker threads, none sending a byte
  for (int i = 0; i < 8; ++i) {
    const int fd = raw_tcp_connect(m.address());
    ASSERT_GE(fd, 0);
    idle.push_back(fd);
  }
  const int scrape = raw_tcp_connect(m.address());
  ASSERT_GE(scrape, 0);
  // Before: answered after civetweb's 30 s; now within a few seconds. 20 s is the guard.
  const timeval guard{20, 0};
  ASSERT_EQ(::setsockopt(scrape, SOL_SOCKET, SO_RCVTIMEO, &guard, sizeof guard), 0);
  const std::string get = "GET /metrics HTTP/1.0\r\nHost: x\r\n\r\n";
  ASSERT_EQ(::write(scrape, get.data(), get.size()), static_cast<ssize_t>(get.size()));
  std::string reply;
  char buf[65536];
  for (ssize_t n; (n = ::read(scrape, buf, sizeof buf)) > 0;)
    reply.append(buf, static_cast<std::size_t>(n));
  ::close(scrape);
  for (int fd : idle)
    ::close(fd);
  ASSERT_EQ(reply.rfind("HTTP/1.1 200", 0), 0u) << "no answer within 20 s: " << reply.substr(0, 80);
  EXPECT_NE(reply.find("hybridcache_sessions"), std::string::npos);
}

// The address is checked before civetweb reads it: a bare port (every interface), a host
// that is dotted digits but no IPv4 address (civetweb served "999.1.1.1" on 231.1.1.1), a
// port out of range or IPv6 are refused naming why; what civetweb serves as asked passes.
TEST(MetricsEndpoint, AnAddressCivetwebWouldMisreadIsRefusedSayingWhy) {
  for (const auto& [address, why] : std::vector<std::pair<std::string, std::string>>{
           {"9464", "not host:port"},
           {":9464", "no host"},
           {"127.0.0.1:", "the port must be a number from 0 to 65535"},
           {"127.0.0.1:65536", "the port must be a number from 0 to 65535"},
           {"127.0.0.1:-1", "the port must be a number from 0 to 65535"},
           {"127.0.0.1:0x10", "the port must be a number from 0 to 65535"},
           {"999.1.1.1:9464", "'999.1.1.1' is not an IPv4 address"},
           {"1.2.3:9464", "'1.2.3' is not an IPv4 address"},
           {"[::1]:9464", "IPv6"},
           {"::1:9464", "IPv6"}}) {
    const status s = check_metrics_address(address);
    ASSERT_FALSE(s.ok()) << address;
    EXPECT_EQ(s.err().code, errc::invalid_config) << address;
    EXPECT_NE(s.err().message.find(why), std::string::npos) << address << ": " << s.err().message;
    prometheus_metrics m;
    const status served = m.serve(address);
    ASSERT_FALSE(served.ok()) << address;
    EXPECT_EQ(served.err().message, s.err().message) << "serve() checks it too";
  }
  for (const std::string address : {"127.0.0.1:0", "0.0.0.0:0", "localhost:0", "127.0.0.1:65535"})
    EXPECT_TRUE(check_metrics_address(address).ok()) << address;
  prometheus_metrics m;
  ASSERT_TRUE(m.serve("localhost:0").ok()) << "a host name civetweb resolves";
}

// An address that passes the check but cannot be served on says why: civetweb said only
// "null context when constructing CivetServer. Possible problem binding to port." of a
// port another process holds and of an address no interface has.
TEST(MetricsEndpoint, AnAddressThatCannotBeServedOnSaysWhy) {
  prometheus_metrics first;
  ASSERT_TRUE(first.serve("127.0.0.1:0").ok());
  for (const auto& [address, why] : std::vector<std::pair<std::string, std::string>>{
           {first.address(), "another process listens there?"},
           {"203.0.113.1:9464", "no interface of this machine has that address"}}) {  // TEST-NET-3
    prometheus_metrics m;
    const status s = m.serve(address);
    ASSERT_FALSE(s.ok()) << address;
    EXPECT_EQ(s.err().code, errc::io_error);
    EXPECT_NE(s.err().message.find("cannot serve metrics on " + address + ": "), std::string::npos)
        << s.err().message;
    EXPECT_NE(s.err().message.find(why), std::string::npos) << s.err().message;
    EXPECT_EQ(s.err().message.find("null context"), std::string::npos) << s.err().message;
  }
}

}  // namespace
}  // namespace hc::test
