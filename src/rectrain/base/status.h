// rectrain/base/status.h: the error type every library function that can fail on input returns.
// A Status is either OK or a canonical code plus a message. Context is prepended on the way up
// with RECTRAIN_RETURN_IF_ERROR(expr) << "while ..."; no exception crosses a module boundary.
// Thread safety: a Status is a value; distinct objects may be used concurrently.
//
// Example:
//   Status ReadHeader(const std::string& path) {
//     if (path.empty()) return InvalidArgumentError("empty path; pass --data FILE");
//     RECTRAIN_RETURN_IF_ERROR(Open(path)) << "while reading header of " << path;
//     return OkStatus();
//   }
#pragma once

#include <memory>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>

namespace rectrain {

enum class StatusCode : int {
  kOk = 0,
  kCancelled = 1,
  kUnknown = 2,
  kInvalidArgument = 3,
  kDeadlineExceeded = 4,
  kNotFound = 5,
  kAlreadyExists = 6,
  kPermissionDenied = 7,
  kResourceExhausted = 8,
  kFailedPrecondition = 9,
  kAborted = 10,
  kOutOfRange = 11,
  kUnimplemented = 12,
  kInternal = 13,
  kUnavailable = 14,
  kDataLoss = 15,
};

std::string_view StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(StatusCode code, std::string message);

  bool ok() const { return state_ == nullptr; }
  StatusCode code() const { return state_ ? state_->code : StatusCode::kOk; }
  // The message without the code name; empty for OK.
  const std::string& message() const;
  // "INVALID_ARGUMENT: message" or "OK".
  std::string ToString() const;

  // Returns a copy whose message is `context: message` (context first, as it reads top-down).
  Status WithContext(std::string_view context) const;

  // Explicitly ignores an error (documents intent at the call site).
  void IgnoreError() const {}

  friend bool operator==(const Status& a, const Status& b) {
    return a.code() == b.code() && a.message() == b.message();
  }

 private:
  struct State {
    StatusCode code;
    std::string message;
  };
  std::shared_ptr<const State> state_;  // null == OK; shared so copies are cheap
};

inline Status OkStatus() { return Status(); }
Status InvalidArgumentError(std::string message);
Status NotFoundError(std::string message);
Status AlreadyExistsError(std::string message);
Status FailedPreconditionError(std::string message);
Status OutOfRangeError(std::string message);
Status ResourceExhaustedError(std::string message);
Status UnimplementedError(std::string message);
Status InternalError(std::string message);
Status UnavailableError(std::string message);
Status DataLossError(std::string message);
Status CancelledError(std::string message);
Status DeadlineExceededError(std::string message);
Status PermissionDeniedError(std::string message);
// Maps errno to the closest canonical code; message gets strerror appended. A full file system
// (ENOSPC, EDQUOT) is ResourceExhausted and its message also says what to do about it.
Status ErrnoToStatus(int errno_value, std::string message);

std::ostream& operator<<(std::ostream& os, const Status& s);

namespace status_internal {
// Collects streamed context and converts to the annotated Status on return.
class StatusBuilder {
 public:
  explicit StatusBuilder(Status s) : status_(std::move(s)) {}
  template <typename T>
  StatusBuilder& operator<<(const T& v) {
    context_ << v;
    return *this;
  }
  operator Status() const {  // NOLINT(google-explicit-constructor)
    std::string ctx = context_.str();
    return ctx.empty() ? status_ : status_.WithContext(ctx);
  }

 private:
  Status status_;
  std::ostringstream context_;
};
}  // namespace status_internal

}  // namespace rectrain

#define RECTRAIN_STATUS_CONCAT_INNER(a, b) a##b
#define RECTRAIN_STATUS_CONCAT(a, b) RECTRAIN_STATUS_CONCAT_INNER(a, b)

// Returns early with the error of `expr` (a Status); `<< "context"` may follow.
#define RECTRAIN_RETURN_IF_ERROR(expr)                                        \
  if (::rectrain::Status _rectrain_st = (expr); _rectrain_st.ok()) {          \
  } else                                                                      \
    return ::rectrain::status_internal::StatusBuilder(std::move(_rectrain_st))
