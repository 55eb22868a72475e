// Collectives over in-process ranks (threads): results against a serial reference for every
// world size 1..5 and for sizes on both sides of the small/ring switch, determinism of the
// reductions, byte accounting, and the failure modes (a silent rank is named, an abort reaches
// every peer, bad arguments are errors).
#include "rectrain/dist/communicator.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <numeric>

#include "rectrain/base/stopwatch.h"
#include "rectrain/dist/inproc.h"

namespace rectrain::dist {
namespace {

void ExpectAllOk(const std::vector<Status>& s) {
  for (size_t r = 0; r < s.size(); ++r) EXPECT_TRUE(s[r].ok()) << "rank " << r << ": " << s[r].ToString();
}

// Rank r's contribution at index i (distinct per rank, not exactly summable in float).
float Value(int r, int64_t i) { return 0.1f * static_cast<float>(r + 1) + 1e-3f * static_cast<float>(i % 97); }

class AllReduceTest : public ::testing::TestWithParam<std::tuple<int, int64_t>> {};

TEST_P(AllReduceTest, SumMaxMinMatchSerialAndAgreeBitwise) {
  const auto [world, n] = GetParam();
  std::vector<std::vector<float>> results(static_cast<size_t>(world));
  ExpectAllOk(RunRanks(world, [&, n = n](Communicator& comm) -> Status {
    std::vector<float> v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) v[i] = Value(comm.rank(), i);
    RECTRAIN_RETURN_IF_ERROR(comm.AllReduce(std::span<float>(v), ReduceOp::kSum));
    results[static_cast<size_t>(comm.rank())] = v;
    std::vector<int64_t> m = {comm.rank(), -comm.rank()};
    RECTRAIN_RETURN_IF_ERROR(comm.AllReduce(std::span<int64_t>(m), ReduceOp::kMax));
    if (m[0] != comm.world() - 1 || m[1] != 0) return InternalError("max wrong");
    std::vector<double> d = {static_cast<double>(comm.rank())};
    RECTRAIN_RETURN_IF_ERROR(comm.AllReduce(std::span<double>(d), ReduceOp::kMin));
    if (d[0] != 0.0) return InternalError("min wrong");
    return OkStatus();
  }));
  for (int64_t i = 0; i < n; ++i) {
    double want = 0;
    for (int r = 0; r < world; ++r) want += Value(r, i);
    ASSERT_NEAR(results[0][i], want, 1e-5 * world) << "index " << i;
    for (int r = 1; r < world; ++r) {
      ASSERT_EQ(std::memcmp(&results[r][i], &results[0][i], sizeof(float)), 0)
          << "rank " << r << " differs from rank 0 at " << i;
    }
  }
}

// 3 floats (small path), 4096 floats (exactly 16 KiB, still small), 4097 and 100003 (ring,
// chunks of unequal size), 2 elements on 5 ranks (empty ring chunks).
INSTANTIATE_TEST_SUITE_P(Worlds, AllReduceTest,
                         ::testing::Combine(::testing::Values(1, 2, 3, 4, 5),
                                            ::testing::Values(int64_t{2}, int64_t{3}, int64_t{4096},
                                                              int64_t{4097}, int64_t{100003})),
                         [](const auto& param_info) {
                           return "world" + std::to_string(std::get<0>(param_info.param)) + "_n" +
                                  std::to_string(std::get<1>(param_info.param));
                         });

TEST(Communicator, AllReduceIsDeterministicAcrossRuns) {
  auto run = [] {
    std::vector<float> out;
    ExpectAllOk(RunRanks(3, [&](Communicator& comm) -> Status {
      std::vector<float> v(50000);
      for (size_t i = 0; i < v.size(); ++i) v[i] = Value(comm.rank(), static_cast<int64_t>(i)) * 1.37f;
      RECTRAIN_RETURN_IF_ERROR(comm.AllReduce(std::span<float>(v), ReduceOp::kSum));
      if (comm.rank() == 0) out = v;
      return OkStatus();
    }));
    return out;
  };
  const std::vector<float> a = run(), b = run();
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0);
}

TEST(Communicator, AllToAllVRoutesEveryElementToItsRank) {
  for (int world : {1, 2, 3, 4}) {
    ExpectAllOk(RunRanks(world, [&](Communicator& comm) -> Status {
      const int me = comm.rank();
      // Rank r sends (r + 1) * (p + 1) elements to rank p, valued r * 1000 + p * 10 + k; the
      // count to rank 2 is zero on purpose when world >= 3.
      std::vector<uint64_t> send;
      std::vector<int64_t> counts(static_cast<size_t>(world));
      for (int p = 0; p < world; ++p) {
        const int64_t c = p == 2 ? 0 : (me + 1) * (p + 1);
        counts[static_cast<size_t>(p)] = c;
        for (int64_t k = 0; k < c; ++k) send.push_back(static_cast<uint64_t>(me * 1000 + p * 10 + k));
      }
      std::vector<uint64_t> recv;
      std::vector<int64_t> recv_counts;
      RECTRAIN_RETURN_IF_ERROR(comm.AllToAllV(std::span<const uint64_t>(send), counts, &recv, &recv_counts));
      size_t at = 0;
      for (int src = 0; src < world; ++src) {
        const int64_t want = me == 2 ? 0 : (src + 1) * (me + 1);
        if (recv_counts[static_cast<size_t>(src)] != want) return InternalError("count from " + std::to_string(src));
        for (int64_t k = 0; k < want; ++k) {
          if (recv[at++] != static_cast<uint64_t>(src * 1000 + me * 10 + k)) return InternalError("value");
        }
      }
      // The known-count variant: send back what arrived, expecting what was sent.
      std::vector<uint64_t> back;
      RECTRAIN_RETURN_IF_ERROR(comm.AllToAllVKnown(std::span<const uint64_t>(recv), recv_counts, counts, &back));
      if (back != send) return InternalError("round trip differs");
      return OkStatus();
    }));
  }
}

TEST(Communicator, BroadcastAllGatherAndBarrier) {
  for (int world : {1, 2, 3, 5}) {
    for (int root = 0; root < world; ++root) {
      ExpectAllOk(RunRanks(world, [&](Communicator& comm) -> Status {
        std::vector<int64_t> v(7, comm.rank() == root ? 42 : -1);
        RECTRAIN_RETURN_IF_ERROR(comm.Broadcast(std::span<int64_t>(v), root));
        for (int64_t x : v) {
          if (x != 42) return InternalError("broadcast value");
        }
        std::string s = comm.rank() == root ? std::string(1000, 'x') : "other";
        RECTRAIN_RETURN_IF_ERROR(comm.BroadcastString(&s, root));
        if (s != std::string(1000, 'x')) return InternalError("broadcast string");
        std::vector<float> mine(static_cast<size_t>(comm.rank()), static_cast<float>(comm.rank()));
        std::vector<float> all;
        std::vector<int64_t> counts;
        RECTRAIN_RETURN_IF_ERROR(comm.AllGatherV(std::span<const float>(mine), &all, &counts));
        size_t at = 0;
        for (int r = 0; r < world; ++r) {
          if (counts[static_cast<size_t>(r)] != r) return InternalError("gather count");
          for (int k = 0; k < r; ++k) {
            if (all[at++] != static_cast<float>(r)) return InternalError("gather value");
          }
        }
        return comm.Barrier();
      }));
    }
  }
}

TEST(Communicator, CountsCallsAndBytes) {
  ExpectAllOk(RunRanks(2, [](Communicator& comm) -> Status {
    std::vector<float> v(10, 1.0f);
    RECTRAIN_RETURN_IF_ERROR(comm.AllReduce(std::span<float>(v), ReduceOp::kSum));
    const CommOpStats& s = comm.stats().of(CommOp::kAllReduce);
    if (s.calls != 1 || s.bytes_sent != 40 || s.bytes_received != 40) {
      return InternalError("stats " + std::to_string(s.calls) + " " + std::to_string(s.bytes_sent));
    }
    // Ring on 2 ranks: half the array each way per phase, 2 phases = the array's bytes in total.
    std::vector<float> big(100000, 1.0f);
    RECTRAIN_RETURN_IF_ERROR(comm.AllReduce(std::span<float>(big), ReduceOp::kSum));
    if (comm.stats().of(CommOp::kAllReduce).bytes_sent != 40 + 400000) return InternalError("ring bytes");
    return OkStatus();
  }));
}

TEST(Communicator, SingleIsLocal) {
  auto comm = Communicator::Single();
  EXPECT_EQ(comm->rank(), 0);
  EXPECT_EQ(comm->world(), 1);
  EXPECT_FALSE(comm->distributed());
  EXPECT_EQ(comm->transport_name(), "single");
  std::vector<float> v = {1.5f, 2.5f};
  ASSERT_TRUE(comm->AllReduce(std::span<float>(v), ReduceOp::kSum).ok());
  EXPECT_EQ(v, (std::vector<float>{1.5f, 2.5f}));
  std::vector<uint64_t> send = {7, 8}, recv;
  std::vector<int64_t> counts = {2}, rc;
  ASSERT_TRUE(comm->AllToAllV(std::span<const uint64_t>(send), counts, &recv, &rc).ok());
  EXPECT_EQ(recv, send);
  std::vector<uint64_t> all;
  ASSERT_TRUE(comm->AllGatherV(std::span<const uint64_t>(send), &all, nullptr).ok());
  EXPECT_EQ(all, send);
  EXPECT_TRUE(comm->Barrier().ok());
  EXPECT_EQ(comm->stats().bytes_sent(), 0);
}

TEST(Communicator, BadArgumentsAreErrors) {
  auto comm = Communicator::Single();
  std::vector<uint64_t> send = {1, 2}, recv;
  std::vector<int64_t> rc;
  std::vector<int64_t> wrong_world = {1, 1};
  EXPECT_EQ(comm->AllToAllV(std::span<const uint64_t>(send), wrong_world, &recv, &rc).code(),
            StatusCode::kInvalidArgument);
  std::vector<int64_t> wrong_sum = {3};
  EXPECT_EQ(comm->AllToAllV(std::span<const uint64_t>(send), wrong_sum, &recv, &rc).code(),
            StatusCode::kInvalidArgument);
  std::vector<float> v(1);
  EXPECT_EQ(comm->Broadcast(std::span<float>(v), 3).code(), StatusCode::kInvalidArgument);
}

// A rank that stops talking (hung, dead) is named by the others within the timeout.
TEST(Communicator, SilentRankIsNamedAfterTheTimeout) {
  RunRanksOptions opt;
  opt.timeout = std::chrono::milliseconds(300);
  opt.setup = [](InProcHub& hub) { hub.Silence(2); };
  Stopwatch sw;
  std::vector<Status> s = RunRanks(3, [](Communicator& comm) -> Status {
    comm.set_context("step 17");
    std::vector<float> v(4, 1.0f);
    return comm.AllReduce(std::span<float>(v), ReduceOp::kSum);
  }, opt);
  EXPECT_LT(sw.Seconds(), 5.0);
  for (int r : {0, 1}) {
    EXPECT_EQ(s[r].code(), StatusCode::kDeadlineExceeded) << s[r].ToString();
    EXPECT_NE(s[r].message().find("no message from rank 2"), std::string::npos) << s[r].ToString();
    EXPECT_NE(s[r].message().find("at step 17"), std::string::npos) << s[r].ToString();
  }
}

// After an error the communicator refuses further calls with the same error (no half protocol).
TEST(Communicator, BrokenCommunicatorStaysBroken) {
  RunRanksOptions opt;
  opt.timeout = std::chrono::milliseconds(100);
  opt.setup = [](InProcHub& hub) { hub.Silence(1); };
  std::vector<Status> s = RunRanks(2, [](Communicator& comm) -> Status {
    if (comm.rank() == 1) return OkStatus();
    Status first = comm.Barrier();
    Status second = comm.Barrier();
    return first == second && !first.ok() ? first : InternalError("not latched");
  }, opt);
  EXPECT_EQ(s[0].code(), StatusCode::kDeadlineExceeded) << s[0].ToString();
}

// A rank that fails and calls Abort() releases every peer at once, well before the timeout.
TEST(Communicator, AbortReachesEveryPeer) {
  RunRanksOptions opt;
  opt.timeout = std::chrono::milliseconds(20'000);
  Stopwatch sw;
  std::vector<Status> s = RunRanks(3, [](Communicator& comm) -> Status {
    if (comm.rank() == 1) {
      comm.Abort(3);
      return Status(StatusCode::kAborted, "failed on purpose");
    }
    return comm.Barrier();
  }, opt);
  EXPECT_LT(sw.Seconds(), 5.0);
  for (int r : {0, 2}) {
    EXPECT_EQ(s[r].code(), StatusCode::kAborted) << s[r].ToString();
    EXPECT_NE(s[r].message().find("rank 1 failed"), std::string::npos) << s[r].ToString();
  }
}

TEST(Communicator, AgreeOkCarriesTheFirstFailure) {
  std::vector<Status> s = RunRanks(4, [](Communicator& comm) -> Status {
    RECTRAIN_RETURN_IF_ERROR(AgreeOk(comm, OkStatus()));
    const Status mine = comm.rank() == 2   ? NotFoundError("data.train: no such file x.tsv")
                        : comm.rank() == 3 ? InternalError("later failure")
                                           : OkStatus();
    return AgreeOk(comm, mine);
  });
  EXPECT_EQ(s[2], NotFoundError("data.train: no such file x.tsv"));
  for (int r : {0, 1, 3}) {
    EXPECT_EQ(s[r].code(), StatusCode::kNotFound) << s[r];
    EXPECT_EQ(s[r].message(), "rank 2: data.train: no such file x.tsv");
  }
}

// The asynchronous channel: messages from any rank, FIFO per sender, counted, apart from the
// collectives (a collective between posts still matches its own messages).
TEST(Communicator, PostedMessagesArriveFromAnyRankInOrderPerSender) {
  std::vector<Status> s = RunRanks(3, [](Communicator& comm) -> Status {
    if (comm.rank() > 0) {
      for (int i = 0; i < 5; ++i) {
        const std::string m = std::to_string(comm.rank()) + ":" + std::to_string(i);
        RECTRAIN_RETURN_IF_ERROR(comm.Post(0, std::as_bytes(std::span<const char>(m.data(), m.size()))));
      }
    }
    std::vector<float> v(3, 1.0f);
    RECTRAIN_RETURN_IF_ERROR(comm.AllReduce(std::span<float>(v), ReduceOp::kSum));  // between the posts
    if (v[0] != 3.0f) return InternalError("allreduce mixed with posts");
    if (comm.rank() == 0) {
      int next[3] = {0, 0, 0};
      for (int k = 0; k < 10; ++k) {
        Transport::Message m;
        RECTRAIN_RETURN_IF_ERROR(comm.Receive(&m));
        const std::string text(reinterpret_cast<const char*>(m.bytes.data()), m.bytes.size());
        if (text != std::to_string(m.peer) + ":" + std::to_string(next[m.peer]++)) return InternalError("order " + text);
      }
      if (comm.stats().of(CommOp::kPost).bytes_received != 30) return InternalError("bytes");
    }
    return comm.Flush();
  });
  ExpectAllOk(s);
}

TEST(Communicator, ReceiveTimesOutAndSingleHasNoPeer) {
  RunRanksOptions opt;
  opt.timeout = std::chrono::milliseconds(100);
  std::vector<Status> s = RunRanks(2, [](Communicator& comm) -> Status {
    if (comm.rank() == 1) return OkStatus();
    Transport::Message m;
    return comm.Receive(&m);
  }, opt);
  EXPECT_EQ(s[0].code(), StatusCode::kDeadlineExceeded) << s[0];
  EXPECT_NE(s[0].message().find("no message from any rank"), std::string::npos);
  auto single = Communicator::Single();
  Transport::Message m;
  EXPECT_EQ(single->Receive(&m).code(), StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace rectrain::dist
