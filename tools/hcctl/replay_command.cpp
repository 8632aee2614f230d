#include "tools/hcctl/replay_command.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <vector>

#include "tools/replay/index_memory.hpp"
#include "tools/replay/replayer.hpp"
#include "tools/replay/rpc_backend.hpp"

namespace hc::cli {
namespace {

using nlohmann::json;

struct op_stats {
  std::vector<std::uint64_t> ns;
  /// The op's memory floor timed right after it: as the trace left the bytes, and warm.
  std::vector<std::uint64_t> floor_ns, warm_ns;
};

double percentile_us(std::vector<std::uint64_t>& v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t idx =
      std::min(v.size() - 1, static_cast<std::size_t>(q * static_cast<double>(v.size() - 1) + 0.5));
  return static_cast<double>(v[idx]) / 1000.0;
}

struct bench_run {
  std::map<std::string, op_stats> per_op;
  std::uint64_t total_ns = 0;  // cache ops, checks excluded
  std::uint64_t measure_ns = 0;
  std::size_t ops = 0, measure_ops = 0;
};

int run_memory(const replay_options& opts, const replay::trace& tr) {
  if (!opts.address.empty()) {
    std::fprintf(stderr,
                 "hcctl replay: --memory measures this process: run it without a node "
                 "address\n");
    return 2;
  }
  auto m = replay::measure_index_memory(tr);
  if (!m) {
    std::fprintf(stderr, "hcctl replay: %s\n", m.err().message.c_str());
    return 1;
  }
  json j = {{"trace", replay::trace_name(opts.trace_path)},
            {"ops", m->ops},
            {"page_size", tr.config.page_size},
            {"pool_tokens", m->pool_tokens},
            {"cached_tokens", m->cached_tokens},
            {"tree_nodes", m->tree_nodes},
            {"slot_nodes", m->slot_nodes},
            {"bytes_at_start", m->bytes_at_start},
            {"bytes_at_end", m->bytes_at_end},
            {"growth_bytes_per_cached_token", m->growth_per_cached_token()},
            {"total_bytes_per_cached_token", m->total_per_cached_token()}};
  if (opts.json) {
    std::printf("%s\n", j.dump().c_str());
    return 0;
  }
  std::printf("%s", fmt::format("trace {}  ({} ops, page {})\n"
                                "cached tokens {} in {} nodes, {} holding a slot (pool {} tokens)\n"
                                "index heap: {} bytes at start, {} at the end\n"
                                "per cached token: {:.1f} bytes of growth, {:.1f} in all\n",
                                replay::trace_name(opts.trace_path), m->ops, tr.config.page_size,
                                m->cached_tokens, m->tree_nodes, m->slot_nodes, m->pool_tokens,
                                m->bytes_at_start, m->bytes_at_end, m->growth_per_cached_token(),
                                m->total_per_cached_token())
                        .c_str());
  return 0;
}

}  // namespace

int run_replay(const replay_options& opts) {
  auto tr = replay::read_trace(opts.trace_path);
  if (!tr) {
    std::fprintf(stderr, "hcctl replay: %s\n", tr.err().message.c_str());
    return 2;
  }
  if (opts.memory) return run_memory(opts, *tr);
  replay::token_generator gen(tr->config);
  if (status s = gen.self_test(); !s) {
    std::fprintf(stderr, "hcctl replay: %s\n", s.err().message.c_str());
    return 2;
  }
  const bool print_lines = !opts.quiet && !opts.bench;
  const int runs = opts.bench ? std::max(1, opts.repeat) : 1;
  std::vector<bench_run> results;
  std::size_t agreed = 0;
  for (int run = 0; run < runs; ++run) {
    std::unique_ptr<replay::replay_backend> backend;
    if (!opts.address.empty()) {
      auto b = replay::rpc_backend::connect(opts.address, tr->config, opts.token, opts.timeout);
      if (!b) {
        std::fprintf(stderr, "hcctl replay: %s\n", b.err().message.c_str());
        return 2;
      }
      backend = std::move(*b);
    }
    replay::replayer rp(tr->config, std::move(backend));
    if (opts.bench && opts.address.empty()) rp.enable_floors();  // a node's ops include the RPC
    bench_run b;
    std::string out_buf;
    for (const replay::trace_op& op : tr->ops) {
      replay::outcome o;
      const std::uint64_t ns = rp.execute(op, o);
      if (op.kind != replay::op_kind::check) {
        if (opts.phase.empty() || op.phase == opts.phase) {
          op_stats& st = b.per_op[op.name];
          st.ns.push_back(ns);
          if (o.floor) {
            st.floor_ns.push_back(o.floor->first_ns);
            st.warm_ns.push_back(o.floor->warm_ns);
          }
        }
        b.total_ns += ns;
        ++b.ops;
        if (op.phase == "measure") {
          b.measure_ns += ns;
          ++b.measure_ops;
        }
      }
      if (!print_lines && !opts.check) continue;
      json line = replay::replayer::to_json(op, o);
      if (print_lines) {
        out_buf += line.dump();
        out_buf += '\n';
        if (out_buf.size() > (1 << 16)) {
          std::fwrite(out_buf.data(), 1, out_buf.size(), stdout);
          out_buf.clear();
        }
      }
      if (opts.check) {
        if (auto d = replay::replayer::compare(op, line)) {
          std::fwrite(out_buf.data(), 1, out_buf.size(), stdout);
          std::fflush(stdout);
          std::fprintf(stderr, "hcctl replay: divergence at %s\n", d->describe().c_str());
          return 1;
        }
        if (run == 0) ++agreed;
      }
    }
    std::fwrite(out_buf.data(), 1, out_buf.size(), stdout);
    results.push_back(std::move(b));
  }
  if (opts.check)
    std::fprintf(stderr, "hcctl replay: %zu of %zu ops agree with %s\n", agreed, tr->ops.size(),
                 replay::trace_name(opts.trace_path).c_str());
  if (!opts.bench) return 0;

  // Best run = the one with the smallest total time (the machine is shared and noisy).
  auto best = std::min_element(
      results.begin(), results.end(),
      [](const bench_run& a, const bench_run& b) { return a.total_ns < b.total_ns; });
  json summary;
  summary["trace"] = replay::trace_name(opts.trace_path);
  summary["runs"] = runs;
  summary["phase"] = opts.phase.empty() ? "all" : opts.phase;
  summary["ops"] = best->ops;
  summary["ops_per_s"] =
      best->total_ns ? static_cast<double>(best->ops) * 1e9 / static_cast<double>(best->total_ns)
                     : 0.0;
  summary["measure_ops_per_s"] = best->measure_ns ? static_cast<double>(best->measure_ops) * 1e9 /
                                                        static_cast<double>(best->measure_ns)
                                                  : 0.0;
  for (auto& [name, st] : best->per_op) {
    json& row = summary["per_op"][name];
    row = {{"count", st.ns.size()},
           {"median_us", percentile_us(st.ns, 0.5)},
           {"p99_us", percentile_us(st.ns, 0.99)}};
    if (!st.floor_ns.empty()) {
      const double med = row["median_us"].get<double>();
      const double floor = percentile_us(st.floor_ns, 0.5), warm = percentile_us(st.warm_ns, 0.5);
      row["floor_median_us"] = floor;
      row["x_floor"] = floor > 0 ? med / floor : 0.0;
      row["warm_floor_median_us"] = warm;
      row["x_warm_floor"] = warm > 0 ? med / warm : 0.0;
    }
  }
  if (opts.json) {
    std::printf("%s\n", summary.dump().c_str());
    return 0;
  }
  std::printf("%s",
              fmt::format("trace {}  ({} cache ops, best of {} runs; per-op table: {} phase)\n",
                          replay::trace_name(opts.trace_path), best->ops, runs,
                          opts.phase.empty() ? "every" : opts.phase)
                  .c_str());
  std::printf("%-18s %8s %12s %12s %10s %8s %10s %8s\n", "op", "count", "median_us", "p99_us",
              "floor_us", "x_floor", "warm_us", "x_warm");
  for (auto& [name, v] : summary["per_op"].items()) {
    std::printf("%-18s %8zu %12.3f %12.3f", name.c_str(), v["count"].get<std::size_t>(),
                v["median_us"].get<double>(), v["p99_us"].get<double>());
    if (v.contains("floor_median_us"))
      std::printf(" %10.3f %8.2f %10.3f %8.2f\n", v["floor_median_us"].get<double>(),
                  v["x_floor"].get<double>(), v["warm_floor_median_us"].get<double>(),
                  v["x_warm_floor"].get<double>());
    else
      std::printf(" %10s %8s %10s %8s\n", "-", "-", "-", "-");
  }
  std::printf("whole trace: %.0f ops/s   measure phase: %.0f ops/s\n",
              summary["ops_per_s"].get<double>(), summary["measure_ops_per_s"].get<double>());
  return 0;
}

}  // namespace hc::cli
