// rectrain/checkpoint/checkpoint.cc: see checkpoint.h (format: docs/formats/checkpoint.md).
#include "rectrain/checkpoint/checkpoint.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <system_error>
#include <tuple>

#include "rectrain/checkpoint/dense_file.h"
#include "rectrain/io/file.h"
#include "rectrain/io/fs/file_system.h"

namespace rectrain::checkpoint {
namespace fs = std::filesystem;
namespace {

std::string Hex(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016" PRIx64, v);
  return buf;
}

Status FsError(const std::error_code& ec, const std::string& what) {
  return ErrnoToStatus(ec.value(), what);
}

std::string TableFile(const std::string& name, int rank, int world) {
  if (world <= 1) return "tables/" + name + ".bin";
  return "tables/" + name + ".part-" + std::to_string(rank) + "-of-" + std::to_string(world) + ".bin";
}

// Rank 0's part of a checkpoint: dense.bin and meta.json (the files of every rank's parts named).
Status WriteDenseAndMeta(const std::string& tmp, const CheckpointMeta& meta, std::span<const optim::ParamRef> params,
                         optim::Optimizer* optimizer, std::span<embedding::EmbeddingTable* const> tables,
                         int world, const std::vector<int64_t>& rows_per_table) {
  std::vector<std::span<float>> state;
  if (optimizer != nullptr) state = optimizer->State();
  RECTRAIN_RETURN_IF_ERROR(WriteDenseFile(tmp + "/dense.bin", params, state));
  nlohmann::json tables_json = nlohmann::json::array();
  for (size_t t = 0; t < tables.size(); ++t) {
    const std::string& name = tables[t]->config().name;
    nlohmann::json files = nlohmann::json::array();
    for (int r = 0; r < world; ++r) files.push_back(TableFile(name, r, world));
    nlohmann::json tj = {{"name", name}, {"files", files}, {"rows", rows_per_table[t]}, {"dim", tables[t]->dim()}};
    if (world == 1) tj["file"] = TableFile(name, 0, 1);  // what version-1 readers look for
    tables_json.push_back(tj);
  }
  auto num = [](double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); };
  nlohmann::json j = {
      {"format", "rectrain-checkpoint"},
      {"version", kCheckpointVersion},
      {"step", meta.step},
      {"epoch", meta.epoch},
      {"rows_in_epoch", meta.rows_in_epoch},
      {"rows_read_total", meta.rows_read_total},
      {"rows_rejected_total", meta.rows_rejected_total},
      {"train_seconds", meta.train_seconds},
      {"best_metric", num(meta.best_metric)},
      {"best_step", meta.best_step},
      {"evals_without_improvement", meta.evals_without_improvement},
      {"last_eval_step", meta.last_eval_step},
      {"config_hash", Hex(meta.config_hash)},
      {"model_type", meta.model_type},
      {"world", world},
      {"dense", {{"file", "dense.bin"}, {"params", params.size()}, {"optimizer_state", state.size()}}},
      {"tables", tables_json},
      {"created_unix", static_cast<int64_t>(std::time(nullptr))},
  };
  if (!meta.data_split.empty()) j["data_split"] = meta.data_split;
  if (!meta.rank_rows_in_epoch.empty()) j["rank_rows_in_epoch"] = meta.rank_rows_in_epoch;
  if (meta.plan_world > 0) j["epoch_plan"] = {{"world", meta.plan_world}, {"rows", meta.plan_rows}};
  if (!meta.stream_position.empty()) j["stream"] = nlohmann::json::parse(meta.stream_position, nullptr, /*allow_exceptions=*/false);
  return io::WriteFileAtomically(tmp + "/meta.json", j.dump(2) + "\n");
}

}  // namespace

Status WriteCheckpoint(const std::string& dir, const CheckpointMeta& meta,
                       std::span<const optim::ParamRef> params, optim::Optimizer* optimizer,
                       std::span<embedding::EmbeddingTable* const> tables, dist::Communicator* comm) {
  std::unique_ptr<dist::Communicator> single;
  if (comm == nullptr) {
    single = dist::Communicator::Single();
    comm = single.get();
  }
  const int rank = comm->rank(), world = comm->world();
  const std::string tmp = dir + ".tmp";
  std::error_code ec;
  // A failed write (a full disk) removes what it wrote: the space is needed, the parts are useless.
  auto agree = [&](const Status& mine) {
    Status all = dist::AgreeOk(*comm, mine);
    if (!all.ok() && rank == 0) {
      std::error_code ignored;
      fs::remove_all(tmp, ignored);
    }
    return all;
  };
  // 1. Rank 0 makes a fresh temporary directory.
  Status made;
  if (rank == 0) {
    fs::remove_all(tmp, ec);
    if (!fs::create_directories(fs::path(tmp) / "tables", ec) && ec) made = FsError(ec, "cannot create checkpoint directory " + tmp);
  }
  RECTRAIN_RETURN_IF_ERROR(agree(made));
  // 2. Every rank writes its table parts (in parallel), rank 0 also the dense file and meta.json.
  Status wrote;
  for (size_t t = 0; t < tables.size() && wrote.ok(); ++t) {
    const std::string& name = tables[t]->config().name;
    wrote = tables[t]->Save(tmp + "/" + TableFile(name, rank, world));
    if (!wrote.ok()) wrote = wrote.WithContext("while saving table " + name);
  }
  RECTRAIN_RETURN_IF_ERROR(agree(wrote));
  std::vector<int64_t> rows(tables.size());
  for (size_t t = 0; t < tables.size(); ++t) rows[t] = tables[t]->Stats().rows;
  RECTRAIN_RETURN_IF_ERROR(comm->AllReduce(std::span<int64_t>(rows), dist::ReduceOp::kSum));
  Status described;
  if (rank == 0) described = WriteDenseAndMeta(tmp, meta, params, optimizer, tables, world, rows);
  RECTRAIN_RETURN_IF_ERROR(agree(described));
  // 3. Rank 0 publishes it under its final name.
  Status published;
  if (rank == 0) {
    if (fs::exists(dir, ec)) {
      fs::remove_all(dir, ec);
      if (ec) published = FsError(ec, "cannot replace " + dir);
    }
    if (published.ok()) {
      fs::rename(tmp, dir, ec);
      if (ec) published = FsError(ec, "cannot rename " + tmp + " to " + dir);
    }
  }
  return dist::AgreeOk(*comm, published);  // a failed rename keeps the complete .tmp directory
}

Result<CheckpointMeta> ReadCheckpointMeta(const std::string& dir) {
  const std::string path = dir + "/meta.json";
  RECTRAIN_ASSIGN_OR_RETURN(std::string text, io::ReadFileToString(path));
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return DataLossError(path + ": not valid JSON");
  CheckpointMeta m;
  try {
    if (j.value("format", "") != "rectrain-checkpoint") {
      return DataLossError(path + ": not a rectrain checkpoint (format field missing)");
    }
    const int version = j.at("version").get<int>();
    if (version > kCheckpointVersion) {
      return InvalidArgumentError(path + ": checkpoint version " + std::to_string(version) +
                                  " is newer than this build reads (" +
                                  std::to_string(kCheckpointVersion) + ")");
    }
    m.step = j.at("step").get<int64_t>();
    m.epoch = j.at("epoch").get<int64_t>();
    m.rows_in_epoch = j.at("rows_in_epoch").get<int64_t>();
    m.rows_read_total = j.at("rows_read_total").get<int64_t>();
    m.rows_rejected_total = j.at("rows_rejected_total").get<int64_t>();
    m.train_seconds = j.at("train_seconds").get<double>();
    m.best_metric = j.at("best_metric").is_null() ? std::numeric_limits<double>::quiet_NaN()
                                                  : j.at("best_metric").get<double>();
    m.best_step = j.at("best_step").get<int64_t>();
    m.evals_without_improvement = j.at("evals_without_improvement").get<int64_t>();
    m.last_eval_step = j.at("last_eval_step").get<int64_t>();
    m.config_hash = std::stoull(j.at("config_hash").get<std::string>(), nullptr, 16);
    m.model_type = j.at("model_type").get<std::string>();
    m.world = j.value("world", 1);
    if (m.world < 1) return DataLossError(path + ": world " + std::to_string(m.world) + " is not a number of ranks");
    for (const auto& t : j.at("tables")) {
      const std::string name = t.at("name").get<std::string>();
      m.tables.push_back(name);
      std::vector<std::string> files;
      if (t.contains("files")) {
        for (const auto& f : t.at("files")) files.push_back(f.get<std::string>());
      } else {
        files.push_back(t.value("file", "tables/" + name + ".bin"));
      }
      if (static_cast<int>(files.size()) != m.world) {
        return DataLossError(path + ": table " + name + " lists " + std::to_string(files.size()) + " files for " +
                             std::to_string(m.world) + " ranks");
      }
      m.table_files.push_back(std::move(files));
    }
    m.data_split = j.value("data_split", "");
    if (j.contains("rank_rows_in_epoch")) m.rank_rows_in_epoch = j.at("rank_rows_in_epoch").get<std::vector<int64_t>>();
    if (j.contains("epoch_plan")) {
      m.plan_world = j.at("epoch_plan").at("world").get<int>();
      m.plan_rows = j.at("epoch_plan").at("rows").get<std::vector<int64_t>>();
      if (m.plan_world < 1 || static_cast<int>(m.plan_rows.size()) != m.plan_world) {
        return DataLossError(path + ": epoch_plan lists " + std::to_string(m.plan_rows.size()) + " streams for a plan of " +
                             std::to_string(m.plan_world));
      }
    }
    if (j.contains("stream")) m.stream_position = j.at("stream").dump();
  } catch (const std::exception& e) {
    return DataLossError(path + ": malformed checkpoint metadata: " + e.what());
  }
  return m;
}

Result<CheckpointMeta> ReadCheckpoint(const std::string& dir,
                                      std::span<const optim::ParamRef> params,
                                      optim::Optimizer* optimizer,
                                      std::span<embedding::EmbeddingTable* const> tables,
                                      dist::Communicator* comm, const std::function<bool(uint64_t)>& keep) {
  const int rank = comm != nullptr ? comm->rank() : 0;
  const int world = comm != nullptr ? comm->world() : 1;
  if (world > 1 && !keep) {
    return InvalidArgumentError("ReadCheckpoint on rank " + std::to_string(rank) + " of " + std::to_string(world) +
                                ": no `keep` to say which rows this rank holds");
  }
  RECTRAIN_ASSIGN_OR_RETURN(CheckpointMeta meta, ReadCheckpointMeta(dir));
  if (meta.tables.size() != tables.size()) {
    return InvalidArgumentError(dir + ": checkpoint has " + std::to_string(meta.tables.size()) +
                                " embedding tables, the model has " +
                                std::to_string(tables.size()));
  }
  for (size_t t = 0; t < tables.size(); ++t) {
    if (meta.tables[t] != tables[t]->config().name) {
      return InvalidArgumentError(dir + ": checkpoint table " + std::to_string(t) + " is '" +
                                  meta.tables[t] + "', the model's is '" +
                                  tables[t]->config().name + "'");
    }
  }
  std::vector<std::span<float>> state;
  if (optimizer != nullptr) state = optimizer->State();
  RECTRAIN_RETURN_IF_ERROR(ReadDenseFile(dir + "/dense.bin", params, state));
  for (size_t t = 0; t < tables.size(); ++t) {
    // Every part (one per rank that wrote it); each rank keeps the ids it owns now. The
    // cumulative counters are taken once, by rank 0, so the job's totals stay right.
    const std::vector<std::string>& files = meta.table_files[t];
    for (size_t p = 0; p < files.size(); ++p) {
      embedding::LoadOptions o;
      o.merge = p > 0;
      o.counters = rank == 0;
      if (world > 1) o.keep = keep;
      RECTRAIN_RETURN_IF_ERROR(tables[t]->Load(dir + "/" + files[p], o)) << "while loading table " << meta.tables[t];
    }
  }
  return meta;
}

namespace {

// N of "step-N" (digits only), else -1.
int64_t StepOf(const std::string& name) {
  if (name.rfind("step-", 0) != 0) return -1;
  const std::string digits = name.substr(5);
  if (digits.empty() || digits.size() > 18 || !std::all_of(digits.begin(), digits.end(), ::isdigit)) return -1;
  return std::stoll(digits);
}

// Every step-N directory under `dir` (any FileSystem), with whether it holds meta.json: only
// those are complete, since meta.json is written (or uploaded) last.
std::vector<std::tuple<int64_t, std::string, bool>> StepDirs(const std::string& dir) {
  std::vector<std::tuple<int64_t, std::string, bool>> out;
  io::FileSystem& fs = io::FileSystemFor(dir);
  Result<std::vector<io::DirEntry>> entries = fs.List(dir, /*recursive=*/false);
  if (!entries.ok()) return out;
  for (const io::DirEntry& e : *entries) {
    const int64_t step = StepOf(e.name);
    if (!e.is_dir || step < 0) continue;
    const std::string path = io::JoinPath(dir, e.name);
    out.emplace_back(step, path, fs.Stat(io::JoinPath(path, "meta.json")).ok());
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

std::vector<std::pair<int64_t, std::string>> ListCheckpoints(const std::string& checkpoints_dir) {
  std::vector<std::pair<int64_t, std::string>> out;
  for (const auto& [step, path, complete] : StepDirs(checkpoints_dir)) {
    if (complete) out.emplace_back(step, path);
  }
  return out;
}

Status PruneCheckpoints(const std::string& checkpoints_dir, int64_t keep) {
  io::FileSystem& fs = io::FileSystemFor(checkpoints_dir);
  const auto all = ListCheckpoints(checkpoints_dir);
  for (int64_t i = 0; i + keep < static_cast<int64_t>(all.size()); ++i) {
    RECTRAIN_RETURN_IF_ERROR(fs.RemoveAll(all[i].second)) << "while removing an old checkpoint";
  }
  if (fs.remote()) {
    // Uploads that never completed (no meta.json), older than the newest complete checkpoint.
    for (const auto& [step, path, complete] : StepDirs(checkpoints_dir)) {
      if (!complete && !all.empty() && step < all.back().first) {
        RECTRAIN_RETURN_IF_ERROR(fs.RemoveAll(path)) << "while removing an incomplete checkpoint";
      }
    }
    return OkStatus();
  }
  std::error_code ec;
  fs::directory_iterator it(checkpoints_dir, ec);
  if (ec) return OkStatus();
  for (const auto& entry : it) {
    const std::string name = entry.path().filename().string();
    if (name.size() > 4 && name.compare(name.size() - 4, 4, ".tmp") == 0) fs::remove_all(entry.path(), ec);
  }
  return OkStatus();
}

}  // namespace rectrain::checkpoint
