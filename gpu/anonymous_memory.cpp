#include "gpu/anonymous_memory.hpp"

#include <sys/mman.h>

#include <new>

namespace hc {

std::shared_ptr<std::byte> map_anonymous(std::size_t n) {
  if (n == 0) throw std::bad_alloc();
  void* p =
      ::mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  return {static_cast<std::byte*>(p), [n](std::byte* q) { ::munmap(q, n); }};
}

}  // namespace hc
