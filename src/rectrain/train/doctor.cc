#include "rectrain/train/doctor.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "rectrain/base/stopwatch.h"
#include "rectrain/data/memory_split.h"
#include "rectrain/data/reader.h"
#include "rectrain/dist/launch.h"
#include "rectrain/io/file.h"
#include "rectrain/nn/model_config.h"

namespace rectrain::train {
namespace fs = std::filesystem;
namespace {

int64_t MemAvailableBytes() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  int64_t kb = 0;
  std::string unit;
  while (in >> key >> kb >> unit) {
    if (key == "MemAvailable:") return kb * 1024;
  }
  return 0;
}

std::string HostName() {
  char buf[256] = {};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "?";
  return buf;
}

std::string Gib(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f GiB", static_cast<double>(bytes) / (1 << 30));
  return buf;
}

// Every rank's fields as one '\x1f'-separated string, gathered on every rank.
Result<std::vector<std::string>> GatherStrings(dist::Communicator& comm, const std::string& mine) {
  std::vector<char> all;
  std::vector<int64_t> counts;
  RECTRAIN_RETURN_IF_ERROR(comm.AllGatherV(std::span<const char>(mine.data(), mine.size()), &all, &counts));
  std::vector<std::string> out;
  size_t at = 0;
  for (int64_t n : counts) {
    out.emplace_back(all.data() + at, static_cast<size_t>(n));
    at += static_cast<size_t>(n);
  }
  return out;
}

std::vector<std::string> Split(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == '\x1f') {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

// Rank 0 and `peer` exchange `bytes` each way `rounds` times (the other ranks take part with
// nothing); returns the mean seconds per round on rank 0.
Result<double> TimeExchange(dist::Communicator& comm, int peer, int64_t bytes, int rounds, std::vector<char>* buf) {
  const int w = comm.world(), me = comm.rank();
  std::vector<int64_t> counts(static_cast<size_t>(w), 0);
  if (me == 0) counts[static_cast<size_t>(peer)] = bytes;
  if (me == peer) counts[0] = bytes;
  buf->resize(me == 0 || me == peer ? static_cast<size_t>(bytes) : 0);
  std::vector<char> recv;
  RECTRAIN_RETURN_IF_ERROR(comm.AllToAllVKnown(std::span<const char>(*buf), counts, counts, &recv));  // warm-up
  Stopwatch sw;
  for (int i = 0; i < rounds; ++i) {
    RECTRAIN_RETURN_IF_ERROR(comm.AllToAllVKnown(std::span<const char>(*buf), counts, counts, &recv));
  }
  return sw.Seconds() / rounds;
}

// The embedding tables the configured model has: nn::MakeModel derives them from the fields of
// data.train's reader (one per distinct embedding dim). When the data cannot be read or the
// model not built, every categorical feature of the schema counts as one (an upper bound).
int64_t EmbeddingTables(const config::TrainConfig& c) {
  data::DataConfig d = c.data;
  d.files = c.train_files;
  auto reader = data::OpenBatchReader(d, c.read);
  if (reader.ok()) {
    auto model = nn::MakeModel(c.model, (*reader)->sparse_names(),
                               static_cast<int>((*reader)->dense_names().size()), c.embedding);
    if (model.ok()) return static_cast<int64_t>((*model)->spec().tables.size());
  }
  const int64_t features = c.data.schema.format == data::DataFormat::kCriteo ? c.data.schema.criteo_sparse
                                                            : static_cast<int64_t>(c.data.schema.sparse.size());
  return std::max<int64_t>(features, 1);
}

// This rank's data files: how many and how large, or the first that cannot be read.
void CheckData(const config::TrainConfig& c, DoctorRank* me) {
  std::vector<std::string> patterns = c.train_files;
  patterns.insert(patterns.end(), c.valid_files.begin(), c.valid_files.end());
  for (const std::string& p : patterns) {
    auto files = io::ExpandPathsWithSizes({p});
    if (!files.ok()) {
      me->data_error = files.status().message();
      return;
    }
    for (const io::ExpandedFile& f : *files) {
      if (!io::RandomAccessFile::Open(f.path).ok()) {  // readable by this rank (local or object store)
        me->data_error = "cannot read " + f.path;
        return;
      }
      ++me->data_files;
      me->data_bytes += f.size;
    }
  }
}

DoctorRank LocalFacts(const config::LoadedConfig* config, int rank) {
  DoctorRank me;
  me.rank = rank;
  me.host = HostName();
  me.build = dist::BuildId();
  me.mpi = dist::MpiLibraryVersion();
  me.cpus = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  me.mem_available = MemAvailableBytes();
  if (config != nullptr) {
    me.config_hash = config->hash;
    CheckData(config->config, &me);
  }
  return me;
}

// Every rank's facts on every rank, in rank order.
Result<std::vector<DoctorRank>> GatherRanks(dist::Communicator& comm, const DoctorRank& me) {
  const std::string mine = me.host + '\x1f' + me.build + '\x1f' + me.mpi + '\x1f' + std::to_string(me.cpus) + '\x1f' +
                           std::to_string(me.mem_available) + '\x1f' + std::to_string(me.data_files) + '\x1f' +
                           std::to_string(me.data_bytes) + '\x1f' + me.data_error + '\x1f' +
                           std::to_string(me.config_hash);
  RECTRAIN_ASSIGN_OR_RETURN(std::vector<std::string> all, GatherStrings(comm, mine));
  std::vector<DoctorRank> out;
  for (int r = 0; r < comm.world(); ++r) {
    const std::vector<std::string> f = Split(all[static_cast<size_t>(r)]);
    DoctorRank d;
    d.rank = r;
    if (f.size() == 9) {
      d.host = f[0];
      d.build = f[1];
      d.mpi = f[2];
      d.cpus = std::stoi(f[3]);
      d.mem_available = std::stoll(f[4]);
      d.data_files = std::stoll(f[5]);
      d.data_bytes = std::stoll(f[6]);
      d.data_error = f[7];
      d.config_hash = std::stoull(f[8]);
    }
    out.push_back(d);
  }
  return out;
}

// What is wrong with each rank, next to rank 0.
std::vector<std::string> FindProblems(const DoctorReport& report) {
  std::vector<std::string> problems;
  const DoctorRank& lead = report.ranks[0];
  for (const DoctorRank& d : report.ranks) {
    const std::string who = "rank " + std::to_string(d.rank) + " (" + d.host + ")";
    if (d.build != lead.build) {
      problems.push_back(who + " runs " + d.build + " but rank 0 runs " + lead.build +
                         ": install one rectrain binary on every host");
    }
    if (d.mpi != lead.mpi) problems.push_back(who + " uses MPI \"" + d.mpi + "\" but rank 0 uses \"" + lead.mpi + "\"");
    if (d.config_hash != lead.config_hash) {
      problems.push_back(who + " was started with another configuration than rank 0 (config hash differs): every "
                         "rank must get the same config file and --set flags");
    }
    if (!d.data_error.empty()) {
      problems.push_back(who + " cannot read the data: " + d.data_error +
                         " (every rank needs data.train and data.valid at the same paths)");
    }
    if (report.budget_bytes > 0 && d.mem_available > 0 && d.mem_available < report.budget_bytes) {
      problems.push_back(who + " has " + Gib(d.mem_available) + " available but the config may hold " +
                         Gib(report.budget_bytes) + " (data.memory_cache_bytes + embedding.memory_budget for each of " +
                         std::to_string(report.tables) + " embedding table(s)); lower them or use more ranks");
    }
  }
  return problems;
}

}  // namespace

Result<DoctorReport> RunDoctor(const config::LoadedConfig* config, dist::Communicator& comm) {
  DoctorReport report;
  report.world = comm.world();
  report.transport = comm.transport_name();
  if (config != nullptr) {
    const config::TrainConfig& c = config->config;
    const int64_t cache = c.epoch.memory_cache_bytes > 0 ? c.epoch.memory_cache_bytes : data::MemoryBudget::DefaultBytes();
    report.tables = EmbeddingTables(c);
    report.budget_bytes = cache + c.embedding.memory_budget_bytes * report.tables;
  }
  RECTRAIN_ASSIGN_OR_RETURN(report.ranks, GatherRanks(comm, LocalFacts(config, comm.rank())));
  // The links: rank 0 with every other rank, a small exchange then 64 MiB.
  std::vector<char> buf;
  for (int peer = 1; peer < comm.world(); ++peer) {
    RECTRAIN_ASSIGN_OR_RETURN(double small, TimeExchange(comm, peer, 8, 200, &buf));
    RECTRAIN_ASSIGN_OR_RETURN(double big, TimeExchange(comm, peer, int64_t{64} << 20, 3, &buf));
    report.ranks[static_cast<size_t>(peer)].latency_us = small * 1e6;
    report.ranks[static_cast<size_t>(peer)].bandwidth_gbs = big > 0 ? static_cast<double>(int64_t{64} << 20) / big / 1e9 : 0;
  }
  report.problems = FindProblems(report);
  return report;
}

std::string FormatDoctorReport(const DoctorReport& r) {
  std::ostringstream o;
  o << "rectrain doctor: " << r.world << " rank(s) over " << r.transport << "\n";
  char line[512];
  std::snprintf(line, sizeof(line), "%-5s %-18s %-34s %-5s %-11s %-22s %-12s %s\n", "rank", "host", "build", "cpus",
                "mem avail", "data", "latency", "bandwidth");
  o << line;
  for (const DoctorRank& d : r.ranks) {
    char data[64], lat[32], bw[32];
    if (!d.data_error.empty()) {
      std::snprintf(data, sizeof(data), "UNREADABLE");
    } else {
      std::snprintf(data, sizeof(data), "%lld files %.1f MB", static_cast<long long>(d.data_files),
                    static_cast<double>(d.data_bytes) / 1e6);
    }
    if (d.rank == 0) {
      std::snprintf(lat, sizeof(lat), "-");
      std::snprintf(bw, sizeof(bw), "-");
    } else {
      std::snprintf(lat, sizeof(lat), "%.1f us", d.latency_us);
      std::snprintf(bw, sizeof(bw), "%.2f GB/s", d.bandwidth_gbs);
    }
    std::snprintf(line, sizeof(line), "%-5d %-18.18s %-34.34s %-5d %-11s %-22s %-12s %s\n", d.rank, d.host.c_str(),
                  d.build.c_str(), d.cpus, Gib(d.mem_available).c_str(), data, lat, bw);
    o << line;
  }
  if (!r.ranks.empty()) o << "mpi: " << (r.ranks[0].mpi.empty() ? "(not used)" : r.ranks[0].mpi) << "\n";
  if (r.budget_bytes > 0) {
    o << "memory the config may hold per rank: " << Gib(r.budget_bytes) << " (" << r.tables << " embedding table(s))\n";
  }
  if (r.problems.empty()) {
    o << "ok: ready\n";
  } else {
    for (const std::string& p : r.problems) o << "problem: " << p << "\n";
  }
  return o.str();
}

}  // namespace rectrain::train
