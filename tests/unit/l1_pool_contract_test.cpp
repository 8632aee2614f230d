// The device seam's contract (actors/common/l1_pool.hpp), one suite run on every
// implementation: heap bytes (byte_l1_pool), the shared-memory pools of CPU mode and the
// CUDA pools. The CUDA instantiation skips, saying why, where no device is usable (a build
// without CUDA, no driver, no GPU); the rest runs everywhere.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <future>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "actors/forward_stream/tier_copier.hpp"
#include "gpu/cuda_l1_pool.hpp"
#include "gpu/device_probe.hpp"
#include "gpu/shm_l1_pool.hpp"

namespace hc::test {
namespace {

struct shape {
  std::size_t tokens = 0, token_bytes = 0, slots = 0, slot_bytes = 0;
};

/// byte_l1_pool over vectors it owns.
struct owned_bytes {
  std::vector<std::byte> kv, ssm;
};
class heap_l1_pool final : private owned_bytes, public byte_l1_pool {
 public:
  explicit heap_l1_pool(const shape& s)
      : owned_bytes{std::vector<std::byte>(s.tokens * s.token_bytes),
                    std::vector<std::byte>(s.slots * s.slot_bytes)},
        byte_l1_pool(owned_bytes::kv, s.token_bytes, owned_bytes::ssm, s.slot_bytes) {}
};

struct implementation {
  std::string name;
  /// Why this implementation cannot run here ("" = it can).
  std::function<std::string()> unavailable;
  std::function<result<std::unique_ptr<l1_pool>>(const shape&)> make;
};

void PrintTo(const implementation& i, std::ostream* os) {
  *os << i.name;
}

std::string no_cuda_device() {
  const gpu::device_probe_result r = gpu::probe_devices();
  if (!r.built_with_cuda) return "built without CUDA (HC_WITH_CUDA=OFF)";
  if (r.device_count == 0) return "no usable CUDA device: " + r.reason;
  return "";
}

std::vector<implementation> implementations() {
  static int next = 0;
  return {
      {"heap", [] { return std::string(); },
       [](const shape& s) -> result<std::unique_ptr<l1_pool>> {
         return std::unique_ptr<l1_pool>(std::make_unique<heap_l1_pool>(s));
       }},
      {"shm", [] { return std::string(); },
       [](const shape& s) -> result<std::unique_ptr<l1_pool>> {
         const std::string base =
             "/hc-contract-" + std::to_string(::getpid()) + "-" + std::to_string(++next);
         auto p = shm_l1_pool::create(base + "-kv", s.tokens, s.token_bytes, base + "-ssm", s.slots,
                                      s.slot_bytes);
         if (!p) return p.err();
         shm_l1_pool::unlink((*p)->names());  // the mappings stay; nothing left behind
         return std::unique_ptr<l1_pool>(std::move(*p));
       }},
      {"cuda", no_cuda_device,
       [](const shape& s) -> result<std::unique_ptr<l1_pool>> {
         return make_cuda_l1_pool({0, s.tokens, s.token_bytes, s.slots, s.slot_bytes});
       }},
      // Tier copies by DMA only (the default pool copies small runs with a kernel).
      {"cuda_copy_engine", no_cuda_device,
       [](const shape& s) -> result<std::unique_ptr<l1_pool>> {
         cuda_pool_shape c{0, s.tokens, s.token_bytes, s.slots, s.slot_bytes};
         c.tier_copies = tier_copy_path::copy_engine;
         return make_cuda_l1_pool(c);
       }},
  };
}

std::vector<std::byte> filled(std::size_t n, int seed) {
  std::vector<std::byte> v(n);
  for (std::size_t i = 0; i < n; ++i)
    v[i] = static_cast<std::byte>((seed * 31 + static_cast<int>(i) * 7 + 1) & 0xff);
  return v;
}

class L1PoolContract : public ::testing::TestWithParam<implementation> {
 protected:
  void SetUp() override {
    if (const std::string why = GetParam().unavailable(); !why.empty()) GTEST_SKIP() << why;
  }
  std::unique_ptr<l1_pool> make(const shape& s) {
    auto p = GetParam().make(s);
    if (!p) ADD_FAILURE() << GetParam().name << ": " << p.err().message;
    return p ? std::move(*p) : nullptr;
  }
  static std::vector<std::byte> slot(const l1_pool& p, slot_id s) {
    std::vector<std::byte> v(p.slot_bytes());
    EXPECT_TRUE(p.read_slot(s, v).ok()) << "slot " << s;
    return v;
  }
};

TEST_P(L1PoolContract, StartsZeroedWithItsShape) {
  auto p = make({16, 4, 5, 48});
  ASSERT_TRUE(p);
  EXPECT_EQ(p->kv_tokens(), 16u);
  EXPECT_EQ(p->token_bytes(), 4u);
  EXPECT_EQ(p->slots(), 5u);
  EXPECT_EQ(p->slot_bytes(), 48u);
  std::vector<std::byte> kv(16 * 4, std::byte{0xee});
  ASSERT_TRUE(p->read_kv(0, 16, kv).ok());
  EXPECT_EQ(kv, std::vector<std::byte>(16 * 4));
  for (slot_id s = 1; s < 5; ++s)
    EXPECT_EQ(slot(*p, s), std::vector<std::byte>(48)) << "slot " << s;
  const l1_pool_names n = p->names();
  EXPECT_EQ(n.kv_bytes, 64u);
  EXPECT_EQ(n.ssm_bytes, 240u);
}

TEST_P(L1PoolContract, KvBytesRoundTripAndEveryRangeIsChecked) {
  auto p = make({8, 4, 4, 16});
  ASSERT_TRUE(p);
  const auto three = filled(12, 1);
  ASSERT_TRUE(p->write_kv(5, 3, three).ok());
  std::vector<std::byte> back(12);
  ASSERT_TRUE(p->read_kv(5, 3, back).ok());
  EXPECT_EQ(back, three);
  EXPECT_EQ(p->write_kv(6, 3, three).err().code, errc::invalid_argument) << "past the end";
  EXPECT_FALSE(p->read_kv(-1, 1, std::span<std::byte>(back).first(4)).ok());
  EXPECT_FALSE(p->read_kv(0, 2, back).ok()) << "buffer size must be n * token_bytes";
  EXPECT_TRUE(p->read_kv(3, 0, {}).ok()) << "nothing to copy";
  ASSERT_TRUE(p->read_kv(5, 3, back).ok());
  EXPECT_EQ(back, three) << "refused calls changed nothing";
}

TEST_P(L1PoolContract, SlotsRoundTripClearAndCopyWithEveryIdChecked) {
  auto p = make({8, 4, 4, 16});
  ASSERT_TRUE(p);
  const auto state = filled(16, 2);
  ASSERT_TRUE(p->write_slot(3, state).ok());
  ASSERT_TRUE(p->copy_slot(3, 1).ok());
  EXPECT_EQ(slot(*p, 1), state);
  ASSERT_TRUE(p->clear_slot(3).ok());
  EXPECT_EQ(slot(*p, 3), std::vector<std::byte>(16));
  EXPECT_EQ(slot(*p, 1), state) << "a copy is not an alias";
  EXPECT_EQ(p->clear_slot(0).err().code, errc::invalid_argument) << "slot 0 is reserved";
  EXPECT_FALSE(p->copy_slot(1, 1).ok()) << "a copy onto itself";
  EXPECT_FALSE(p->copy_slot(1, 4).ok()) << "out of range";
  EXPECT_FALSE(p->copy_slot(0, 2).ok()) << "from the reserved slot";
  EXPECT_FALSE(p->write_slot(2, filled(15, 3)).ok()) << "wrong payload size";
  std::vector<std::byte> small(8);
  EXPECT_FALSE(p->read_slot(1, small).ok()) << "wrong buffer size";
  EXPECT_EQ(slot(*p, 1), state) << "refused calls changed nothing";
  EXPECT_EQ(slot(*p, 2), std::vector<std::byte>(16));
}

TEST_P(L1PoolContract, APartWithoutBytesRefusesItsCalls) {
  auto kv_only = make({8, 4, 3, 0});
  ASSERT_TRUE(kv_only);
  EXPECT_EQ(kv_only->slots(), 0u);
  EXPECT_FALSE(kv_only->clear_slot(1).ok()) << "no slot bytes";
  const slot_id one[] = {1};
  EXPECT_EQ(kv_only->clear_slots(one), 1u);
  auto slots_only = make({8, 0, 3, 16});
  ASSERT_TRUE(slots_only);
  EXPECT_EQ(slots_only->kv_tokens(), 0u);
  EXPECT_FALSE(slots_only->write_kv(0, 0, {}).ok()) << "no KV bytes";
  EXPECT_TRUE(slots_only->clear_slot(2).ok());
}

/// Random batches (chains that read what an earlier copy of the batch wrote, copies
/// back and forth, repeated clears, refused ids) against one-after-the-other semantics
/// on a model, for the three access widths a device kernel picks (16, 4, 1 bytes).
TEST_P(L1PoolContract, BatchesActAsTheirCallsOneAfterTheOther) {
  for (std::size_t bytes : {48u, 36u, 13u}) {
    SCOPED_TRACE("slot_bytes " + std::to_string(bytes));
    constexpr slot_id slots = 12;
    auto p = make({4, 4, slots, bytes});
    ASSERT_TRUE(p);
    std::map<slot_id, std::vector<std::byte>> model;
    for (slot_id s = 1; s < slots; ++s) {
      model[s] = filled(bytes, s);
      ASSERT_TRUE(p->write_slot(s, model[s]).ok());
    }
    std::mt19937 rng(7 + static_cast<unsigned>(bytes));
    auto any = [&] { return static_cast<slot_id>(rng() % (slots + 1)); };  // 0 and 12: refused
    for (int round = 0; round < 20; ++round) {
      std::vector<slot_copy> copies(1 + rng() % (round % 5 == 4 ? 600 : 12));
      std::size_t refused = 0;
      for (slot_copy& c : copies) {
        c = {any(), any()};
        if (c.src <= 0 || c.dst <= 0 || c.src >= slots || c.dst >= slots || c.src == c.dst) {
          ++refused;
        } else {
          model[c.dst] = model[c.src];
        }
      }
      EXPECT_EQ(p->copy_slots(copies), refused);
      std::vector<slot_id> clears(rng() % 4);
      std::size_t refused_clears = 0;
      for (slot_id& s : clears) {
        s = any();
        if (s <= 0 || s >= slots) {
          ++refused_clears;
        } else {
          model[s].assign(bytes, std::byte{0});
        }
      }
      EXPECT_EQ(p->clear_slots(clears), refused_clears);
      if (round % 3 == 0) {  // a single call between batches is ordered after them
        const slot_id s = 1 + static_cast<slot_id>(rng() % (slots - 1));
        model[s] = filled(bytes, 100 + round);
        ASSERT_TRUE(p->write_slot(s, model[s]).ok());
      }
    }
    ASSERT_TRUE(p->synchronize().ok());
    for (slot_id s = 1; s < slots; ++s)
      EXPECT_EQ(slot(*p, s), model[s]) << "slot " << s;
  }
}

TEST_P(L1PoolContract, TierCopiesGoThroughTheInterfaceBothWays) {
  auto dev = make({16, 4, 4, 8});
  ASSERT_TRUE(dev);
  host_pool_sizes sizes;
  sizes.kv_tokens = 16;
  sizes.slots = 2;
  sizes.kv_bytes_per_token = 4;
  sizes.state_bytes = 8;
  host_pools host(sizes, 1);
  auto pin_kv = dev->pin_host(host.kv_region());  // as the node does: DMA on a device
  auto pin_states = dev->pin_host(host.state_region());
  ASSERT_TRUE(pin_kv.ok() && pin_states.ok());
  const auto tokens = filled(4 * 4, 4);
  ASSERT_TRUE(dev->write_kv(2, 4, tokens).ok());
  const auto state = filled(8, 5);
  ASSERT_TRUE(dev->write_slot(3, state).ok());
  tier_copy down;  // device 2..5 -> host 9, 10, 7, 8 (two runs), slot 3 -> host slot 1
  down.device_kv = {2, 3, 4, 5};
  down.host_kv = {9, 10, 7, 8};
  down.device_slot = 3;
  down.host_slot = 1;
  EXPECT_EQ(run_tier_copy(*dev, host, down), 4u * 4 + 8);
  tier_copy up;  // back to other device ids: 10..13, slot 1
  up.dir = tier_copy::direction::host_to_device;
  up.device_kv = {10, 11, 12, 13};
  up.host_kv = {9, 10, 7, 8};
  up.device_slot = 1;
  up.host_slot = 1;
  EXPECT_EQ(run_tier_copy(*dev, host, up), 4u * 4 + 8);
  std::vector<std::byte> back(16);
  ASSERT_TRUE(dev->read_kv(10, 4, back).ok());
  EXPECT_EQ(back, tokens);
  EXPECT_EQ(slot(*dev, 1), state);
  // Queued only (the node's way): the host bytes are right once the pool says done.
  tier_copy again = down;
  again.host_kv = {1, 2, 3, 4};
  again.host_slot = 2;
  EXPECT_EQ(run_tier_copy(*dev, host, again, /*queue_only=*/true), 4u * 4 + 8);
  std::promise<void> done;
  dev->when_done([&done] { done.set_value(); });
  ASSERT_EQ(done.get_future().wait_for(std::chrono::seconds(60)), std::future_status::ready);
  const std::span<std::byte> queued = host.kv(1, 4);
  EXPECT_EQ(std::vector<std::byte>(queued.begin(), queued.end()), tokens);
  const std::span<std::byte> queued_state = host.state(2);
  EXPECT_EQ(std::vector<std::byte>(queued_state.begin(), queued_state.end()), state);
  tier_copy bad = up;
  bad.device_kv[0] = 16;  // past the device pool
  EXPECT_EQ(run_tier_copy(*dev, host, bad), 0u) << "nothing moves when an id is out of range";
}

/// Scattered KV runs in one call (a tier copy's pages): each lands where a single
/// queue_read_kv / queue_write_kv would put it, and one run out of range refuses the call
/// before anything moves.
TEST_P(L1PoolContract, ManyKvRunsMoveInOneCallAndABadRunMovesNothing) {
  constexpr std::size_t tokens = 256, tb = 64;
  auto p = make({tokens, tb, 2, 16});
  ASSERT_TRUE(p);
  std::vector<std::byte> host = filled(tokens * tb, 8);  // run k's bytes at a shuffled place
  auto pinned = p->pin_host(host);
  ASSERT_TRUE(pinned.ok()) << pinned.err().message;
  std::mt19937 rng(5);
  std::vector<std::size_t> starts, places;
  for (std::size_t i = 0; i < tokens / 4; ++i)
    starts.push_back(i * 4), places.push_back(i * 4);
  std::shuffle(starts.begin(), starts.end(), rng);
  std::shuffle(places.begin(), places.end(), rng);
  std::vector<l1_pool::kv_run> runs;
  for (std::size_t k = 0; k < starts.size(); ++k) {
    const std::size_t n = 1 + rng() % 4;
    runs.push_back({static_cast<kv_index>(starts[k]), n,
                    std::span<std::byte>(host).subspan(places[k] * tb, n * tb)});
  }
  ASSERT_TRUE(p->queue_write_kv_runs(runs).ok());
  ASSERT_TRUE(p->synchronize().ok());
  for (const l1_pool::kv_run& r : runs) {
    std::vector<std::byte> back(r.host.size());
    ASSERT_TRUE(p->read_kv(r.first, r.n, back).ok());
    ASSERT_EQ(back, std::vector<std::byte>(r.host.begin(), r.host.end())) << "run at " << r.first;
  }
  const std::vector<std::byte> written = host;
  std::fill(host.begin(), host.end(), std::byte{0});
  ASSERT_TRUE(p->queue_read_kv_runs(runs).ok());
  ASSERT_TRUE(p->synchronize().ok());
  for (const l1_pool::kv_run& r : runs) {
    const std::size_t at = static_cast<std::size_t>(r.host.data() - host.data());
    ASSERT_TRUE(std::equal(r.host.begin(), r.host.end(), written.begin() + at))
        << "run at " << r.first;
  }
  // A bad last run: the call is refused and the earlier runs did not move either.
  std::vector<std::byte> other = filled(tokens * tb, 9);
  auto pinned_other = p->pin_host(other);
  ASSERT_TRUE(pinned_other.ok());
  std::vector<l1_pool::kv_run> bad{{0, 4, std::span<std::byte>(other).subspan(0, 4 * tb)},
                                   {tokens - 1, 2, std::span<std::byte>(other).subspan(0, 2 * tb)}};
  auto refused = p->queue_write_kv_runs(bad);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.err().code, errc::invalid_argument);
  bad[1] = {1, 1, std::span<std::byte>(other).subspan(0, tb / 2)};  // wrong host size
  EXPECT_FALSE(p->queue_read_kv_runs(bad).ok());
  ASSERT_TRUE(p->synchronize().ok());
  std::vector<std::byte> first(4 * tb);
  ASSERT_TRUE(p->read_kv(0, 4, first).ok());
  const auto r0 = std::find_if(runs.begin(), runs.end(), [](auto& r) { return r.first == 0; });
  ASSERT_NE(r0, runs.end());
  EXPECT_TRUE(std::equal(r0->host.begin(), r0->host.end(), first.begin()))
      << "the refused call moved a run";
  EXPECT_TRUE(p->queue_read_kv_runs({}).ok()) << "no runs: nothing to do";
}

/// The fence events a device pool gives each session (empty on host pools), and
/// completion callbacks: each is called once, after the work queued before it.
TEST_P(L1PoolContract, SessionEventsAndCompletionCallbacks) {
  auto p = make({8, 4, 4, 4096});
  ASSERT_TRUE(p);
  const bool device = p->names().device == device_kind::cuda;
  auto e = p->open_events(7);
  ASSERT_TRUE(e.ok()) << e.err().message;
  EXPECT_EQ(e->ready_ipc.size(), device ? 64u : 0u);
  EXPECT_EQ(e->done_ipc.size(), device ? 64u : 0u);
  auto again = p->open_events(7);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->ready_ipc, e->ready_ipc) << "one pair per session";
  const auto state = filled(4096, 6);
  ASSERT_TRUE(p->write_slot(1, state).ok());
  EXPECT_TRUE(p->wait_done(7).ok()) << "nothing recorded yet: nothing to wait for";
  const slot_copy c[] = {{1, 2}};
  EXPECT_EQ(p->copy_slots(c), 0u);
  EXPECT_TRUE(p->record_ready(7).ok());
  EXPECT_TRUE(p->record_ready(99).ok()) << "a session without events: nothing to record";
  std::promise<void> called;
  p->when_done([&called] { called.set_value(); });  // a second call would throw
  // A guard against a hang, not a timing check.
  ASSERT_EQ(called.get_future().wait_for(std::chrono::seconds(60)), std::future_status::ready);
  EXPECT_EQ(slot(*p, 2), state);
  p->close_events(7);
  p->close_events(7);  // once more: nothing left, no error
}

INSTANTIATE_TEST_SUITE_P(Pools, L1PoolContract, ::testing::ValuesIn(implementations()),
                         [](const ::testing::TestParamInfo<implementation>& i) {
                           return i.param.name;
                         });

TEST(IndependentRuns, SplitWhereACopyDependsOnAnEarlierOneOfItsRun) {
  using runs = std::vector<std::size_t>;
  EXPECT_EQ(independent_runs({}), runs{});
  const std::vector<slot_copy> apart = {{1, 2}, {3, 4}, {1, 5}};  // shared reads are fine
  EXPECT_EQ(independent_runs(apart), runs{3});
  const std::vector<slot_copy> chain = {{1, 2}, {2, 3}};  // reads what the first wrote
  EXPECT_EQ(independent_runs(chain), runs({1, 2}));
  const std::vector<slot_copy> overwrite = {{1, 2}, {3, 2}};  // last write wins
  EXPECT_EQ(independent_runs(overwrite), runs({1, 2}));
  const std::vector<slot_copy> swap = {{1, 2}, {2, 1}};  // writes what the first read
  EXPECT_EQ(independent_runs(swap), runs({1, 2}));
  const std::vector<slot_copy> war = {{1, 2}, {3, 1}, {4, 5}};
  EXPECT_EQ(independent_runs(war), runs({1, 3}));
}

/// What a device does with a run: every copy of it at once (all reads, then all writes).
/// Run by run, that must give what the copies one after the other give.
TEST(IndependentRuns, RunsDoneAllAtOnceEqualTheCopiesOneAfterTheOther) {
  std::mt19937 rng(2026);
  for (int trial = 0; trial < 2000; ++trial) {
    const int slots = 2 + static_cast<int>(rng() % 8);
    std::vector<slot_copy> copies(rng() % 24);
    for (slot_copy& c : copies) {
      c.src = static_cast<slot_id>(rng() % slots);
      do {
        c.dst = static_cast<slot_id>(rng() % slots);
      } while (c.dst == c.src);
    }
    std::vector<int> sequential(static_cast<std::size_t>(slots)), parallel;
    for (int i = 0; i < slots; ++i)
      sequential[static_cast<std::size_t>(i)] = i;
    parallel = sequential;
    for (slot_copy c : copies)
      sequential[static_cast<std::size_t>(c.dst)] = sequential[static_cast<std::size_t>(c.src)];
    std::size_t begin = 0;
    for (std::size_t end : independent_runs(copies)) {
      ASSERT_GT(end, begin);
      std::set<slot_id> srcs, dsts;  // a kernel needs no slot both read and written, and
      for (std::size_t i = begin; i < end; ++i) {  // no slot written twice
        srcs.insert(copies[i].src);
        ASSERT_TRUE(dsts.insert(copies[i].dst).second) << "trial " << trial;
      }
      for (slot_id d : dsts)
        ASSERT_FALSE(srcs.contains(d)) << "trial " << trial;
      std::vector<int> read;
      for (std::size_t i = begin; i < end; ++i)
        read.push_back(parallel[static_cast<std::size_t>(copies[i].src)]);
      for (std::size_t i = begin; i < end; ++i)
        parallel[static_cast<std::size_t>(copies[i].dst)] = read[i - begin];
      begin = end;
    }
    EXPECT_EQ(begin, copies.size());
    ASSERT_EQ(parallel, sequential) << "trial " << trial;
  }
}

TEST(CudaL1Pool, WithoutAUsableDeviceTheFactoryRefusesWithTheReason) {
  if (no_cuda_device().empty()) GTEST_SKIP() << "a CUDA device is usable here";
  auto p = make_cuda_l1_pool({0, 8, 4, 3, 16});
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.err().code, errc::invalid_config) << p.err().message;
  EXPECT_NE(p.err().message.find("cuda"), std::string::npos) << p.err().message;
}

TEST(CudaL1Pool, ExportsIpcHandlesAndRefusesAMissingDevice) {
  if (const std::string why = no_cuda_device(); !why.empty()) GTEST_SKIP() << why;
  auto p = make_cuda_l1_pool({0, 8, 4, 3, 16});
  ASSERT_TRUE(p.ok()) << p.err().message;
  const l1_pool_names n = (*p)->names();
  EXPECT_EQ(n.device, device_kind::cuda);
  EXPECT_EQ(n.kv_ipc.size(), 64u);
  EXPECT_EQ(n.ssm_ipc.size(), 64u);
  EXPECT_TRUE(n.kv.empty() && n.ssm.empty()) << "no shared-memory names in CUDA mode";
  auto none = make_cuda_l1_pool({9999, 8, 4, 3, 16});
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.err().code, errc::invalid_config) << none.err().message;
}

}  // namespace
}  // namespace hc::test
