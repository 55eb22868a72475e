#include "rectrain/data/tsv_export.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <memory>
#include <vector>

#include "rectrain/io/file.h"

namespace rectrain::data {
namespace {

void AppendHex(uint64_t v, std::string* out) {
  static constexpr char kDigits[] = "0123456789abcdef";
  char buf[16];
  for (int i = 15; i >= 0; --i) {
    buf[i] = kDigits[v & 15];
    v >>= 4;
  }
  out->append(buf, 16);
}

// A double-quoted YAML (JSON) string.
std::string Quote(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  return out + "\"";
}

std::string QuotedList(const std::vector<std::string>& names) {
  std::string out = "[";
  for (size_t i = 0; i < names.size(); ++i) out += (i ? ", " : "") + Quote(names[i]);
  return out + "]";
}

Status CheckName(const std::string& name, const char* kind) {
  if (name.empty() || name.find_first_of("\t\n\r") != std::string::npos || name.front() == '"') {
    return InvalidArgumentError(std::string(kind) + " feature name \"" + name +
                                "\" cannot be a TSV header field (empty, tab, newline or a leading "
                                "'\"'); rename it in data.dense / data.sparse");
  }
  return OkStatus();
}

std::string FreeName(std::string name, const std::vector<std::string>& taken) {
  while (std::find(taken.begin(), taken.end(), name) != taken.end()) name += "_";
  return name;
}

// Appends row r of b as a TSV line: the label, the dense values (finite; the shortest text that
// reads back), the sparse ids in hex (comma-separated when multi-valued), the group key.
Status AppendRow(const Batch& b, int64_t r, int64_t row_number, const std::vector<std::string>& dense, bool group,
                 std::string& buf) {
  buf.push_back(b.labels[r] != 0.0f ? '1' : '0');
  for (int j = 0; j < b.num_dense; ++j) {
    const float x = b.dense[r * b.num_dense + j];
    if (!std::isfinite(x)) {
      return InvalidArgumentError("row " + std::to_string(row_number) + ": dense feature " + dense[j] + " is " +
                                  std::to_string(x) + " after its transforms; a TSV can only hold finite values");
    }
    char num[32];
    const auto res = std::to_chars(num, num + sizeof(num), x);
    buf.push_back('\t');
    buf.append(num, res.ptr);
  }
  for (int j = 0; j < b.num_sparse(); ++j) {
    const SparseColumn& c = b.sparse[j];
    buf.push_back('\t');
    for (int64_t k = c.RowBegin(r); k < c.RowEnd(r); ++k) {
      if (k > c.RowBegin(r)) buf.push_back(',');
      AppendHex(c.ids[k], &buf);
    }
  }
  if (group) {
    buf.push_back('\t');
    AppendHex(b.group_keys[r], &buf);
  }
  buf.push_back('\n');
  return OkStatus();
}

// The config that reads the written file back as the same rows (read_back and its YAML).
void DescribeReadBack(const std::string& out_path, const std::vector<std::string>& dense,
                      const std::vector<std::string>& sparse, const std::vector<bool>& multi, const std::string& label,
                      const std::string& group, TsvExportInfo& info) {
  DataConfig& d = info.read_back;
  d.files = {out_path};
  d.schema.format = DataFormat::kTsv;
  d.schema.header = true;
  d.schema.delimiter = '\t';
  d.schema.label = label;
  d.schema.dense = dense;
  d.schema.sparse = sparse;
  if (info.has_group) d.schema.group_key = group;
  std::string transforms;
  auto add = [&](const std::string& name, const std::string& spec) {
    d.transforms[name] = spec;
    transforms += "    " + Quote(name) + ": " + Quote(spec) + "\n";
  };
  for (const std::string& n : dense) add(n, "fill(0)");
  for (size_t j = 0; j < sparse.size(); ++j) add(sparse[j], multi[j] ? "split(',') | hex_id" : "hex_id");
  if (info.has_group) add(group, "hex_id");
  info.yaml = "data:\n  train: " + Quote(out_path) + "\n  format: tsv\n  header: true\n  label: " + Quote(label) +
              "\n  dense: " + QuotedList(dense) + "\n  sparse: " + QuotedList(sparse) + "\n";
  if (info.has_group) info.yaml += "  group_key: " + Quote(group) + "\n";
  info.yaml += "features:\n  transforms:\n" + transforms;
}

}  // namespace

Result<TsvExportInfo> ExportTsv(BatchReader* reader, const std::string& out_path) {
  const std::vector<std::string> dense = reader->dense_names();
  const std::vector<std::string> sparse = reader->sparse_names();
  for (const std::string& n : dense) RECTRAIN_RETURN_IF_ERROR(CheckName(n, "dense"));
  for (const std::string& n : sparse) RECTRAIN_RETURN_IF_ERROR(CheckName(n, "sparse"));
  std::vector<std::string> taken = dense;
  taken.insert(taken.end(), sparse.begin(), sparse.end());
  const std::string label = FreeName("label", taken);
  taken.push_back(label);
  const std::string group = FreeName("group", taken);

  TsvExportInfo info;
  info.path = out_path;
  RECTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<io::AtomicFileWriter> file, io::AtomicFileWriter::Create(out_path));
  std::vector<bool> multi(sparse.size(), false);
  std::string buf;
  bool first = true;
  while (true) {
    RECTRAIN_ASSIGN_OR_RETURN(std::optional<Batch> next, reader->Next());
    if (!next) break;
    const Batch& b = *next;
    if (first) {  // the header, and which sparse columns hold several ids
      first = false;
      info.has_group = !b.group_keys.empty();
      buf = label;
      for (const std::string& n : dense) buf += "\t" + n;
      for (const std::string& n : sparse) buf += "\t" + n;
      if (info.has_group) buf += "\t" + group;
      buf += "\n";
      for (size_t j = 0; j < sparse.size() && j < b.sparse.size(); ++j) {
        multi[j] = !b.sparse[j].single_valued();
        info.multi_valued += multi[j] ? 1 : 0;
      }
    }
    for (int64_t r = 0; r < b.size; ++r) {
      RECTRAIN_RETURN_IF_ERROR(AppendRow(b, r, info.rows + r + 1, dense, info.has_group, buf));
    }
    info.rows += b.size;
    reader->Recycle(std::move(*next));
    if (buf.size() >= (1 << 20)) {
      RECTRAIN_RETURN_IF_ERROR(file->Append(buf));
      buf.clear();
    }
  }
  if (info.rows == 0) {
    return InvalidArgumentError("the input has no rows (after filters and downsampling); nothing to write to " +
                                out_path);
  }
  RECTRAIN_RETURN_IF_ERROR(file->Append(buf));
  info.bytes = file->bytes_written();
  RECTRAIN_RETURN_IF_ERROR(file->Commit());
  DescribeReadBack(out_path, dense, sparse, multi, label, group, info);
  return info;
}

}  // namespace rectrain::data
