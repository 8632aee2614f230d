// l3_format_marker_tool STORE [NEW]: prints the format marker of the closed L3 store in
// STORE (a node's <data-dir>/l3) and, given NEW, replaces it — what a store written by
// another release of hybridcache carries. Exit status 1 with RocksDB's message on a
// failure, 2 on bad usage. For tests/hybridcached_process_test.sh.
#include <iostream>
#include <string>

#include "tests/support/l3_format_marker.hpp"

int main(int argc, char** argv) {
  if (argc != 2 && argc != 3) {
    std::cerr << "usage: l3_format_marker_tool STORE [NEW]\n";
    return 2;
  }
  const std::string replacement = argc == 3 ? argv[2] : "";
  std::string error;
  const std::string marker =
      hc::test::l3_format_marker(argv[1], argc == 3 ? &replacement : nullptr, error);
  if (!error.empty()) {
    std::cerr << "l3_format_marker_tool: " << error << "\n";
    return 1;
  }
  std::cout << marker << "\n";
  return 0;
}
