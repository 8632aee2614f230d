// The L1 stream's ordering rules (stream_rules.hpp) as tables of event sequences: each row
// is one event and the actions it must produce, in order. No CAF, no threads, no clock.
//
// Events:   attach S | detach S | ops S B #N | donate S #N | read_after S W.B
//           begin S B | end S B | load S T | demote S T | backup S T
// Actions:  began S.B / ended S.B (the report to radix_cache), ops S #N (run those ops),
//           run T (run tier job T), ok|err begin S.B / ok|err end S.B (the answer);
//           "rejected" when ops or a donation were refused.
// Ops are labelled by the one slot they clear (#N), tier jobs by their name.
#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "actors/forward_stream/fence_queue.hpp"
#include "actors/forward_stream/stream_rules.hpp"

namespace hc::test {
namespace {

struct row {
  std::string event;
  std::string actions;  ///< "; "-joined, "" for none
};

class harness {
 public:
  explicit harness(race_demo demo = {}) : rules_(demo) {}

  std::string apply(const std::string& event) {
    std::istringstream in(event);
    std::string verb;
    session_id s = 0;
    in >> verb >> s;
    stream_actions out;
    if (verb == "attach") {
      rules_.attach(s);
    } else if (verb == "detach") {
      rules_.detach(s, out);
    } else if (verb == "ops") {
      std::uint64_t batch = 0;
      in >> batch;
      if (!rules_.enqueue(s, batch, labelled(in))) return "rejected";
    } else if (verb == "donate") {
      const auto before = rules_.counters().rejected_ops;
      rules_.donate(s, labelled(in), out);
      if (rules_.counters().rejected_ops != before) return "rejected";
    } else if (verb == "read_after") {
      std::vector<writer_mark> marks;
      std::string mark;
      while (in >> mark) {
        const auto dot = mark.find('.');
        marks.push_back({std::stoull(mark.substr(0, dot)), std::stoull(mark.substr(dot + 1))});
      }
      rules_.read_after(s, marks);
    } else if (verb == "begin" || verb == "end") {
      std::uint64_t batch = 0;
      in >> batch;
      const stream_ticket t = name(verb + " " + std::to_string(s) + "." + std::to_string(batch));
      if (verb == "begin") {
        rules_.begin(s, batch, t, out);
      } else {
        rules_.end(s, batch, t, out);
      }
    } else if (verb == "load" || verb == "demote" || verb == "backup") {
      std::string job;
      in >> job;
      const tier_kind k = verb == "load"     ? tier_kind::load
                          : verb == "demote" ? tier_kind::demotion
                                             : tier_kind::backup;
      rules_.tier(k, s, name(job), out);
    } else {
      ADD_FAILURE() << "unknown event " << event;
    }
    return render(out);
  }

  const stream_rules& rules() const { return rules_; }

 private:
  static forward_ops labelled(std::istringstream& in) {
    std::string label;
    in >> label;
    forward_ops ops;
    ops.clears.push_back(static_cast<slot_id>(std::stoi(label.substr(1))));
    return ops;
  }
  stream_ticket name(const std::string& n) {
    names_[next_] = n;
    return next_++;
  }
  std::string render(const stream_actions& out) {
    std::string text;
    for (const stream_action_v& a : out) {
      if (!text.empty()) text += "; ";
      if (auto* o = std::get_if<stream_action::run_ops>(&a)) {
        text += "ops " + std::to_string(o->session);
        for (slot_id c : o->ops.clears)
          text += " #" + std::to_string(c);
      } else if (auto* t = std::get_if<stream_action::run_tier>(&a)) {
        text += "run " + names_.at(t->ticket);
      } else if (auto* r = std::get_if<stream_action::report>(&a)) {
        text += std::string(r->ended ? "ended " : "began ") + std::to_string(r->session) + "." +
                std::to_string(r->batch);
      } else if (auto* ans = std::get_if<stream_action::answer>(&a)) {
        text += std::string(ans->result ? "ok " : "err ") + names_.at(ans->ticket);
      }
    }
    return text;
  }

  stream_rules rules_;
  std::map<stream_ticket, std::string> names_;
  stream_ticket next_ = 1;
};

void run_table(const std::vector<row>& rows, race_demo demo = {}) {
  harness h(demo);
  for (std::size_t i = 0; i < rows.size(); ++i)
    EXPECT_EQ(h.apply(rows[i].event), rows[i].actions) << "row " << i + 1 << ": " << rows[i].event;
}

TEST(StreamRules, OpsRunAtTheBeginOfTheirBatchInQueueOrder) {
  run_table({
      {"attach 1", ""},
      {"ops 1 2 #5", ""},
      {"ops 1 1 #3", ""},
      {"ops 1 1 #4", ""},
      {"begin 1 1", "began 1.1; ops 1 #3; ops 1 #4; ok begin 1.1"},
      {"end 1 1", "ended 1.1; ok end 1.1"},
      {"begin 1 3", "began 1.3; ops 1 #5; ok begin 1.3"},
      {"ops 1 2 #6", "rejected"},  // batch 2 was covered by the begin of 3
  });
}

TEST(StreamRules, ABeginWaitsForItsSessionsForwardInFlight) {
  run_table({
      {"attach 1", ""},
      {"begin 1 1", "began 1.1; ok begin 1.1"},
      {"ops 1 2 #4", ""},
      {"begin 1 2", "began 1.2"},      // reported at once, answered at the end of 1.1
      {"begin 1 3", "err begin 1.3"},  // one begin of a session waits at most
      {"end 1 1", "ended 1.1; ok end 1.1; ops 1 #4; ok begin 1.2"},
  });
}

TEST(StreamRules, OutOfOrderFencesAndClosedSessionsAreRefused) {
  run_table({
      {"attach 1", ""},
      {"begin 1 2", "began 1.2; ok begin 1.2"},
      {"end 1 1", "err end 1.1"},
      {"end 1 2", "ended 1.2; ok end 1.2"},
      {"end 1 2", "err end 1.2"},
      {"begin 1 2", "err begin 1.2"},
      {"begin 9 1", "err begin 9.1"},
      {"end 9 1", "err end 9.1"},
      {"ops 9 1 #1", "rejected"},
      {"donate 9 #1", "rejected"},
  });
}

TEST(StreamRules, ABeginReadingAnotherSessionsForwardWaitsForItsEnd) {
  run_table({
      {"attach 1", ""},
      {"attach 2", ""},
      {"begin 1 1", "began 1.1; ok begin 1.1"},
      {"read_after 2 1.1", ""},
      {"ops 2 1 #7", ""},
      {"begin 2 1", "began 2.1"},  // blocked: 1.1 wrote what 2 reads
      {"end 1 1", "ended 1.1; ok end 1.1; ops 2 #7; ok begin 2.1"},
      {"read_after 1 2.1", ""},
      {"begin 1 2", "began 1.2"},
      {"detach 2", "ok begin 1.2"},  // a closed writer writes nothing any more
  });
}

TEST(StreamRules, AReadAfterAForwardThatAlreadyEndedDoesNotBlock) {
  run_table({
      {"attach 1", ""},
      {"attach 2", ""},
      {"begin 1 1", "began 1.1; ok begin 1.1"},
      {"end 1 1", "ended 1.1; ok end 1.1"},
      {"read_after 2 1.1", ""},
      {"begin 2 1", "began 2.1; ok begin 2.1"},
  });
}

TEST(StreamRules, LoadsRunAtOnceWhenIdleElseBeforeTheNextBeginsOps) {
  run_table({
      {"attach 1", ""},
      {"attach 2", ""},
      {"load 1 L1", "run L1"},
      {"begin 1 1", "began 1.1; ok begin 1.1"},
      {"load 2 L2", ""},  // 1.1 may still write a destination id
      {"ops 2 1 #6", ""},
      {"begin 2 1", "began 2.1; run L2; ops 2 #6; ok begin 2.1"},
      {"load 1 L3", ""},
      {"end 2 1", "ended 2.1; ok end 2.1"},
      {"end 1 1", "ended 1.1; ok end 1.1"},  // the load waits for a begin
      {"begin 1 2", "began 1.2; run L3; ok begin 1.2"},
  });
}

TEST(StreamRules, RaceDemoRunsLoadsAfterTheOps) {
  race_demo demo;
  demo.loads_after_ops = true;
  run_table(
      {
          {"attach 1", ""},
          {"load 1 L1", ""},  // never at once in the demo
          {"ops 1 1 #6", ""},
          {"begin 1 1", "began 1.1; ops 1 #6; run L1; ok begin 1.1"},
      },
      demo);
}

TEST(StreamRules, DemotionsRunAtOnce) {
  run_table({
      {"attach 1", ""},
      {"begin 1 1", "began 1.1; ok begin 1.1"},
      {"demote 1 D1", "run D1"},
  });
}

TEST(StreamRules, BackupsWaitForTheirSessionAndForOtherForwardsInFlight) {
  run_table({
      {"attach 1", ""},
      {"attach 2", ""},
      {"backup 1 K0", "run K0"},  // nothing in flight
      {"begin 1 1", "began 1.1; ok begin 1.1"},
      {"begin 2 1", "began 2.1; ok begin 2.1"},
      {"backup 1 K1", ""},
      {"end 1 1", "ended 1.1; ok end 1.1"},  // 2.1 was in flight when K1 arrived
      {"begin 2 2", "began 2.2"},
      {"end 2 1", "ended 2.1; ok end 2.1; run K1; ok begin 2.2"},
      {"backup 1 K2", ""},  // 2.2 in flight
      {"begin 1 2", "began 1.2; ok begin 1.2"},
      {"end 2 2", "ended 2.2; ok end 2.2"},  // session 1 is in flight now
      {"end 1 2", "ended 1.2; ok end 1.2; run K2"},
  });
}

TEST(StreamRules, ABackupWaitingForItsOwnForwardRunsAtTheNextBegin) {
  run_table({
      {"attach 1", ""},
      {"begin 1 1", "began 1.1; ok begin 1.1"},
      {"backup 1 K1", ""},
      {"begin 1 2", "began 1.2"},
      {"end 1 1", "ended 1.1; ok end 1.1; run K1; ok begin 1.2"},
  });
}

TEST(StreamRules, DonationsRunOnceTheSessionsForwardEnded) {
  run_table({
      {"attach 1", ""},
      {"donate 1 #8", "ops 1 #8"},
      {"begin 1 1", "began 1.1; ok begin 1.1"},
      {"donate 1 #9", ""},
      {"ops 1 2 #2", ""},
      {"begin 1 2", "began 1.2"},
      {"end 1 1", "ended 1.1; ok end 1.1; ops 1 #9; ops 1 #2; ok begin 1.2"},
  });
}

TEST(StreamRules, ClosingASessionRefusesItsBeginRunsItsDonationsAndOrphansItsBackups) {
  run_table({
      {"attach 1", ""},
      {"attach 2", ""},
      {"begin 2 1", "began 2.1; ok begin 2.1"},
      {"begin 1 1", "began 1.1; ok begin 1.1"},
      {"begin 1 2", "began 1.2"},
      {"donate 1 #9", ""},
      {"backup 1 K1", ""},  // waits for 1.1 and for 2.1
      {"load 2 L1", ""},
      {"detach 1", "err begin 1.2; ops 1 #9; run L1"},  // K1 still waits for 2.1
      {"ops 1 3 #3", "rejected"},
      {"begin 1 3", "err begin 1.3"},
      {"backup 1 K2", ""},  // of a closed session: an orphan waiting for 2.1
      {"end 2 1", "ended 2.1; ok end 2.1; run K1; run K2"},
      {"backup 1 K3", "run K3"},  // closed, nothing in flight
  });
}

TEST(StreamRules, CountsTierJobsAndRefusedOps) {
  harness h;
  for (const char* e : {"attach 1", "load 1 L", "demote 1 D", "backup 1 K", "ops 2 1 #1"})
    (void)h.apply(e);
  const stream_counters& c = h.rules().counters();
  EXPECT_EQ(c.loads, 1u);
  EXPECT_EQ(c.demotions, 1u);
  EXPECT_EQ(c.backups, 1u);
  EXPECT_EQ(c.rejected_ops, 1u);
}

// ---- fence_queue and slot_op_runner ---------------------------------------------------

TEST(FenceQueue, HandsBackTheOpsOfBatchesUpToTheBegunOne) {
  fence_queue q;
  forward_ops later;
  later.cows.push_back({1, 3});
  ASSERT_TRUE(q.enqueue(2, later).ok());
  forward_ops now;
  now.clears.push_back(1);
  ASSERT_TRUE(q.enqueue(1, now).ok());
  auto due = q.begin(1);
  ASSERT_TRUE(due.ok());
  ASSERT_EQ(due->size(), 1u);
  EXPECT_EQ((*due)[0].clears, std::vector<slot_id>{1});
  EXPECT_EQ(q.queued(), 1u) << "batch 2's COW waits";
  EXPECT_FALSE(q.begin(2).ok()) << "batch 1 is in flight";
  EXPECT_FALSE(q.end(5).ok());
  ASSERT_TRUE(q.end(1).ok());
  EXPECT_FALSE(q.in_flight());
  EXPECT_EQ(q.begin(2)->size(), 1u);
  EXPECT_FALSE(q.enqueue(2, later).ok()) << "ops for a batch that already began";
  EXPECT_FALSE(q.check_begin(2).ok()) << "batches increase";
}

TEST(SlotOpRunner, SnapshotsThenClearsThenCows) {
  std::vector<std::byte> bytes(4 * 8);
  byte_l1_pool pool({}, 0, bytes, 8);
  slot_op_runner r(pool);
  bytes[8 * 1] = std::byte{5};
  forward_ops ops;
  ops.snapshots.push_back({1, 2});
  ops.clears.push_back(1);
  ops.cows.push_back({2, 3});
  r.run(ops);
  EXPECT_EQ(bytes[8 * 2], std::byte{5}) << "snapshot before clear";
  EXPECT_EQ(bytes[8 * 1], std::byte{0});
  EXPECT_EQ(bytes[8 * 3], std::byte{5}) << "COW after the snapshot";
  EXPECT_EQ(r.stats().snapshots, 1u);
  EXPECT_EQ(r.stats().clears, 1u);
  EXPECT_EQ(r.stats().cows, 1u);
}

TEST(SlotOpRunner, OutOfRangeSlotsAreCountedNotTouched) {
  std::vector<std::byte> bytes(2 * 8);
  byte_l1_pool pool({}, 0, bytes, 8);
  slot_op_runner r(pool);
  forward_ops bad;
  bad.clears.push_back(7);
  bad.cows.push_back({0, 1});
  r.run(bad);
  EXPECT_EQ(r.stats().bad_ops, 2u);
}

}  // namespace
}  // namespace hc::test
