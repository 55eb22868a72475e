#include "rectrain/train/internal/async_phase.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "rectrain/base/stopwatch.h"
#include "rectrain/optim/optimizer.h"
#include "rectrain/ps/async_ps.h"

namespace rectrain::train::internal {
namespace {

int64_t DenseCount(const ModelBundle& bundle) {
  int64_t total = 0;
  for (const auto& p : bundle.params) total += static_cast<int64_t>(p.value.size());
  return total;
}

// Every rank gets the servers' final dense parameters (each server contributes its chunk).
Status GatherServersDense(const Job& job, ModelBundle& bundle) {
  const int64_t total = DenseCount(bundle);
  std::vector<float> all(static_cast<size_t>(total), 0.0f);
  if (job.is_server()) {
    const ps::DenseRange r = ps::DenseChunk(total, job.rank() - job.workers(), job.servers);
    int64_t at = 0;
    for (const auto& p : bundle.params) {
      for (size_t i = 0; i < p.value.size(); ++i, ++at) {
        if (at >= r.begin && at < r.end) all[static_cast<size_t>(at)] = p.value[i];
      }
    }
  }
  RECTRAIN_RETURN_IF_ERROR(dist::AgreeOk(*job.comm, OkStatus()));
  RECTRAIN_RETURN_IF_ERROR(job.comm->AllReduce(std::span<float>(all), dist::ReduceOp::kSum));
  int64_t at = 0;
  for (const auto& p : bundle.params) {
    std::copy_n(all.data() + at, p.value.size(), p.value.data());
    at += static_cast<int64_t>(p.value.size());
  }
  return OkStatus();
}

}  // namespace

Status ServeAsServer(const config::TrainConfig& c, const Job& job, ModelBundle& bundle, const ComputeContext& compute,
                     double* seconds) {
  ps::ServerOptions so;
  so.tables = bundle.tables;
  so.dense = ps::SliceParams(bundle.params, ps::DenseChunk(DenseCount(bundle), job.rank() - job.workers(), job.servers));
  RECTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<optim::Optimizer> optimizer, optim::MakeOptimizer(c.optimizer));
  RECTRAIN_RETURN_IF_ERROR(optimizer->Init(so.dense)) << "while initialising the server's optimizer";
  so.optimizer = optimizer.get();
  so.workers = job.workers();
  so.staleness = c.dist.staleness;
  so.compute = compute;
  ps::ServerStats stats;
  Stopwatch sw;
  job.comm->set_context("serving");
  RECTRAIN_RETURN_IF_ERROR(ps::RunServer(so, *job.comm, &stats));
  *seconds = sw.Seconds();
  return OkStatus();
}

Status ConcludeAsync(const Job& job, ModelBundle& bundle, AsyncTotals* t) {
  job.comm->set_context("the end of the asynchronous phase");
  RECTRAIN_RETURN_IF_ERROR(GatherServersDense(job, bundle));
  // From here on every rank steps together over the servers' rows: the final evaluation and the
  // checkpoint.
  bundle.store = ps::MakeShardedStore(bundle.model->spec(), bundle.tables, job.comm, bundle.owners);
  bundle.async_store = nullptr;
  const bool server = job.is_server();
  std::vector<double> sums = {static_cast<double>(t->session_rows), static_cast<double>(t->rows_read_total),
                              static_cast<double>(t->rows_in_epoch)};
  if (server) sums = {0, 0, 0};
  RECTRAIN_RETURN_IF_ERROR(job.comm->AllReduce(std::span<double>(sums), dist::ReduceOp::kSum));
  std::vector<double> maxes = {server ? 0.0 : t->session_seconds, static_cast<double>(server ? 0 : t->step),
                               static_cast<double>(server ? 0 : t->epoch)};
  RECTRAIN_RETURN_IF_ERROR(job.comm->AllReduce(std::span<double>(maxes), dist::ReduceOp::kMax));
  t->session_rows = static_cast<int64_t>(sums[0]);
  t->rows_read_total = static_cast<int64_t>(sums[1]);
  t->rows_in_epoch = static_cast<int64_t>(sums[2]);
  t->session_seconds = maxes[0];
  t->step = static_cast<int64_t>(maxes[1]);  // the most steps any worker made
  t->epoch = static_cast<int64_t>(maxes[2]);
  return OkStatus();
}

}  // namespace rectrain::train::internal
