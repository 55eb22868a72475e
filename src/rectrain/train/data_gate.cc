#include "rectrain/train/data_gate.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <filesystem>

#include "rectrain/io/file.h"

namespace rectrain::train {
namespace {

namespace fs = std::filesystem;

std::string Rate(const data::DataProfile& p) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.4f", p.LabelRate());
  return buf;
}

std::string Indent(const std::string& json) {  // nest a 2-space JSON document one level deeper
  std::string out;
  for (size_t i = 0; i < json.size(); ++i) {
    out += json[i];
    if (json[i] == '\n' && i + 1 < json.size()) out += "  ";
  }
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);  // profile paths/messages: invalid UTF-8 is the reader's concern
    }
  }
  return out + "\"";
}

}  // namespace

Result<DataGateResult> RunDataGate(const config::TrainConfig& config, const std::string& run_dir,
                                   int num_threads) {
  DataGateResult out;
  const auto t0 = std::chrono::steady_clock::now();
  const int64_t max_rows = config.checks.max_rows;
  std::vector<std::string> train_violations, valid_violations;
  {  // *.rtc sample cache input is profiled from its decoded rows (data/profile.h)
    auto p = data::ProfileFiles(config.train_files, config.data.schema, config.data.transforms,
                                num_threads, {}, max_rows);
    if (!p.ok()) return p.status().WithContext("data check before training: data.train");
    out.train = std::move(p).value();
    train_violations = data::CheckProfile(out.train, config.checks);
  }
  if (!config.valid_files.empty()) {
    auto p = data::ProfileFiles(config.valid_files, config.data.schema, config.data.transforms,
                                num_threads, {}, max_rows);
    if (!p.ok()) return p.status().WithContext("data check before training: data.valid");
    out.valid = std::move(p).value();
    out.has_valid = true;
    valid_violations = data::CheckProfile(out.valid, config.checks);
  }
  for (const std::string& v : train_violations) out.violations.push_back("data.train: " + v);
  for (const std::string& v : valid_violations) out.violations.push_back("data.valid: " + v);
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  std::error_code ec;
  fs::create_directories(run_dir, ec);
  if (ec) return ErrnoToStatus(ec.value(), "cannot create the run directory " + run_dir);
  out.profile_path = (fs::path(run_dir) / "data_profile.json").string();
  std::string json = "{\n  \"max_rows\": " + std::to_string(max_rows) + ",\n  \"violations\": [";
  for (size_t i = 0; i < out.violations.size(); ++i) {
    json += (i ? ",\n    " : "\n    ") + JsonString(out.violations[i]);
  }
  json += out.violations.empty() ? "],\n" : "\n  ],\n";
  json += "  \"train\": " + Indent(data::FormatProfileJson(out.train, &train_violations));
  if (out.has_valid) {
    json += ",\n  \"valid\": " + Indent(data::FormatProfileJson(out.valid, &valid_violations));
  }
  json += "\n}\n";
  // All or nothing: a full disk must not leave half a profile behind.
  RECTRAIN_RETURN_IF_ERROR(io::WriteFileAtomically(out.profile_path, json));
  return out;
}

Status DataGateError(const DataGateResult& r) {
  if (r.violations.empty()) return OkStatus();
  std::string msg = "data check before training failed: " + std::to_string(r.violations.size()) +
                    (r.violations.size() == 1 ? " violation" : " violations") + " (profile: " +
                    r.profile_path +
                    "; thresholds: checks.* in docs/config.md; skip with --skip-data-check or "
                    "checks.before_train: false)";
  for (const std::string& v : r.violations) msg += "\n  " + v;
  return FailedPreconditionError(msg);
}

std::string DataGateSummary(const DataGateResult& r) {
  char secs[32];
  std::snprintf(secs, sizeof(secs), "%.1f", r.seconds);
  std::string s = "data check passed: data.train " + std::to_string(r.train.rows) + " rows" +
                  (r.train.truncated ? " profiled" : "") + " (label rate " + Rate(r.train) + ")";
  if (r.has_valid) {
    s += ", data.valid " + std::to_string(r.valid.rows) + " rows" +
         (r.valid.truncated ? " profiled" : "") + " (label rate " + Rate(r.valid) + ")";
  }
  return s + " in " + secs + " s -> " + r.profile_path;
}

}  // namespace rectrain::train
