// The worker side of tests/unit/cuda_ipc_test.cpp, in its own process (a CUDA IPC handle
// cannot be opened by the process that exported it, and CUDA does not survive fork):
//   cuda_ipc_peer DEVICE HANDLE_HEX POOL_BYTES OFFSET read LENGTH   -> prints the bytes in hex
//   cuda_ipc_peer DEVICE HANDLE_HEX POOL_BYTES OFFSET write HEX     -> writes them
// Exit status 0 on success, 1 with the error on stderr.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "gpu/cuda_ipc_mapping.hpp"

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
  if (argc != 7) return fail("usage: DEVICE HANDLE_HEX POOL_BYTES OFFSET read LENGTH | write HEX");
  const auto device = static_cast<std::uint32_t>(std::stoul(argv[1]));
  const std::string handle = unhex(argv[2]);
  const std::size_t pool_bytes = std::stoull(argv[3]), offset = std::stoull(argv[4]);
  const std::string mode = argv[5];
  auto m = hc::cuda_ipc_mapping::open(device, handle, pool_bytes);
  if (!m) return fail(m.err().message);
  if (mode == "read") {
    std::vector<std::byte> bytes(std::stoull(argv[6]));
    if (auto s = m->read(offset, bytes); !s) return fail(s.err().message);
    for (std::byte b : bytes)
      std::printf("%02x", static_cast<unsigned>(b));
    std::printf("\n");
    return 0;
  }
  if (mode == "write") {
    const std::string data = unhex(argv[6]);
    if (auto s = m->write(offset, std::as_bytes(std::span(data.data(), data.size()))); !s)
      return fail(s.err().message);
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
