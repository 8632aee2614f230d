// hcbench: what a step's wire conversion costs, with no socket and no actor (issue 19).
//
//   BM_StepWire/reqs:N   the commands and results of one scheduler iteration as
//                        BM_IterationRpc shared:2 sends them (N requests: create with its
//                        prompt by reference, match, alloc_req, alloc_kv to_end, and the
//                        finish of the N before), through each side's conversion in turn:
//                        the client's put_command into a message and its flat bytes,
//                        the node's get_command of them, the node's put_result, and the
//                        client's get_result. Counters: p50 / p99 in µs of each phase
//                        (encode_cmds_, decode_cmds_, encode_results_, decode_results_)
//                        and of the whole (the manual time); the words and segments of
//                        each message (request_/results_words, _segments).
//   BM_StepWire/reqs:N/hint:0|1   each message built with the step's size hint, as the
//                        client and the node build them (1), or with Cap'n Proto's default
//                        first segment, as they did before (0).
//
// The results are the ones the same commands give in process (execute_batch on a cache of
// BM_IterationRpc's instance, rows shared, so no index lists).
#include <benchmark/benchmark.h>

#include <capnp/message.h>
#include <capnp/serialize.h>

#include <chrono>
#include <cstdint>
#include <vector>

#include "actors/scheduler/command_executor.hpp"
#include "actors/scheduler/instance_config.hpp"
#include "actors/scheduler/shared_tokens.hpp"
#include "schema/convert.hpp"
#include "tools/hcbench/call_latencies.hpp"

namespace {

using namespace hc;
using clk = std::chrono::steady_clock;

constexpr std::size_t prompt_tokens = 512;

double micros(clk::time_point t0, clk::time_point t1) {
  return std::chrono::duration<double, std::micro>(t1 - t0).count();
}

void BM_StepWire(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const bool hint = state.range(1) != 0;
  instance_spec spec;
  spec.page_size = 1;
  spec.kv_tokens = 1 << 20;
  spec.ssm_slots = 1024;
  spec.request_rows = 256;
  spec.max_context_len = 1024;
  spec.shared_rows = true;
  spec.shared_tokens = n * prompt_tokens;
  radix_cache cache(cache_config_of(spec));
  request_config rc = request_config_of(spec);
  std::vector<kv_index> rows(shared_rows_bytes(spec) / sizeof(kv_index));
  rc.shared_rows = rows;
  request_manager m(rc, cache);
  std::vector<token_id> arena(n * prompt_tokens);

  bench::call_latencies encode_cmds(state, "encode_cmds_"), decode_cmds(state, "decode_cmds_"),
      encode_results(state, "encode_results_"), decode_results(state, "decode_results_"),
      whole(state);
  std::vector<command> cmds, decoded;
  std::vector<command_result> res, got;
  std::vector<request_handle> running;
  std::uint64_t next = 1;
  for (auto _ : state) {
    // The iteration's commands (untimed), as BM_IterationRpc shared:2 builds them.
    cmds.clear();
    for (request_handle h : running)
      cmds.emplace_back(cmd::finish{h, 0});
    running.clear();
    for (std::size_t i = 0; i < n; ++i, ++next) {
      const request_handle h = next;
      for (std::size_t t = 0; t < prompt_tokens; ++t)
        arena[i * prompt_tokens + t] =
            t < 256 ? static_cast<token_id>(t + 1) : static_cast<token_id>(h * 1000 + t);
      cmd::create c{h, 0, {}, {}};
      c.shared = cmd::token_range{i * prompt_tokens, prompt_tokens};
      cmds.emplace_back(std::move(c));
      cmds.emplace_back(cmd::match{h});
      cmds.emplace_back(cmd::alloc_req{h});
      cmds.emplace_back(cmd::alloc_kv{h, 0, 0, true});
      running.push_back(h);
    }
    // Their results in process (untimed).
    std::vector<command> run = cmds;
    if (status s = resolve_shared_tokens(run, arena); !s) {
      state.SkipWithError(s.err().message.c_str());
      return;
    }
    execute_batch(m, cache, run, res, nullptr);

    const auto t0 = clk::now();
    capnp::MallocMessageBuilder request(
        hint ? static_cast<unsigned>(wire_convert::step_request_size(cmds).wordCount)
             : capnp::SUGGESTED_FIRST_SEGMENT_WORDS);
    auto list = request.initRoot<wire::Session::StepParams>().initCommands(
        static_cast<unsigned>(cmds.size()));
    for (std::size_t i = 0; i < cmds.size(); ++i)
      wire_convert::put_command(list[static_cast<unsigned>(i)], cmds[i]);
    const kj::Array<capnp::word> request_words = capnp::messageToFlatArray(request);
    const auto t1 = clk::now();
    capnp::FlatArrayMessageReader request_reader(request_words);
    decoded.clear();
    for (auto c : request_reader.getRoot<wire::Session::StepParams>().getCommands()) {
      result<command> x = wire_convert::get_command(c);
      if (!x) {
        state.SkipWithError(x.err().message.c_str());
        return;
      }
      decoded.push_back(std::move(*x));
    }
    const auto t2 = clk::now();
    capnp::MallocMessageBuilder reply(
        hint ? static_cast<unsigned>(wire_convert::step_results_size(res).wordCount)
             : capnp::SUGGESTED_FIRST_SEGMENT_WORDS);
    auto out =
        reply.initRoot<wire::Session::StepResults>().initResults(static_cast<unsigned>(res.size()));
    for (std::size_t i = 0; i < res.size(); ++i)
      wire_convert::put_result(out[static_cast<unsigned>(i)], res[i]);
    const kj::Array<capnp::word> reply_words = capnp::messageToFlatArray(reply);
    const auto t3 = clk::now();
    capnp::FlatArrayMessageReader reply_reader(reply_words);
    got.clear();
    for (auto r : reply_reader.getRoot<wire::Session::StepResults>().getResults())
      got.push_back(wire_convert::get_result(r));
    const auto t4 = clk::now();

    if (decoded.size() != cmds.size() || got.size() != res.size()) {
      state.SkipWithError("the conversion lost commands or results");
      return;
    }
    encode_cmds.add(micros(t0, t1));
    decode_cmds.add(micros(t1, t2));
    encode_results.add(micros(t2, t3));
    decode_results.add(micros(t3, t4));
    whole.stop(t0);
    state.counters["request_words"] = static_cast<double>(request_words.size());
    state.counters["results_words"] = static_cast<double>(reply_words.size());
    state.counters["request_segments"] = static_cast<double>(request.getSegmentsForOutput().size());
    state.counters["results_segments"] = static_cast<double>(reply.getSegmentsForOutput().size());
  }
}

BENCHMARK(BM_StepWire)
    ->ArgNames({"reqs", "hint"})
    ->ArgsProduct({{8, 32, 128}, {0, 1}})
    ->UseManualTime();

}  // namespace
