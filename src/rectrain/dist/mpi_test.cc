// The collectives over real MPI processes (ctest runs this binary under mpiexec with 2 and 3
// ranks): the same checks as communicator_test.cc's in-process ones, on the MPI transport.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <memory>

#include "rectrain/dist/launch.h"

namespace rectrain::dist {
namespace {

Communicator* comm = nullptr;

TEST(Mpi, LaunchIsDetected) {
  const LaunchInfo info = DetectLaunch();
  EXPECT_NE(info.launcher, "none");
  EXPECT_EQ(info.world, comm->world());
  EXPECT_EQ(info.rank, comm->rank());
  EXPECT_EQ(comm->transport_name(), "mpi");
  EXPECT_FALSE(MpiLibraryVersion().empty());
}

TEST(Mpi, AllReduceSmallAndRing) {
  for (int64_t n : {int64_t{3}, int64_t{100003}}) {
    std::vector<float> v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) v[i] = 0.5f * static_cast<float>(comm->rank() + 1) + static_cast<float>(i % 7);
    ASSERT_TRUE(comm->AllReduce(std::span<float>(v), ReduceOp::kSum).ok());
    const int w = comm->world();
    for (int64_t i = 0; i < n; i += 997) {
      const float want = 0.5f * static_cast<float>(w * (w + 1) / 2) + static_cast<float>(w * (i % 7));
      ASSERT_NEAR(v[i], want, 1e-3) << i;
    }
    // Every rank holds the same bits.
    const size_t k = std::min<size_t>(v.size(), 16);
    std::vector<float> all;
    ASSERT_TRUE(comm->AllGatherV(std::span<const float>(v.data(), k), &all, nullptr).ok());
    for (int r = 1; r < w; ++r) EXPECT_EQ(std::memcmp(all.data(), all.data() + k * r, k * sizeof(float)), 0);
  }
}

TEST(Mpi, AllToAllVAndBroadcast) {
  const int w = comm->world(), me = comm->rank();
  std::vector<int64_t> send, counts(static_cast<size_t>(w));
  for (int p = 0; p < w; ++p) {
    counts[static_cast<size_t>(p)] = me + p;
    for (int k = 0; k < me + p; ++k) send.push_back(me * 100 + p);
  }
  std::vector<int64_t> recv, recv_counts;
  ASSERT_TRUE(comm->AllToAllV(std::span<const int64_t>(send), counts, &recv, &recv_counts).ok());
  size_t at = 0;
  for (int src = 0; src < w; ++src) {
    ASSERT_EQ(recv_counts[static_cast<size_t>(src)], src + me);
    for (int k = 0; k < src + me; ++k) ASSERT_EQ(recv[at++], src * 100 + me);
  }
  std::string s = me == w - 1 ? "from the last rank" : "";
  ASSERT_TRUE(comm->BroadcastString(&s, w - 1).ok());
  EXPECT_EQ(s, "from the last rank");
  EXPECT_TRUE(comm->Barrier().ok());
}

}  // namespace
}  // namespace rectrain::dist

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  auto c = rectrain::dist::Connect();
  if (!c.ok()) {
    std::fprintf(stderr, "%s\n", c.status().ToString().c_str());
    return 1;
  }
  std::unique_ptr<rectrain::dist::Communicator> owned = std::move(c).value();
  rectrain::dist::comm = owned.get();
  // Only rank 0 prints gtest's report; every rank's result decides the exit code.
  if (owned->rank() != 0) {
    ::testing::TestEventListeners& l = ::testing::UnitTest::GetInstance()->listeners();
    delete l.Release(l.default_result_printer());
  }
  const int rc = RUN_ALL_TESTS();
  std::vector<int64_t> worst = {rc};
  if (!owned->AllReduce(std::span<int64_t>(worst), rectrain::dist::ReduceOp::kMax).ok()) return 1;
  return static_cast<int>(worst[0]);
}
