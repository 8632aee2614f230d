// Fuzz target 3: the trace reader (spec/trace-format.md) on arbitrary files, and what
// `hcctl replay` does next with a trace it accepted: the token generator's self test, and,
// when the trace's pools are small, the whole replay in process. A bad trace must give an
// error naming the line, never a crash, a hang or an unbounded allocation.
#include <cstdint>
#include <cstdio>
#include <string>

#include "tests/fuzz/fuzz_input.hpp"
#include "tools/replay/replayer.hpp"
#include "tools/replay/trace.hpp"

namespace {

const std::string& scratch_path() {
  return hc::fuzz::scratch_file("trace", ".jsonl");
}

/// Replays only what runs in milliseconds (pools of a real trace's size, few ops); what
/// the reader accepts must be safe to replay whatever its size (read_trace bounds it).
bool small(const hc::replay::trace& t) {
  const auto& c = t.config;
  return c.kv_pool_tokens <= (1u << 17) && c.mamba_pool_slots <= 4096 && c.req_pool_rows <= 1024 &&
         t.ops.size() <= 512;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace hc::replay;
  {
    std::FILE* f = std::fopen(scratch_path().c_str(), "wb");
    if (!f) hc::fuzz::fail("cannot write " + scratch_path());
    if (size != 0 && std::fwrite(data, 1, size, f) != size) hc::fuzz::fail("short write");
    std::fclose(f);
  }
  auto t = read_trace(scratch_path());
  if (!t) {
    if (t.err().message.empty()) hc::fuzz::fail("a refused trace must say why");
    return 0;
  }
  token_generator gen(t->config);
  (void)gen.self_test();
  if (!small(*t)) return 0;
  replayer r(t->config);
  for (const trace_op& op : t->ops) {
    outcome out;
    r.execute(op, out);
    (void)replayer::compare(op, replayer::to_json(op, out));
  }
  return 0;
}
