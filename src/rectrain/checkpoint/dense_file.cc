// rectrain/checkpoint/dense_file.cc: see dense_file.h.
#include "rectrain/checkpoint/dense_file.h"

#include <cstring>
#include <string_view>

#include "rectrain/base/random.h"
#include "rectrain/io/file.h"

namespace rectrain::checkpoint {
namespace {

constexpr char kDenseMagic[8] = {'R', 'T', 'D', 'E', 'N', 'S', 'E', '1'};
constexpr uint32_t kDenseVersion = 1;

template <typename T>
void Put(std::string* out, T v) {
  out->append(reinterpret_cast<const char*>(&v), sizeof(T));
}

class Cursor {
 public:
  Cursor(std::string_view data, std::string path) : data_(data), path_(std::move(path)) {}
  template <typename T>
  Status Get(T* v) {
    if (pos_ + sizeof(T) > data_.size()) return Truncated();
    std::memcpy(v, data_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return OkStatus();
  }
  Status Bytes(size_t n, std::string_view* out) {
    if (n > data_.size() - pos_) return Truncated();
    *out = data_.substr(pos_, n);
    pos_ += n;
    return OkStatus();
  }
  size_t pos() const { return pos_; }

 private:
  Status Truncated() const {
    return DataLossError(path_ + ": truncated at byte " + std::to_string(pos_));
  }
  std::string_view data_;
  std::string path_;
  size_t pos_ = 0;
};

}  // namespace

Status WriteDenseFile(const std::string& path, std::span<const optim::ParamRef> params,
                      std::span<const std::span<float>> optimizer_state) {
  std::string out;
  size_t total = 64;
  for (const auto& p : params) total += 16 + p.name.size() + p.value.size_bytes();
  for (const auto& s : optimizer_state) total += 8 + s.size_bytes();
  out.reserve(total);
  out.append(kDenseMagic, sizeof(kDenseMagic));
  Put<uint32_t>(&out, kDenseVersion);
  Put<uint32_t>(&out, static_cast<uint32_t>(params.size()));
  for (const auto& p : params) {
    Put<uint32_t>(&out, static_cast<uint32_t>(p.name.size()));
    out.append(p.name);
    Put<uint64_t>(&out, p.value.size());
    out.append(reinterpret_cast<const char*>(p.value.data()), p.value.size_bytes());
  }
  Put<uint32_t>(&out, static_cast<uint32_t>(optimizer_state.size()));
  for (const auto& s : optimizer_state) {
    Put<uint64_t>(&out, s.size());
    out.append(reinterpret_cast<const char*>(s.data()), s.size_bytes());
  }
  Put<uint64_t>(&out, HashBytes(out, 0));
  return io::WriteFileAtomically(path, out);
}

Status ReadDenseFile(const std::string& path, std::span<const optim::ParamRef> params,
                     std::span<const std::span<float>> optimizer_state) {
  RECTRAIN_ASSIGN_OR_RETURN(std::string data, io::ReadFileToString(path));
  if (data.size() < sizeof(kDenseMagic) + 8 + 8 ||
      std::memcmp(data.data(), kDenseMagic, sizeof(kDenseMagic)) != 0) {
    return DataLossError(path + ": not a rectrain dense parameter file (bad magic or too short)");
  }
  uint64_t stored = 0;
  std::memcpy(&stored, data.data() + data.size() - 8, 8);
  std::string_view body(data.data(), data.size() - 8);
  if (HashBytes(body, 0) != stored) {
    return DataLossError(path + ": checksum mismatch (the file is corrupt or was truncated)");
  }
  Cursor cur(body, path);
  std::string_view magic;
  RECTRAIN_RETURN_IF_ERROR(cur.Bytes(sizeof(kDenseMagic), &magic));
  uint32_t version = 0, num_params = 0;
  RECTRAIN_RETURN_IF_ERROR(cur.Get(&version));
  if (version != kDenseVersion) {
    return InvalidArgumentError(path + ": dense file version " + std::to_string(version) +
                                " is not supported (this build reads version " +
                                std::to_string(kDenseVersion) + ")");
  }
  RECTRAIN_RETURN_IF_ERROR(cur.Get(&num_params));
  if (num_params != params.size()) {
    return InvalidArgumentError(path + ": has " + std::to_string(num_params) +
                                " dense parameters but the model has " +
                                std::to_string(params.size()) +
                                " (was it written with a different model config?)");
  }
  for (size_t i = 0; i < params.size(); ++i) {
    uint32_t name_len = 0;
    RECTRAIN_RETURN_IF_ERROR(cur.Get(&name_len));
    std::string_view name;
    RECTRAIN_RETURN_IF_ERROR(cur.Bytes(name_len, &name));
    uint64_t count = 0;
    RECTRAIN_RETURN_IF_ERROR(cur.Get(&count));
    if (name != params[i].name || count != params[i].value.size()) {
      return InvalidArgumentError(path + ": parameter " + std::to_string(i) + " is '" +
                                  std::string(name) + "' with " + std::to_string(count) +
                                  " values but the model has '" + params[i].name + "' with " +
                                  std::to_string(params[i].value.size()) +
                                  " (was it written with a different model config?)");
    }
    std::string_view bytes;
    RECTRAIN_RETURN_IF_ERROR(cur.Bytes(count * sizeof(float), &bytes));
    std::memcpy(params[i].value.data(), bytes.data(), bytes.size());
  }
  uint32_t num_state = 0;
  RECTRAIN_RETURN_IF_ERROR(cur.Get(&num_state));
  if (optimizer_state.empty()) return OkStatus();
  if (num_state != optimizer_state.size()) {
    return InvalidArgumentError(path + ": has " + std::to_string(num_state) +
                                " optimizer state tensors but the optimizer has " +
                                std::to_string(optimizer_state.size()) +
                                " (was optimizer.type changed?)");
  }
  for (size_t i = 0; i < optimizer_state.size(); ++i) {
    uint64_t count = 0;
    RECTRAIN_RETURN_IF_ERROR(cur.Get(&count));
    if (count != optimizer_state[i].size()) {
      return InvalidArgumentError(path + ": optimizer state " + std::to_string(i) + " has " +
                                  std::to_string(count) + " values, expected " +
                                  std::to_string(optimizer_state[i].size()));
    }
    std::string_view bytes;
    RECTRAIN_RETURN_IF_ERROR(cur.Bytes(count * sizeof(float), &bytes));
    std::memcpy(optimizer_state[i].data(), bytes.data(), bytes.size());
  }
  return OkStatus();
}

}  // namespace rectrain::checkpoint
