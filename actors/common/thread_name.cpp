#include "actors/common/thread_name.hpp"

#include <pthread.h>

#include <algorithm>
#include <array>

namespace hc {

void name_this_thread(std::string_view name) noexcept {
  std::array<char, 16> buf{};  // the kernel's TASK_COMM_LEN, terminator included
  const std::size_t n = std::min(name.size(), buf.size() - 1);
  std::copy_n(name.data(), n, buf.data());
  (void)pthread_setname_np(pthread_self(), buf.data());
}

}  // namespace hc
