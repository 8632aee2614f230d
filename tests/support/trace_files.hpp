#pragma once
// The SGLang traces bundled in tests/data (HC_TEST_DATA), and gtest-safe names for them.

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

namespace hc::test {

inline std::vector<std::string> bundled_traces() {
  namespace fs = std::filesystem;
  std::vector<std::string> out;
  // The environment wins (ctest sets it); the compiled-in path serves gtest discovery,
  // which runs the binary at build time without that environment.
  const char* dir = std::getenv("HC_TEST_DATA");
  const fs::path d = dir ? dir : HC_TEST_DATA_DIR;
  if (fs::exists(d))
    for (const auto& e : fs::directory_iterator(d))
      if (e.path().string().find(".jsonl") != std::string::npos) out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

/// "p64_ctx4k_c100" for ".../p64_ctx4k_c100.jsonl.gz".
inline std::string trace_test_name(const std::string& path) {
  std::string n = std::filesystem::path(path).filename().string();
  n = n.substr(0, n.find('.'));
  for (char& c : n)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return n;
}

}  // namespace hc::test
