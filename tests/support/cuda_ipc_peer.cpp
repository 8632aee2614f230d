// The worker side of tests/unit/cuda_ipc_test.cpp, in its own process (a CUDA IPC handle
// cannot be opened by the process that exported it, and CUDA does not survive fork):
//   cuda_ipc_peer DEVICE POOL READY DONE POOL_BYTES OFFSET read LENGTH -> the bytes in hex
//   cuda_ipc_peer DEVICE POOL READY DONE POOL_BYTES OFFSET write HEX   -> writes them
// (POOL, READY, DONE: the hex of the pool's and the session's events' IPC handles.) Like a
// worker's forward it waits for `ready` on its stream first and records `done` after a write.
// Exit status 0 on success, 1 with the error on stderr.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "gpu/cuda_ipc_mapping.hpp"
#include "gpu/cuda_worker_stream.hpp"

namespace {

std::string unhex(const std::string& h) {
  std::string out;
  for (std::size_t i = 0; i + 1 < h.size(); i += 2)
    out.push_back(static_cast<char>(std::stoi(h.substr(i, 2), nullptr, 16)));
  return out;
}

int fail(const std::string& why) {
  std::fprintf(stderr, "cuda_ipc_peer: %s\n", why.c_str());
  return 1;
}

}  // namespace

int run(int argc, char** argv) {
  if (argc != 9)
    return fail(
        "usage: DEVICE POOL_HANDLE POOL_BYTES READY_EVENT DONE_EVENT OFFSET "
        "read LENGTH | write HEX");
  const auto device = static_cast<std::uint32_t>(std::stoul(argv[1]));
  const std::size_t pool_bytes = std::stoull(argv[3]), offset = std::stoull(argv[6]);
  const std::string mode = argv[7];
  auto m = hc::cuda_ipc_mapping::open(device, unhex(argv[2]), pool_bytes);
  if (!m) return fail(m.err().message);
  auto stream = hc::cuda_worker_stream::create(device, unhex(argv[4]), unhex(argv[5]));
  if (!stream) return fail(stream.err().message);
  hc::cuda_worker_stream& st = **stream;
  // As a forward would: after beginForward, wait for the node's queued ops on the GPU.
  if (auto s = st.wait_ready(); !s) return fail(s.err().message);
  if (mode == "read") {
    std::vector<std::byte> bytes(std::stoull(argv[8]));
    if (auto s = st.read(*m, offset, bytes); !s) return fail(s.err().message);
    for (std::byte b : bytes)
      std::printf("%02x", static_cast<unsigned>(b));
    std::printf("\n");
    return 0;
  }
  if (mode == "write") {
    const std::string data = unhex(argv[8]);
    if (auto s = st.write(*m, offset, std::as_bytes(std::span(data.data(), data.size()))); !s)
      return fail(s.err().message);
    // As after a forward: `done` after the writes, then endForward.
    if (auto s = st.record_done(); !s) return fail(s.err().message);
    return 0;
  }
  return fail("unknown mode " + mode);
}

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {  // a malformed number or hex digit
    return fail(std::string("bad argument: ") + e.what());
  }
}
