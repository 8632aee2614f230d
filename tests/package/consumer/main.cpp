// consumer ADDRESS: pings the node, opens a session, runs one step (create, match,
// abort) and closes. Exits 0 only when every call succeeded as expected.
#include <cstdio>
#include <vector>

#include "schema/client.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: consumer unix:/path/to.sock\n");
    return 2;
  }
  auto c = hc::client::connect(argv[1]);
  if (!c.ok()) {
    std::fprintf(stderr, "connect: %s\n", c.err().message.c_str());
    return 1;
  }
  auto p = (*c)->ping();
  if (!p.ok()) return 1;
  hc::instance_spec spec;
  spec.model_id = "consumer";
  spec.kv_tokens = 64;
  spec.ssm_slots = 4;
  spec.request_rows = 2;
  auto s = (*c)->open(spec);
  if (!s.ok()) {
    std::fprintf(stderr, "open: %s\n", s.err().message.c_str());
    return 1;
  }
  const std::vector<hc::command> cmds{hc::cmd::create{1, 0, {1, 2, 3, 4}}, hc::cmd::match{1},
                                      hc::cmd::abort{1}};
  auto r = (*s)->step(cmds);
  if (!r.ok() || r->size() != 3) return 1;
  for (const auto& one : *r)
    if (!one.ok()) {
      std::fprintf(stderr, "command failed: %s\n", one.error.c_str());
      return 1;
    }
  if ((*r)[1].as<hc::res::match>().prefix_len != 0) return 1;  // an empty tree
  if (!(*s)->close().ok()) return 1;
  std::printf("consumer: protocol %u, node %s, step ok\n", p->protocol_version,
              p->node_version.c_str());
  return 0;
}
