// rectrain/checkpoint/checkpoint.cc: see checkpoint.h (format: docs/formats/checkpoint.md).
#include "rectrain/checkpoint/checkpoint.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <set>
#include <system_error>
#include <tuple>

#include "rectrain/base/random.h"
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

std::string TableFile(const std::string& name, int rank, int world, bool delta) {
  const std::string ext = delta ? ".delta.bin" : ".bin";
  if (world <= 1) return "tables/" + name + ext;
  return "tables/" + name + ".part-" + std::to_string(rank) + "-of-" + std::to_string(world) + ext;
}

// The directory holding checkpoint `dir` (its siblings are the other checkpoints).
std::string ParentOf(const std::string& dir) {
  std::string d = dir;
  while (d.size() > 1 && d.back() == '/') d.pop_back();
  const size_t slash = d.find_last_of('/');
  return slash == std::string::npos ? "." : d.substr(0, slash);
}

// HashBytes of `dir`/meta.json: how a delta names the checkpoints it rests on.
Result<uint64_t> MetaHash(const std::string& dir) {
  RECTRAIN_ASSIGN_OR_RETURN(std::string text, io::ReadFileToString(io::JoinPath(dir, "meta.json")));
  return HashBytes(text, 0);
}

// A delta's links: the hashes of its base's and previous checkpoint's meta.json (rank 0 reads them).
Status LinkDelta(const std::string& dir, CheckpointMeta* meta) {
  const std::string parent = ParentOf(dir);
  for (auto [name, hash] : {std::pair{&meta->base, &meta->base_hash}, std::pair{&meta->previous, &meta->previous_hash}}) {
    Result<uint64_t> h = MetaHash(io::JoinPath(parent, *name));
    if (!h.ok()) return h.status().WithContext("the delta checkpoint " + dir + " rests on " + *name);
    *hash = *h;
  }
  return OkStatus();
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
    for (int r = 0; r < world; ++r) files.push_back(TableFile(name, r, world, meta.delta()));
    nlohmann::json tj = {{"name", name}, {"files", files}, {"rows", rows_per_table[t]}, {"dim", tables[t]->dim()}};
    if (world == 1 && !meta.delta()) tj["file"] = TableFile(name, 0, 1, false);  // what version-1 readers look for
    tables_json.push_back(tj);
  }
  auto num = [](double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); };
  nlohmann::json j = {
      {"format", "rectrain-checkpoint"},
      {"version", meta.delta() ? kDeltaCheckpointVersion : kCheckpointVersion},
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
  if (meta.delta()) {
    j["incremental"] = {{"base", {{"dir", meta.base}, {"meta_hash", Hex(meta.base_hash)}}},
                        {"previous", {{"dir", meta.previous}, {"meta_hash", Hex(meta.previous_hash)}}},
                        {"chain_length", meta.chain_length}};
  }
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
  // 1. Rank 0 makes a fresh temporary directory (and finds what a delta rests on).
  CheckpointMeta linked = meta;
  Status made;
  if (rank == 0) {
    if (meta.delta()) made = LinkDelta(dir, &linked);
    fs::remove_all(tmp, ec);
    if (made.ok() && !fs::create_directories(fs::path(tmp) / "tables", ec) && ec) {
      made = FsError(ec, "cannot create checkpoint directory " + tmp);
    }
  }
  RECTRAIN_RETURN_IF_ERROR(agree(made));
  // 2. Every rank writes its table parts (in parallel), rank 0 also the dense file and meta.json.
  Status wrote;
  for (size_t t = 0; t < tables.size() && wrote.ok(); ++t) {
    const std::string& name = tables[t]->config().name;
    const std::string path = tmp + "/" + TableFile(name, rank, world, meta.delta());
    wrote = meta.delta() ? tables[t]->SaveChanges(path) : tables[t]->Save(path);
    if (!wrote.ok()) wrote = wrote.WithContext("while saving table " + name);
  }
  RECTRAIN_RETURN_IF_ERROR(agree(wrote));
  std::vector<int64_t> rows(tables.size());
  for (size_t t = 0; t < tables.size(); ++t) rows[t] = tables[t]->Stats().rows;
  RECTRAIN_RETURN_IF_ERROR(comm->AllReduce(std::span<int64_t>(rows), dist::ReduceOp::kSum));
  Status described;
  if (rank == 0) described = WriteDenseAndMeta(tmp, linked, params, optimizer, tables, world, rows);
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
  RECTRAIN_RETURN_IF_ERROR(dist::AgreeOk(*comm, published));  // a failed rename keeps the complete .tmp directory
  for (embedding::EmbeddingTable* t : tables) t->MarkSaved(embedding::ChangeLog::kCheckpoint);
  return OkStatus();
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
    if (version > kDeltaCheckpointVersion) {
      return InvalidArgumentError(path + ": checkpoint version " + std::to_string(version) +
                                  " is newer than this build reads (" +
                                  std::to_string(kDeltaCheckpointVersion) + ")");
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
    if (j.contains("incremental")) {
      const nlohmann::json& inc = j.at("incremental");
      m.base = inc.at("base").at("dir").get<std::string>();
      m.base_hash = std::stoull(inc.at("base").at("meta_hash").get<std::string>(), nullptr, 16);
      m.previous = inc.at("previous").at("dir").get<std::string>();
      m.previous_hash = std::stoull(inc.at("previous").at("meta_hash").get<std::string>(), nullptr, 16);
      m.chain_length = inc.at("chain_length").get<int64_t>();
      if (m.base.empty() || m.previous.empty() || m.chain_length < 1) {
        return DataLossError(path + ": incremental names no base or previous checkpoint");
      }
    }
  } catch (const std::exception& e) {
    return DataLossError(path + ": malformed checkpoint metadata: " + e.what());
  }
  return m;
}

namespace {

// The model's tables must be the checkpoint's, by number and name.
Status CheckTableNames(const std::string& dir, const CheckpointMeta& meta,
                       std::span<embedding::EmbeddingTable* const> tables) {
  if (meta.tables.size() != tables.size()) {
    return InvalidArgumentError(dir + ": checkpoint has " + std::to_string(meta.tables.size()) +
                                " embedding tables, the model has " + std::to_string(tables.size()));
  }
  for (size_t t = 0; t < tables.size(); ++t) {
    if (meta.tables[t] != tables[t]->config().name) {
      return InvalidArgumentError(dir + ": checkpoint table " + std::to_string(t) + " is '" + meta.tables[t] +
                                  "', the model's is '" + tables[t]->config().name + "'");
    }
  }
  return OkStatus();
}

// Loads the tables of one checkpoint of a chain: a full one's files, or a delta's changes onto
// what is loaded. Every part (one per rank that wrote it); each rank keeps the ids it owns now.
// The cumulative counters are taken once, by rank 0, so the job's totals stay right.
Status LoadTables(const std::string& dir, const CheckpointMeta& meta, std::span<embedding::EmbeddingTable* const> tables,
                  int rank, int world, const std::function<bool(uint64_t)>& keep) {
  RECTRAIN_RETURN_IF_ERROR(CheckTableNames(dir, meta, tables));
  for (size_t t = 0; t < tables.size(); ++t) {
    const std::vector<std::string>& files = meta.table_files[t];
    for (size_t p = 0; p < files.size(); ++p) {
      embedding::LoadOptions o;
      o.merge = p > 0;
      o.counters = rank == 0;
      if (world > 1) o.keep = keep;
      const std::string path = dir + "/" + files[p];
      RECTRAIN_RETURN_IF_ERROR(meta.delta() ? tables[t]->LoadChanges(path, o) : tables[t]->Load(path, o))
          << "while loading table " << meta.tables[t];
    }
  }
  return OkStatus();
}

}  // namespace

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
  RECTRAIN_RETURN_IF_ERROR(CheckTableNames(dir, meta, tables));
  std::vector<std::string> chain = {dir};
  if (meta.delta()) {
    RECTRAIN_ASSIGN_OR_RETURN(chain, ResolveChain(dir));
  }
  std::vector<std::span<float>> state;
  if (optimizer != nullptr) state = optimizer->State();
  RECTRAIN_RETURN_IF_ERROR(ReadDenseFile(dir + "/dense.bin", params, state));
  for (const std::string& link : chain) {
    RECTRAIN_ASSIGN_OR_RETURN(CheckpointMeta m, ReadCheckpointMeta(link));
    RECTRAIN_RETURN_IF_ERROR(LoadTables(link, m, tables, rank, world, keep));
  }
  return meta;
}

namespace {

// Why the chain of `dir` cannot be read, and what to do.
Status BrokenChain(const std::string& dir, const std::string& why) {
  return FailedPreconditionError("the delta checkpoint " + dir + " cannot be restored: " + why +
                                 ". Restore that checkpoint's files, or remove " + dir +
                                 " and the checkpoints after it to resume from an earlier one");
}

}  // namespace

Result<std::vector<std::string>> ResolveChain(const std::string& dir) {
  const std::string parent = ParentOf(dir);
  std::vector<std::string> chain = {dir};
  RECTRAIN_ASSIGN_OR_RETURN(CheckpointMeta m, ReadCheckpointMeta(dir));
  const std::string base = m.base;
  const uint64_t base_hash = m.base_hash;
  std::string at = dir;
  while (m.delta()) {
    const std::string prev = io::JoinPath(parent, m.previous);
    Result<uint64_t> hash = MetaHash(prev);
    if (!hash.ok()) return BrokenChain(at, "the checkpoint it follows, " + prev + ", is missing (" + hash.status().message() + ")");
    if (*hash != m.previous_hash) {
      return BrokenChain(at, "the checkpoint it follows, " + prev + ", is not the one it was written after (its meta.json hash is " +
                                 Hex(*hash) + ", the delta recorded " + Hex(m.previous_hash) + ")");
    }
    RECTRAIN_ASSIGN_OR_RETURN(CheckpointMeta pm, ReadCheckpointMeta(prev));
    const bool same_base = pm.delta() ? (pm.base == base && pm.base_hash == base_hash)
                                      : (m.previous == base && *hash == base_hash);
    if (!same_base || pm.step > m.step || (pm.delta() && pm.chain_length + 1 != m.chain_length)) {
      return BrokenChain(at, "the checkpoint it follows, " + prev + ", belongs to another chain (not full checkpoint " + base + "'s)");
    }
    chain.insert(chain.begin(), prev);
    at = prev;
    m = std::move(pm);
  }
  return chain;
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
  // The newest `keep`, and every checkpoint a kept delta's chain goes through.
  std::set<std::string> needed;
  for (int64_t i = std::max<int64_t>(0, static_cast<int64_t>(all.size()) - keep); i < static_cast<int64_t>(all.size()); ++i) {
    needed.insert(all[i].second);
    Result<CheckpointMeta> m = ReadCheckpointMeta(all[i].second);
    for (int64_t hops = 0; m.ok() && m->delta() && hops <= static_cast<int64_t>(all.size()); ++hops) {
      const std::string prev = io::JoinPath(checkpoints_dir, m->previous);
      needed.insert(prev);
      m = ReadCheckpointMeta(prev);
    }
  }
  for (const auto& [step, path] : all) {
    if (needed.count(path) > 0) continue;
    RECTRAIN_RETURN_IF_ERROR(fs.RemoveAll(path)) << "while removing an old checkpoint";
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
