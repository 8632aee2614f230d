#pragma once
// Which forwards of the sessions sharing one cache instance may still be writing
// (issue 6, overlap scheduling with several workers).
//
// Under overlap scheduling a session caches a chunk (cache_unfinished) while the forward
// that writes its KV and SSM state is still running, so the tree holds ids whose bytes are
// not final yet. Such nodes carry a writer_mark (session, batch). Another session that
// reaches them — a prefix match, the dedup of its own insert onto them, a copy-on-write
// from their slot — must not read them before that batch ended: its next begin_forward
// waits for it (forward_stream). The writing session itself is ordered by its own fence.
//
// A session's batches are strictly increasing; a batch is "writing" from the moment its
// ops are handed out (or its forward begins) until its forward ended. A closed session
// writes nothing any more.
//
// Thread safety: none; confined to the radix_cache actor.

#include <algorithm>
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

#include "actors/common/batch_progress.hpp"

namespace hc {

/// A forward that writes a node's bytes: batch `batch` of session `session` (never 0).
struct writer_mark {
  std::uint64_t session = 0;
  std::uint64_t batch = 0;
  friend bool operator==(const writer_mark&, const writer_mark&) = default;
};

class write_fences {
 public:
  /// Ops for `batch` of `session` were handed out, or its forward began.
  void claimed(std::uint64_t session, std::uint64_t batch) { sessions_[session].claim(batch); }
  /// The forward of `batch` (and of every earlier batch) of `session` ended.
  void ended(std::uint64_t session, std::uint64_t batch) { sessions_[session].end(batch); }
  /// The session closed: nothing of it writes any more.
  void closed(std::uint64_t session) { sessions_.erase(session); }

  /// True while the marked forward may still write (its session open, the batch not ended).
  bool writing(const writer_mark& w) const {
    auto it = sessions_.find(w.session);
    return it != sessions_.end() && it->second.writing(w.batch);
  }
  /// The mark for bytes the session's handed-out forwards may still write: its latest
  /// claimed batch, if that one has not ended (nullopt: nothing in flight).
  std::optional<writer_mark> in_flight(std::uint64_t session) const {
    auto it = sessions_.find(session);
    if (it == sessions_.end() || !it->second.in_flight()) return std::nullopt;
    return writer_mark{session, *it->second.in_flight()};
  }

  /// Adds `w` to `marks` (keeping one mark per session, the latest batch) and drops the
  /// marks that stopped writing.
  void add_mark(std::vector<writer_mark>& marks, const writer_mark& w) const {
    std::erase_if(marks, [this](const writer_mark& m) { return !writing(m); });
    for (writer_mark& m : marks)
      if (m.session == w.session) {
        m.batch = std::max(m.batch, w.batch);
        return;
      }
    marks.push_back(w);
  }

 private:
  std::unordered_map<std::uint64_t, batch_progress> sessions_;
};

}  // namespace hc
