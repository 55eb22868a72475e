#include "rectrain/train/internal/job_figures.h"

#include "rectrain/train/internal/run_log.h"

namespace rectrain::train::internal {
namespace {

// A rank's figures travel as one fixed-size record of doubles.
constexpr int kFields = 16;

std::vector<double> Record(const ModelBundle& bundle, const Job& job, const RankInputs& mine) {
  const ps::StoreStats& st = bundle.store->stats();
  const PhaseSeconds& b = mine.breakdown;
  int64_t owned = 0;
  for (const auto& t : LocalTableSummaries(bundle)) owned += t.rows;
  const dist::CommStats& cs = job.comm->stats();
  return {static_cast<double>(job.rank()), static_cast<double>(mine.rows), static_cast<double>(owned),
          static_cast<double>(st.ids_served), static_cast<double>(cs.bytes_sent()),
          static_cast<double>(cs.bytes_received()), b.data_wait, b.lookup, b.exchange, b.forward, b.backward,
          b.allreduce, b.sparse_update, b.dense_update,
          // async: no minimum (the exchanges with the servers are not a collective's)
          job.async() ? 0.0 : static_cast<double>(st.min_bytes_sent + mine.allreduce_min_bytes),
          static_cast<double>(cs.of(dist::CommOp::kAllReduce).bytes_sent)};
}

RankFigures FromRecord(const double* x) {
  RankFigures f;
  f.rank = static_cast<int>(x[0]);
  f.rows = static_cast<int64_t>(x[1]);
  f.ids_owned = static_cast<int64_t>(x[2]);
  f.ids_served = static_cast<int64_t>(x[3]);
  f.bytes_sent = static_cast<int64_t>(x[4]);
  f.bytes_received = static_cast<int64_t>(x[5]);
  f.breakdown = {x[6], x[7], x[9], x[10], x[12], x[13], x[8], x[11]};
  f.min_bytes_sent = static_cast<int64_t>(x[14]);
  f.allreduce_bytes_sent = static_cast<int64_t>(x[15]);
  return f;
}

}  // namespace

Result<JobFigures> GatherJobFigures(const ModelBundle& bundle, const Job& job, const RankInputs& mine) {
  JobFigures out;
  if (!job.distributed()) {
    out.rejected = mine.rejected;
    out.tables = LocalTableSummaries(bundle);
    return out;
  }
  RECTRAIN_ASSIGN_OR_RETURN(out.tables, SummarizeTables(bundle, job));
  std::vector<int64_t> r = {mine.rejected};
  RECTRAIN_RETURN_IF_ERROR(job.comm->AllReduce(std::span<int64_t>(r), dist::ReduceOp::kSum));
  out.rejected = r[0];
  const std::vector<double> record = Record(bundle, job, mine);
  std::vector<double> all;
  RECTRAIN_RETURN_IF_ERROR(job.comm->AllGatherV(std::span<const double>(record), &all, nullptr));
  for (int k = 0; k < job.world(); ++k) out.ranks.push_back(FromRecord(all.data() + kFields * k));
  return out;
}

std::vector<std::string> RankLines(const std::vector<RankFigures>& ranks) {
  std::vector<std::string> lines;
  for (const RankFigures& f : ranks) {
    const PhaseSeconds& b = f.breakdown;
    const std::string ratio =
        f.min_bytes_sent > 0
            ? " (" + Fixed(static_cast<double>(f.bytes_sent) / static_cast<double>(f.min_bytes_sent), 3) + "x the minimum)"
            : "";
    lines.push_back("rank " + std::to_string(f.rank) + ": " + FormatCount(static_cast<double>(f.rows)) + " rows, " +
                    FormatCount(static_cast<double>(f.ids_owned)) + " ids owned, " +
                    FormatCount(static_cast<double>(f.bytes_sent)) + "B sent" + ratio + " | wait " +
                    Fixed(b.data_wait, 1) + "s lookup " + Fixed(b.lookup, 1) + "s exchange " + Fixed(b.exchange, 1) +
                    "s forward " + Fixed(b.forward, 1) + "s backward " + Fixed(b.backward, 1) + "s allreduce " +
                    Fixed(b.allreduce, 1) + "s update " + Fixed(b.sparse_update + b.dense_update, 1) + "s");
  }
  return lines;
}

}  // namespace rectrain::train::internal
