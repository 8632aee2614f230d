#pragma once
// Internal to schema/: a stream's reads through a buffer. Cap'n Proto 0.9.2 reads each
// message in two or three reads of exactly what it needs (the first word, the rest of the
// segment table, the segments), so a call and the Finish before it cost five system calls
// to read on the node, each 1.2–1.6 µs on this project's VMs. Through this buffer one read
// takes whatever the socket holds (up to the buffer's size) and the message reader is
// served from it; a read larger than the buffer goes straight to the caller's memory.
//
// Thread safety: none; one kj event loop, as the stream it wraps.

#include <kj/array.h>
#include <kj/async-io.h>

#include <cstddef>

namespace hc::wire_convert {

// kj::AsyncInputStream has no virtual destructor; this final class is owned and destroyed
// as itself, never through the base.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnon-virtual-dtor"
class buffered_input final : public kj::AsyncInputStream {
 public:
  static constexpr std::size_t default_capacity = 16 * 1024;

  /// Reads `inner`, which must outlive this stream and every read promise it returned.
  explicit buffered_input(kj::AsyncInputStream& inner, std::size_t capacity = default_capacity);

  /// As kj::AsyncInputStream::tryRead: at least `min_bytes` unless the stream ends first,
  /// at most `max_bytes`; bytes already buffered are served without a system call.
  kj::Promise<std::size_t> tryRead(void* buffer, std::size_t min_bytes,
                                   std::size_t max_bytes) override;

  /// Bytes read from the inner stream and not yet handed to a reader.
  std::size_t buffered() const noexcept { return end_ - begin_; }

 private:
  /// Copies up to `n` buffered bytes into `dst`; returns how many.
  std::size_t take(kj::byte* dst, std::size_t n) noexcept;

  kj::AsyncInputStream& inner_;
  kj::Array<kj::byte> buf_;
  std::size_t begin_ = 0;
  std::size_t end_ = 0;
};
#pragma GCC diagnostic pop

}  // namespace hc::wire_convert
