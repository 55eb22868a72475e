// rectrain/tune/journal.h: the study's append-only event log, STUDY_DIR/journal.jsonl: one JSON
// object per line (docs/formats/tune-journal.md), written with O_APPEND and flushed to disk
// (fdatasync) before Append returns, so a tuner killed at any moment (kill -9 included) loses
// no event it acted on. `rectrain tune --resume` replays it. A torn last line (the process died
// mid-write) is dropped on reading; a bad line elsewhere is DataLoss naming its number.
// Thread safety: one writer thread.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "rectrain/base/result.h"

namespace rectrain::tune {

class Journal {
 public:
  // Opens `path` for appending, creating it if absent; `*events` (may be null) gets the
  // events already there, in order.
  static Result<std::unique_ptr<Journal>> Open(const std::string& path, std::vector<nlohmann::json>* events);
  ~Journal();
  Journal(const Journal&) = delete;
  Journal& operator=(const Journal&) = delete;

  // Appends one event (an object; "time" is added when absent). Errors name the file.
  Status Append(nlohmann::json event);
  const std::string& path() const { return path_; }

 private:
  Journal(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  int fd_;
  std::string path_;
};

// Seconds since the Unix epoch (the journal's and the tracking store's clock).
double UnixNow();

}  // namespace rectrain::tune
