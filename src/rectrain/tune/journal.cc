#include "rectrain/tune/journal.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>

namespace rectrain::tune {

double UnixNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

Result<std::unique_ptr<Journal>> Journal::Open(const std::string& path, std::vector<nlohmann::json>* events) {
  {
    std::ifstream in(path, std::ios::binary);
    if (in) {
      std::stringstream ss;
      ss << in.rdbuf();
      const std::string text = ss.str();
      size_t pos = 0;
      int64_t line_no = 0;
      while (pos < text.size()) {
        const size_t nl = text.find('\n', pos);
        ++line_no;
        if (nl == std::string::npos) break;  // a torn last line: the writer died mid-write
        const std::string line = text.substr(pos, nl - pos);
        pos = nl + 1;
        if (line.empty()) continue;
        nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
        if (!j.is_object()) {
          return DataLossError("study journal " + path + " line " + std::to_string(line_no) +
                               " is not a JSON object; the study directory is damaged");
        }
        if (events != nullptr) events->push_back(std::move(j));
      }
      // Cut a torn tail so the next event starts on its own line.
      if (pos < text.size() && truncate(path.c_str(), static_cast<off_t>(pos)) != 0) {
        return InternalError("cannot truncate the torn last line of " + path + ": " + std::strerror(errno));
      }
    }
  }
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return PermissionDeniedError("cannot open the study journal " + path + ": " + std::strerror(errno));
  return std::unique_ptr<Journal>(new Journal(fd, path));
}

Journal::~Journal() { ::close(fd_); }

Status Journal::Append(nlohmann::json event) {
  if (!event.contains("time")) event["time"] = UnixNow();
  const std::string line = event.dump() + "\n";
  size_t done = 0;
  while (done < line.size()) {
    const ssize_t n = ::write(fd_, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return InternalError("cannot append to the study journal " + path_ + ": " + std::strerror(errno));
    done += static_cast<size_t>(n);
  }
  if (::fdatasync(fd_) != 0) return InternalError("cannot sync the study journal " + path_ + ": " + std::strerror(errno));
  return OkStatus();
}

}  // namespace rectrain::tune
