// rectrain/train/doctor.h: `rectrain doctor` — checks a machine, or every rank of an allocation,
// before a long job: the same rectrain binary and MPI library everywhere, the config's data
// readable on every rank, memory per rank against the configured budgets, and the latency and
// bandwidth between rank 0 and every other rank. Every rank calls RunDoctor with its
// communicator; rank 0 gets the whole report.
//
// Thread safety: one call per process at a time.
#pragma once

#include <string>
#include <vector>

#include "rectrain/base/result.h"
#include "rectrain/config/train_config.h"
#include "rectrain/dist/communicator.h"

namespace rectrain::train {

struct DoctorRank {
  int rank = 0;
  std::string host;
  std::string build;        // dist::BuildId()
  std::string mpi;          // MPI library version, "" without MPI
  int cpus = 0;             // online CPUs
  int64_t mem_available = 0;  // MemAvailable of /proc/meminfo, bytes
  int64_t data_files = 0;   // files of data.train and data.valid found
  int64_t data_bytes = 0;
  std::string data_error;   // "" when every path is readable
  double latency_us = 0;    // rank 0 <-> this rank: one small exchange (0 for rank 0)
  double bandwidth_gbs = 0; // rank 0 <-> this rank: GB/s per direction of a 64 MiB exchange
  uint64_t config_hash = 0; // LoadedConfig::hash of the config it was given (0: none)
};

struct DoctorReport {
  int world = 1;
  std::string transport;
  int64_t budget_bytes = 0;          // what the config may hold per rank (see below)
  int64_t tables = 0;                // embedding tables of the configured model
  std::vector<DoctorRank> ranks;     // rank order
  std::vector<std::string> problems; // empty: ready
};

// `config` may be null (no data, budget or config checks). The memory a rank may hold is
// data.memory_cache_bytes (or its default) plus embedding.memory_budget once per embedding table
// of the configured model (a table serves every field of its embedding dim: DeepFM has one);
// a rank whose MemAvailable is below it is a problem. Every rank's config hash is compared with
// rank 0's: a rank started with another config (or --set) is a problem. Errors: the
// communicator's.
Result<DoctorReport> RunDoctor(const config::LoadedConfig* config, dist::Communicator& comm);

// The report as a table with the problems last (rank 0 prints it).
std::string FormatDoctorReport(const DoctorReport& report);

}  // namespace rectrain::train
