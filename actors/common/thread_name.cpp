#include "actors/common/thread_name.hpp"

#include <algorithm>
#include <fstream>
#include <string>

namespace hc {

void name_this_thread(std::string_view name) noexcept {
  // Linux keeps a thread's name in /proc/thread-self/comm: writing it is what
  // pthread_setname_np does for the calling thread, with the standard library only (this
  // folder's rule). Where that file is missing nothing happens.
  try {
    std::ofstream comm("/proc/thread-self/comm");
    comm << name.substr(0, std::min<std::size_t>(name.size(), 15));
  } catch (...) {  // best effort, as promised
  }
}

}  // namespace hc
