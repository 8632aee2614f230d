// hcsim: drives a running hybridcached as SGLang schedulers would, with the toy hybrid
// model's bytes, and verifies every prefix hit against recomputation (see sim.hpp).
//
//   hcsim --socket PATH --strategy {no_buffer,extra_buffer,extra_buffer_lazy} --ops N
//         --workers W --seed S [--json] [workload and instance options, --help]
//
// Prints a summary (text, or one JSON object with --json); exit status 0 only when
// mismatches, leaks and errors are all 0; 1 otherwise; 2 for bad options; 3 when
// --device cuda was asked for on a machine without that CUDA device (says why).
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "cli/command_line.hpp"
#include "cli/number_checks.hpp"
#include "cli/standard_streams.hpp"
#include "gpu/device_probe.hpp"
#include "schema/protocol_version.hpp"
#include "tools/hcsim/sim.hpp"

// In a coverage build (HC_COVERAGE) the profile runtime writes its counters at exit; a
// forked worker leaves through _exit, so it writes them itself. Null otherwise.
extern "C" int __llvm_profile_write_file(void) __attribute__((weak));  // NOLINT

namespace {

using namespace hc;
using namespace hc::sim;

/// The node's sizing rules name SGLang's server flags (what its users know); hcsim sets the
/// same things under its own names. The hcsim flag for each SGLang name the message uses.
std::string hcsim_flags_in(const std::string& message) {
  static constexpr std::pair<const char*, const char*> names[] = {
      {"--mamba-scheduler-strategy", "--strategy"},   {"--disable-overlap-schedule", "--overlap 0"},
      {"--mamba-track-interval", "--track-interval"}, {"mamba_chunk_size", "--chunk"},
      {"hicacheSsmBytes", "--host-ssm-slots"},        {"hicacheRatio", "--host-ratio"},
  };
  std::string out;
  for (const auto& [sglang, ours] : names) {
    if (message.find(sglang) == std::string::npos) continue;
    out += out.empty() ? "" : ", ";
    out += std::string(sglang) + " is hcsim's " + ours;
  }
  return out;
}

/// Runs the workers as processes (each its own connection and session) and collects
/// their reports through pipes.
sim_report run_all(const sim_config& cfg) {
  struct child {
    pid_t pid;
    int fd;
  };
  std::vector<child> kids;
  sim_report total;
  for (unsigned w = 0; w < cfg.workers; ++w) {
    int fds[2];
    if (::pipe(fds) != 0) {
      ++total.errors;
      continue;
    }
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::close(fds[0]);
      const std::string out = run_worker(cfg, w).json();
      std::size_t at = 0;
      while (at < out.size()) {
        const ssize_t n = ::write(fds[1], out.data() + at, out.size() - at);
        if (n <= 0) break;
        at += static_cast<std::size_t>(n);
      }
      ::close(fds[1]);
      if (__llvm_profile_write_file != nullptr) __llvm_profile_write_file();
      ::_exit(0);
    }
    ::close(fds[1]);
    if (pid < 0) {
      ::close(fds[0]);
      ++total.errors;
      continue;
    }
    kids.push_back({pid, fds[0]});
  }
  for (const child& k : kids) {
    std::string s;
    char buf[4096];
    ssize_t n;
    while ((n = ::read(k.fd, buf, sizeof buf)) > 0)
      s.append(buf, static_cast<std::size_t>(n));
    ::close(k.fd);
    int status = 0;
    ::waitpid(k.pid, &status, 0);
    sim_report r;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || !sim_report::from_json(s, r)) {
      ++total.errors;
      if (total.first_error.empty()) total.first_error = "a worker process died";
      continue;
    }
    total.merge(r);
  }
  return total;
}

/// hcsim's command line and its run; returns the exit status.
int run(int argc, char** argv) {
  sim_config cfg;
  std::string strat = "extra_buffer";
  CLI::App app{"hcsim: drive a hybridcached like SGLang schedulers, verify every prefix hit"};
  app.set_version_flag("--version", hc::rpc::version_line("hcsim"),
                       "Print the version (and the protocol it speaks) and exit");
  app.add_option("--socket", cfg.socket, "The node's Unix socket")->capture_default_str();
  app.add_option("--strategy", strat, "Mamba scheduling strategy")
      ->capture_default_str()
      ->check(CLI::IsMember({"no_buffer", "extra_buffer", "extra_buffer_lazy"}));
  app.add_option("--ops", cfg.ops, "Commands to send over all workers")->capture_default_str();
  app.add_option("--workers", cfg.workers, "Worker processes (one session each)")
      ->capture_default_str()
      ->check(CLI::Range(1u, 64u));
  app.add_option("--seed", cfg.seed, "Workload seed")->capture_default_str();
  app.add_flag("--json", cfg.json, "Print one JSON object instead of the text summary");
  app.add_option("--conversations", cfg.conversations, "Conversations per worker")
      ->capture_default_str()
      ->check(CLI::Range(1u, 100000u));
  app.add_option("--system-prompts", cfg.system_prompts, "Distinct shared system prompts")
      ->capture_default_str()
      ->check(CLI::Range(1u, 1000u));
  // Bounded: the tokens are made before the node sees them (a billion took minutes and
  // gigabytes before the node refused the command), and a node takes at most
  // --max-command-tokens (1,048,576 by default) in one command.
  app.add_option("--system-prompt-len", cfg.system_prompt_len, "Tokens of a system prompt")
      ->capture_default_str()
      ->check(CLI::Range(0u, 1u << 24));
  app.add_option("--turn-len", cfg.turn_len,
                 "Mean new tokens per turn (a turn draws 1 to twice as many)")
      ->capture_default_str()
      ->check(CLI::Range(0u, 1u << 23));
  app.add_option("--output-len", cfg.output_len, "Mean decode steps per request")
      ->capture_default_str();
  app.add_option("--batch", cfg.batch, "Requests in flight per worker")
      ->capture_default_str()
      ->check(CLI::Range(1u, 256u));
  app.add_option("--chunked-prefill", cfg.chunked_prefill, "Tokens per prefill chunk")
      ->capture_default_str()
      ->check(CLI::Range(1u, 1u << 20));
  app.add_option("--abort-rate", cfg.abort_rate, "Probability of an abort per scheduling step")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--pin-rate", cfg.pin_rate,
                 "Probability that a finished turn pins a conversation (Command.pin) for "
                 "10-200 steps, at most 2 pins a worker: its own, or half the time another one "
                 "(perhaps on the host tier only: the pin loads it back); a pinned prefix found "
                 "shorter before its unpin is a pin loss (exit 1)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--demote-rate", cfg.demote_rate,
                 "Probability that a finished turn demotes its conversation (Command.demote) "
                 "at the worker's next step: to the host tier, where its next turn loads it "
                 "back (the toy model checks the bytes), or evicted without one")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--tool-rate", cfg.tool_rate,
                 "Probability that a finished turn waits on a tool: its conversation gets no "
                 "new turn for --tool-steps iterations of the worker's scheduling loop (an "
                 "agent's tool call)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--tool-steps", cfg.tool_steps,
                 "Scheduling iterations a tool wait lasts (--tool-rate)")
      ->capture_default_str()
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 32));
  app.add_flag("--demote-tools", cfg.demote_tools,
               "Demote a conversation when its tool wait begins (Command.demote), as an agent "
               "framework that knows the wait would; needs --tool-rate");
  app.add_option("--max-context", cfg.max_context, "A conversation restarts beyond this length")
      ->capture_default_str();
  app.add_option("--page-size", cfg.page_size, "Tokens per KV page")->capture_default_str();
  app.add_option("--kv-tokens", cfg.kv_tokens, "L1 KV tokens of the instance (small: eviction)")
      ->capture_default_str();
  app.add_option("--slots", cfg.slots, "L1 SSM slots of the instance")->capture_default_str();
  app.add_option("--chunk", cfg.chunk, "Model chunk size (FLA 64, Mamba2 128/256)")
      ->capture_default_str()
      ->check(CLI::IsMember({64, 128, 256}));
  app.add_flag("--mamba2", cfg.mamba2, "Mamba2 chunk-state convention (default FLA/GDN)");
  app.add_option("--track-interval", cfg.track_interval, "Decode track interval")
      ->capture_default_str();
  app.add_option("--overlap", cfg.overlap, "Instance with ping-pong track slots (overlap)")
      ->capture_default_str();
  app.add_flag("--overlap-scheduling", cfg.overlap_scheduling,
               "Experimental: run each forward on a thread while the next batch is scheduled");
  std::string device = "cpu";
  app.add_option("--device", device,
                 "Where the instance's L1 pools live and the forwards run: cpu (shared memory) or "
                 "cuda (the node's CUDA pools through IPC, the toy model's kernels on the GPU)")
      ->capture_default_str()
      ->check(CLI::IsMember({"cpu", "cuda"}));
  app.add_option("--device-ordinal", cfg.device_ordinal, "CUDA device of the pools (--device cuda)")
      ->capture_default_str();
  app.add_option("--host-ratio", cfg.host_ratio, "Host tier as a multiple of L1 (> 1; 0 = off)")
      ->capture_default_str();
  app.add_option(
         "--host-ssm-slots", cfg.host_ssm_slots,
         "Host SSM pool of this many slots, sized on its own (InstanceSpec.hicacheSsmBytes; "
         "needs --host-ratio; > --slots; 0 = by the ratio)")
      ->capture_default_str();
  app.add_flag("--prefetch", cfg.prefetch,
               "Storage prefetch before each admission (needs --host-ratio and the node's L3)");
  app.add_option("--model", cfg.model, "Model id of the instance")->capture_default_str();
  app.add_option("--progress", cfg.progress, "A progress line every 2 s on stderr")
      ->capture_default_str();
  hc::cli::guard_numbers(app);
  if (const int rc = hc::cli::parse_command_line(app, argc, argv); rc >= 0) return rc;
  cfg.strat = strat == "no_buffer"      ? strategy::no_buffer
              : strat == "extra_buffer" ? strategy::extra_buffer
                                        : strategy::extra_buffer_lazy;
  cfg.device = *parse_device_kind(device);
  if (cfg.device == device_kind::cuda) {  // exit 3: this machine cannot run CUDA mode
    // In a child: the workers are forked below, and CUDA does not survive a fork.
    const gpu::device_probe_result probe = gpu::probe_devices_in_child();
    if (probe.device_count <= static_cast<int>(cfg.device_ordinal)) {
      std::fprintf(stderr, "hcsim: --device cuda: no CUDA device %u here: %s\n", cfg.device_ordinal,
                   probe.device_count == 0 ? probe.reason.c_str() : "ordinal out of range");
      return 3;
    }
  }
  if (status ok = check_instance(cfg); !ok) {  // before any worker: a usage error
    std::fprintf(stderr, "hcsim: these settings would be refused (by the node or SGLang): %s\n",
                 ok.err().message.c_str());
    if (const std::string flags = hcsim_flags_in(ok.err().message); !flags.empty())
      std::fprintf(stderr, "hcsim: (%s)\n", flags.c_str());
    return 2;
  }
  if (cfg.demote_tools && cfg.tool_rate <= 0) {
    std::fprintf(stderr, "hcsim: --demote-tools needs --tool-rate > 0 (no turn waits on a tool)\n");
    return 2;
  }
  if (cfg.prefetch && cfg.host_ratio <= 1) {
    std::fprintf(stderr, "hcsim: --prefetch needs --host-ratio > 1\n");
    return 2;
  }
  sim_report before_run;
  const served_counts before = served_before(cfg, before_run);
  sim_report r = run_all(cfg);
  r.merge(before_run);
  check_idle(cfg, before, r);
  r.mismatches = r.kv_mismatches + r.state_mismatches;
  if (cfg.json) {
    std::printf("%s\n", r.json().c_str());
  } else {
    std::printf("%s", r.text().c_str());
  }
  return r.mismatches == 0 && r.leaks == 0 && r.errors == 0 && r.pin_losses == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  // Before anything opens a file: 0, 1 and 2 that were closed become /dev/null.
  if (const int rc = hc::cli::make_standard_streams_safe("hcsim"); rc >= 0) return rc;
  return hc::cli::finish_standard_output("hcsim", run(argc, argv));
}
