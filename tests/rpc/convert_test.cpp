// The wire conversion (schema/convert.hpp) as a module: every field of a command, a
// result, a spec and the pool info survives the round trip through a Cap'n Proto message;
// errors keep their code; a spec with an enum value the core does not know is refused
// with the field's name.
#include <capnp/message.h>
#include <gtest/gtest.h>

#include "schema/convert.hpp"

namespace hc::test {
namespace {

namespace wc = wire_convert;

command every_command_field() {
  command c;
  c.kind = cmd_kind::take_ops;
  c.req = 7;
  c.tokens = {1, 2, 3};
  c.reqs = {4, 5};
  c.start = 11;
  c.n = 12;
  c.m = 13;
  c.seqlen = 14;
  c.flag = true;
  c.batch = 15;
  return c;
}

command_result every_result_field() {
  command_result r;
  r.code = errc::out_of_memory;
  r.error = "pool full";
  r.prefix_len = 1;
  r.kv_matched = 2;
  r.indices = {3, 4};
  r.node_slot = 5;
  r.branching = 6;
  r.working = 7;
  r.row = 8;
  r.pingpong = std::array<slot_id, 2>{9, 10};
  r.slot = 11;
  r.mask = true;
  r.kernel_seqlen = 12;
  r.inserted = true;
  r.mamba_exist = true;
  r.tokens_evicted = 13;
  r.mamba_evicted = 14;
  r.tokens_freed_total = 15;
  r.slots_freed_total = 16;
  r.tree_tokens = 17;
  r.tree_slots = 18;
  r.sanity = false;
  r.sanity_detail = "a detail";
  r.ops_snapshots = 19;
  r.ops_clears = 20;
  r.ops_cows = 21;
  r.pools = {22, 23, 24, 25, 26, 27, 28};
  r.elapsed_ns = 29;
  r.loaded_tokens = 30;
  r.prefetch_ready = true;
  r.prefetch_outcome = "completed";
  r.storage_hit_tokens = 31;
  return r;
}

TEST(WireConvert, ACommandKeepsEveryFieldTheWorkerSets) {
  const command c = every_command_field();
  capnp::MallocMessageBuilder msg;
  auto b = msg.initRoot<wire::Command>();
  wc::put_command(b, c);
  command back = wc::get_command(b.asReader());
  command want = c;
  want.ns = back.ns;  // the node sets the namespace from the session, not the wire
  EXPECT_EQ(back, want);
  for (cmd_kind k : {cmd_kind::create, cmd_kind::match, cmd_kind::finish, cmd_kind::prefetch,
                     cmd_kind::lookup, cmd_kind::evict}) {
    command one;
    one.kind = k;
    wc::put_command(b, one);
    EXPECT_EQ(wc::get_command(b.asReader()).kind, k) << to_string(k);
  }
}

TEST(WireConvert, AResultKeepsEveryField) {
  const command_result r = every_result_field();
  capnp::MallocMessageBuilder msg;
  auto b = msg.initRoot<wire::CommandResult>();
  wc::put_result(b, r);
  EXPECT_EQ(wc::get_result(b.asReader()), r);
  command_result empty;
  capnp::MallocMessageBuilder msg2;
  auto e = msg2.initRoot<wire::CommandResult>();
  wc::put_result(e, empty);
  EXPECT_EQ(wc::get_result(e.asReader()), empty) << "absent optionals stay absent";
}

TEST(WireConvert, ASpecAndThePoolInfoKeepEveryField) {
  instance_spec s;
  s.model_id = "m";
  s.tp_rank = 1;
  s.tp_size = 2;
  s.page_size = 16;
  s.kv_tokens = 4096;
  s.kv_bytes_per_token = 8;
  s.ssm_slots = 32;
  s.ssm_slot_bytes = 64;
  s.chunk_size = 128;
  s.strat = strategy::extra_buffer_lazy;
  s.track_interval = 100;
  s.overlap = false;
  s.request_rows = 9;
  s.max_context_len = 2048;
  s.slots_per_request = 3;
  s.ns = "lora-a";
  s.hicache_ratio = 2.5;
  s.hicache_bytes = 1 << 20;
  s.hicache_write_policy = write_policy::write_back;
  s.prefetch_policy = prefetch_termination::timeout;
  s.prefetch_threshold = 77;
  s.hicache_storage = false;
  capnp::MallocMessageBuilder msg;
  auto b = msg.initRoot<wire::InstanceSpec>();
  wc::put_spec(b, s);
  auto back = wc::get_spec(b.asReader());
  ASSERT_TRUE(back.ok()) << back.err().message;
  EXPECT_EQ(*back, s);

  pool_info p{"/kv", 1, "/ssm", 2, 3, 4, 5};
  capnp::MallocMessageBuilder msg2;
  auto pb = msg2.initRoot<wire::PoolInfo>();
  wc::put_pool_info(pb, p);
  EXPECT_EQ(wc::get_pool_info(pb.asReader()), p);
}

TEST(WireConvert, UnknownEnumValuesInASpecAreRefusedByName) {
  capnp::MallocMessageBuilder msg;
  auto b = msg.initRoot<wire::InstanceSpec>();
  wc::put_spec(b, instance_spec{});
  b.setStrategy(static_cast<wire::Strategy>(99));
  auto r = wc::get_spec(b.asReader());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.err().code, errc::invalid_config);
  EXPECT_NE(r.err().message.find("strategy"), std::string::npos) << r.err().message;
  wc::put_spec(b, instance_spec{});
  b.setPrefetchPolicy(static_cast<wire::PrefetchPolicy>(42));
  r = wc::get_spec(b.asReader());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.err().message.find("prefetchPolicy"), std::string::npos) << r.err().message;
}

TEST(WireConvert, ErrorsKeepTheirCodeAndMessage) {
  capnp::MallocMessageBuilder msg;
  auto b = msg.initRoot<wire::Error>();
  for (errc c : {errc::ok, errc::invalid_argument, errc::invalid_config, errc::out_of_memory,
                 errc::not_found, errc::double_free, errc::invariant_violated, errc::parse_error,
                 errc::io_error}) {
    const error e{c, c == errc::ok ? "" : "what went wrong"};
    wc::put_error(b, e);
    const error back = wc::get_error(b.asReader());
    EXPECT_EQ(back.code, c);
    EXPECT_EQ(back.message, e.message);
    EXPECT_EQ(wc::code_from_wire(wc::code_to_wire(c)), c);
  }
}

}  // namespace
}  // namespace hc::test
