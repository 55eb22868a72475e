// rectrain/serve/snapshot.h: a model's state as a publish writes it (publish.h), copied out of
// the trainer's tables at a step boundary so that another thread can write it while training
// goes on (docs/online.md "Publishing to serving").
//
// A snapshot is complete (every row of every table: a full export can be written from it) or
// incremental (the rows changed since the previous snapshot and the ids removed since then, as
// the tables' ChangeLog::kPublish record holds them: a delta can be written from it, against the
// version written from the previous snapshot). It is plain data, so the snapshot of a model
// sharded over ranks is formed by concatenating, table by table, every rank's ids, updates, rows
// and removed ids (each id lives on one rank); the OOV rows and the dense parameters are
// replicated, so one rank's are taken.
//
// Thread safety: plain values. TakeSnapshot reads the tables: not concurrently with their
// Pull/Push/Load (the trainer calls it between steps).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rectrain/base/result.h"
#include "rectrain/serve/export.h"

namespace rectrain::serve {

struct SnapshotTable {
  std::string name;
  int dim = 0;
  std::vector<uint64_t> ids;      // the rows of the snapshot, any order, each id once
  std::vector<uint32_t> updates;  // their update counts (a publish keeps rows updated >= min_count)
  std::vector<float> rows;        // ids.size() × dim fp32 weights, row-major
  // Incremental: ids whose rows were removed since the previous snapshot and that have none now
  // (any order). Complete: empty (an id without a row is one the snapshot lacks).
  std::vector<uint64_t> removed;
  std::vector<float> oov;  // dim: the row unknown ids read
};

struct DenseSnapshot {
  std::string name;  // optim::ParamRef::name
  std::vector<float> values;
};

struct ModelSnapshot {
  bool complete = true;
  Manifest description;  // as ModelSource::description
  std::string config_yaml;
  std::vector<DenseSnapshot> dense;  // Model::Params() order
  std::vector<SnapshotTable> tables;  // model order
};

// Copies `source`: every row when `complete`, else the rows and removed ids of each table's
// ChangeLog::kPublish record (which must be tracked: FailedPrecondition otherwise). It does not
// mark the record (the caller calls MarkSaved(ChangeLog::kPublish) once the snapshot is taken).
Result<ModelSnapshot> TakeSnapshot(const ModelSource& source, bool complete);

// One table's part of TakeSnapshot, appended to *out (name, dim and OOV row set).
Status AppendTableSnapshot(const embedding::EmbeddingTable& table, bool complete, SnapshotTable* out);

// InvalidArgument naming the table when its ids, updates and rows disagree in size (a snapshot
// put together from several ranks' parts goes through this before it is written).
Status CheckSnapshot(const ModelSnapshot& snapshot);

// The dense parameters as checkpoint::WriteDenseFile takes them (views of snapshot.dense, which
// must outlive them; the writer only reads them).
std::vector<optim::ParamRef> DenseParamRefs(const ModelSnapshot& snapshot);

// Writes a complete snapshot as a full export (as ExportModel). InvalidArgument when it is not
// complete; otherwise ExportModel's errors.
Result<ExportReport> ExportSnapshot(const ModelSnapshot& snapshot, const ExportOptions& options);

}  // namespace rectrain::serve
