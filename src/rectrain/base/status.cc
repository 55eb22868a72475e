#include "rectrain/base/status.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ostream>

#include "rectrain/base/check.h"

namespace rectrain {

std::string_view StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "OK";
    case StatusCode::kCancelled: return "CANCELLED";
    case StatusCode::kUnknown: return "UNKNOWN";
    case StatusCode::kInvalidArgument: return "INVALID_ARGUMENT";
    case StatusCode::kDeadlineExceeded: return "DEADLINE_EXCEEDED";
    case StatusCode::kNotFound: return "NOT_FOUND";
    case StatusCode::kAlreadyExists: return "ALREADY_EXISTS";
    case StatusCode::kPermissionDenied: return "PERMISSION_DENIED";
    case StatusCode::kResourceExhausted: return "RESOURCE_EXHAUSTED";
    case StatusCode::kFailedPrecondition: return "FAILED_PRECONDITION";
    case StatusCode::kAborted: return "ABORTED";
    case StatusCode::kOutOfRange: return "OUT_OF_RANGE";
    case StatusCode::kUnimplemented: return "UNIMPLEMENTED";
    case StatusCode::kInternal: return "INTERNAL";
    case StatusCode::kUnavailable: return "UNAVAILABLE";
    case StatusCode::kDataLoss: return "DATA_LOSS";
  }
  return "UNKNOWN";
}

Status::Status(StatusCode code, std::string message) {
  if (code != StatusCode::kOk) {
    state_ = std::make_shared<const State>(State{code, std::move(message)});
  }
}

const std::string& Status::message() const {
  static const std::string kEmpty;
  return state_ ? state_->message : kEmpty;
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  return std::string(StatusCodeName(code())) + ": " + message();
}

Status Status::WithContext(std::string_view context) const {
  if (ok()) return *this;
  return Status(code(), std::string(context) + ": " + message());
}

std::ostream& operator<<(std::ostream& os, const Status& s) { return os << s.ToString(); }

#define RECTRAIN_DEFINE_ERROR(Name, Code) \
  Status Name(std::string message) { return Status(StatusCode::Code, std::move(message)); }
RECTRAIN_DEFINE_ERROR(InvalidArgumentError, kInvalidArgument)
RECTRAIN_DEFINE_ERROR(NotFoundError, kNotFound)
RECTRAIN_DEFINE_ERROR(AlreadyExistsError, kAlreadyExists)
RECTRAIN_DEFINE_ERROR(FailedPreconditionError, kFailedPrecondition)
RECTRAIN_DEFINE_ERROR(OutOfRangeError, kOutOfRange)
RECTRAIN_DEFINE_ERROR(ResourceExhaustedError, kResourceExhausted)
RECTRAIN_DEFINE_ERROR(UnimplementedError, kUnimplemented)
RECTRAIN_DEFINE_ERROR(InternalError, kInternal)
RECTRAIN_DEFINE_ERROR(UnavailableError, kUnavailable)
RECTRAIN_DEFINE_ERROR(DataLossError, kDataLoss)
RECTRAIN_DEFINE_ERROR(CancelledError, kCancelled)
RECTRAIN_DEFINE_ERROR(DeadlineExceededError, kDeadlineExceeded)
RECTRAIN_DEFINE_ERROR(PermissionDeniedError, kPermissionDenied)
#undef RECTRAIN_DEFINE_ERROR

Status ErrnoToStatus(int errno_value, std::string message) {
  message += ": ";
  message += std::strerror(errno_value);
  switch (errno_value) {
    case ENOENT: return NotFoundError(std::move(message));
    case EACCES:
    case EPERM: return PermissionDeniedError(std::move(message));
    case EEXIST: return AlreadyExistsError(std::move(message));
    case ENOSPC:
    case EDQUOT:
      return ResourceExhaustedError(std::move(message) +
                                    " (the file system is full: free space on it, or write elsewhere)");
    case ENOMEM: return ResourceExhaustedError(std::move(message));
    case EINVAL:
    case EISDIR:
    case ENOTDIR: return InvalidArgumentError(std::move(message));
    case EAGAIN:
    case EINTR: return UnavailableError(std::move(message));
    default: return Status(StatusCode::kUnknown, std::move(message));
  }
}

namespace check_internal {
CheckFailure::CheckFailure(const char* file, int line, const char* condition) {
  stream_ << file << ":" << line << ": RECTRAIN_CHECK failed: " << condition << " ";
}
CheckFailure::~CheckFailure() {
  std::fprintf(stderr, "%s\n", stream_.str().c_str());
  std::fflush(stderr);
  std::abort();
}
}  // namespace check_internal

}  // namespace rectrain
