// Replays fuzz inputs without libFuzzer: in the release and sanitizer builds every fuzz
// target is linked with this main and run by ctest over its seed corpus and its
// regressions (tests/fuzz/corpus/<target>/, tests/fuzz/regressions/<target>/), so an input
// that once crashed stays a test. Arguments: files or directories (read recursively).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);
extern "C" __attribute__((weak)) int LLVMFuzzerInitialize(int* argc, char*** argv);

namespace {

bool run_file(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  if (!f) {
    std::fprintf(stderr, "cannot read %s\n", p.c_str());
    return false;
  }
  const std::vector<char> bytes((std::istreambuf_iterator<char>(f)), {});
  // A heap copy of exactly the input's size, as libFuzzer passes it: ASan sees overreads.
  std::vector<std::uint8_t> data(bytes.begin(), bytes.end());
  LLVMFuzzerTestOneInput(data.data(), data.size());
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (LLVMFuzzerInitialize) LLVMFuzzerInitialize(&argc, &argv);
  std::size_t inputs = 0;
  for (int i = 1; i < argc; ++i) {
    const std::filesystem::path arg(argv[i]);
    std::error_code ec;
    if (std::filesystem::is_directory(arg, ec)) {
      std::vector<std::filesystem::path> files;
      for (const auto& e : std::filesystem::recursive_directory_iterator(arg))
        if (e.is_regular_file()) files.push_back(e.path());
      std::sort(files.begin(), files.end());  // a reproducible order
      for (const auto& f : files) {
        if (!run_file(f)) return 1;
        ++inputs;
      }
    } else if (std::filesystem::exists(arg, ec)) {
      if (!run_file(arg)) return 1;
      ++inputs;
    }
  }
  std::printf("%zu inputs replayed, no finding\n", inputs);
  if (inputs == 0) {
    std::fprintf(stderr, "no inputs: give corpus files or directories\n");
    return 1;
  }
  return 0;
}
