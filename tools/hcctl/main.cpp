// hcctl: the operator's command line for hybridcache.
#include <CLI/CLI.hpp>

#include "tools/hcctl/replay_command.hpp"

int main(int argc, char** argv) {
  CLI::App app{"hcctl - hybridcache control tool"};
  app.require_subcommand(1);

  hc::cli::replay_options ro;
  CLI::App* replay = app.add_subcommand(
      "replay",
      "Replay a sglang-mamba-trace (JSONL, plain or gzip) against a fresh in-process cache");
  replay->add_option("trace", ro.trace_path, "Trace file (.jsonl or .jsonl.gz)")->required();
  replay->add_flag("--check", ro.check,
                   "Compare every op with its expected fields; exit 1 at the first divergence");
  replay->add_flag("--bench", ro.bench,
                   "Time every op; print median and p99 per op kind and whole-trace ops/s");
  replay->add_option("--repeat", ro.repeat, "With --bench: number of runs, best one reported")
      ->default_val(1)
      ->check(CLI::Range(1, 1000));
  replay->add_option("--phase", ro.phase,
                     "With --bench: per-op table only for ops of this trace phase "
                     "(warm, measure, evict_mamba, evict_page)");
  replay->add_flag("--quiet,-q", ro.quiet, "Do not print the per-op JSON result lines");
  replay->add_flag("--json", ro.json, "With --bench: print the summary as one JSON object");

  CLI11_PARSE(app, argc, argv);
  if (replay->parsed()) return hc::cli::run_replay(ro);
  return 2;
}
