// hcctl: the operator's command line for hybridcache.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>

#include "cli/command_line.hpp"
#include "cli/number_checks.hpp"
#include "cli/standard_streams.hpp"
#include "cli/token_file.hpp"
#include "schema/protocol_version.hpp"
#include "tools/hcctl/node_commands.hpp"
#include "tools/hcctl/replay_command.hpp"

namespace {

/// "unix:/path" for a socket path, the TCP address as given otherwise.
std::string node_address(const std::string& socket, const std::string& tcp) {
  return tcp.empty() ? "unix:" + socket : tcp;
}

/// hcctl's command line and the command it names; returns the exit status.
int run(int argc, char** argv) {
  CLI::App app{"hcctl - hybridcache control tool"};
  app.set_version_flag("--version", hc::rpc::version_line("hcctl"),
                       "Print the version (and the protocol it speaks) and exit");
  app.require_subcommand(1);
  std::string socket = "/tmp/hybridcache.sock", tcp, token_file;
  app.add_option("--socket", socket, "Unix socket of the node")->capture_default_str();
  app.add_option("--tcp", tcp, "TCP address host:port of the node (instead of --socket)");
  app.add_option("--token-file", token_file,
                 "File whose first line is the TCP shared secret (spaces, tabs and a CR around it "
                 "are ignored)");
  double timeout_s = 10;
  app.add_option("--timeout", timeout_s,
                 "Seconds to wait for the node's answer to the connect and to each call (then "
                 "exit 1 saying so); 0 = no limit")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 86400.0));
  bool json = false;

  hc::cli::replay_options ro;
  CLI::App* replay = app.add_subcommand(
      "replay",
      "Replay a sglang-mamba-trace (JSONL, plain or gzip): in process, or through the node "
      "when --socket or --tcp is given explicitly");
  replay
      ->add_option("trace", ro.trace_path,
                   "Trace file (.jsonl or .jsonl.gz); - reads standard input (plain or gzip)")
      ->required();
  CLI::Option* check =
      replay->add_flag("--check", ro.check,
                       "Compare every op with its expected fields; exit 1 at the first divergence");
  CLI::Option* bench =
      replay->add_flag("--bench", ro.bench,
                       "Time every op; print median and p99 per op kind and whole-trace ops/s "
                       "(in process, with the memory floor of match, cache_unfinished and finish)");
  // An option of --bench without it, a phase no trace has, or --memory with what it does
  // not do was ignored without a word (an empty table; --check unchecked): refused (exit 2).
  replay->add_option("--repeat", ro.repeat, "With --bench: number of runs, best one reported")
      ->default_val(1)
      ->check(CLI::Range(1, 1000))
      ->needs(bench);
  replay
      ->add_option("--phase", ro.phase,
                   "With --bench: per-op table only for ops of this trace phase "
                   "(warm, measure, evict_mamba, evict_page)")
      ->check(CLI::IsMember({"warm", "measure", "evict_mamba", "evict_page"}))
      ->needs(bench);
  replay
      ->add_flag("--memory", ro.memory,
                 "In process: the index's heap (tree, LRU, allocators, requests) per cached "
                 "token after the trace, measured around the cache's construction and "
                 "destruction (not with --check or --bench)")
      ->excludes(check)
      ->excludes(bench);
  replay->add_flag("--quiet,-q", ro.quiet, "Do not print the per-op JSON result lines");
  replay->add_flag("--json", ro.json,
                   "With --bench or --memory: print the summary as one JSON object");

  CLI::App* ping = app.add_subcommand("ping", "Check that the node answers (exit 0) or not (1)");
  CLI::App* stats = app.add_subcommand("stats",
                                       "Node totals: sessions, pools, requests, served counters "
                                       "and the host tiers' pools and traffic");
  CLI::App* inspect = app.add_subcommand("inspect", "Instances: tree summary, pools, stream");
  bool blocks = false;
  inspect->add_flag("--blocks", blocks,
                    "Also every device KV page of every instance (hash, parent, SSM checkpoint, "
                    "namespace): what its KV events describe");
  hc::cli::top_options to;
  CLI::App* top = app.add_subcommand(
      "top", "A live view of the main rates (steps, matches, hit tokens, evictions) and pools");
  top->add_option("--interval", to.interval_s, "Seconds between refreshes")
      ->capture_default_str()
      ->check(CLI::Range(0.1, 3600.0));
  top->add_option("--count", to.count, "Refreshes before exiting; 0 = until interrupted")
      ->capture_default_str();
  for (CLI::App* sc : {ping, stats, inspect, top})
    sc->add_flag("--json", json, "Print one JSON object (top: one per refresh, a line each)");

  hc::cli::guard_numbers(app);
  if (const int rc = hc::cli::parse_command_line(app, argc, argv); rc >= 0) return rc;
  hc::cli::node_options no;
  no.address = node_address(socket, tcp);
  no.json = json;
  no.blocks = blocks;
  // Rounded up: a positive timeout never becomes 0 (no limit).
  no.timeout = std::chrono::milliseconds(static_cast<long long>(std::ceil(timeout_s * 1000.0)));
  // An empty --tcp reached the default socket, where another node may listen, and --socket
  // beside --tcp or a --token-file without it was ignored without a word: refused (exit 2).
  if (app.count("--tcp") > 0 && tcp.empty()) {
    std::fprintf(stderr,
                 "hcctl: --tcp is empty: give the node's host:port, or leave --tcp out to reach "
                 "--socket\n");
    return 2;
  }
  if (app.count("--tcp") > 0 && app.count("--socket") > 0) {
    std::fprintf(stderr, "hcctl: give --socket or --tcp, not both\n");
    return 2;
  }
  if (app.count("--token-file") > 0 && tcp.empty()) {
    std::fprintf(stderr,
                 "hcctl: --token-file is the secret of a --tcp node (the Unix socket needs "
                 "none): give --tcp too, or leave --token-file out\n");
    return 2;
  }
  if (!tcp.empty() && token_file.empty()) {
    std::fprintf(stderr, "hcctl: --tcp needs --token-file (the node's TCP shared secret)\n");
    return 2;
  }
  if (!token_file.empty()) {
    auto secret = hc::cli::read_token_file(token_file);
    if (!secret || secret->empty()) {
      std::fprintf(stderr, "hcctl: --token-file %s: %s\n", token_file.c_str(),
                   secret ? "no secret on its first line" : "cannot read it");
      return 2;
    }
    no.token = std::move(*secret);
  }
  if (replay->parsed() && ro.json && !ro.bench && !ro.memory) {
    std::fprintf(stderr, "hcctl replay: --json needs --bench or --memory (what it prints)\n");
    return 2;
  }
  if (replay->parsed()) {
    // In process unless the user named a node explicitly.
    if (app.count("--socket") > 0 || !tcp.empty()) {
      ro.address = no.address;
      ro.token = no.token;
      ro.timeout = no.timeout;
    }
    return hc::cli::run_replay(ro);
  }
  if (ping->parsed()) return hc::cli::run_ping(no);
  if (stats->parsed()) return hc::cli::run_stats(no);
  if (inspect->parsed()) return hc::cli::run_inspect(no);
  if (top->parsed()) return hc::cli::run_top(no, to);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  // Before anything opens a file: 0, 1 and 2 that were closed become /dev/null.
  if (const int rc = hc::cli::make_standard_streams_safe("hcctl"); rc >= 0) return rc;
  return hc::cli::finish_standard_output("hcctl", run(argc, argv));
}
