#pragma once
// Names for the node's own threads, so that `top -H`, `ps -L`, gdb and perf tell them apart
// (CAF names its threads `caf.*`, RocksDB `rocksdb:*`; a thread without a name shows the
// process's). Vocabulary header: standard library only (so is the definition: Linux's
// /proc/thread-self/comm).

#include <string_view>

namespace hc {

/// Names the calling thread. Linux keeps 15 bytes of a name; a longer one is cut there.
/// Best effort: a failure changes nothing else and is not reported.
void name_this_thread(std::string_view name) noexcept;

}  // namespace hc
