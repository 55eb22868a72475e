// rectrain/base/result.h: Result<T> holds either a T or a non-OK Status (mirrors absl::StatusOr,
// so a later move to std::expected is mechanical).
// Thread safety: a value type.
//
// Example:
//   Result<int> ParseCount(std::string_view s);
//   RECTRAIN_ASSIGN_OR_RETURN(int n, ParseCount(text));
#pragma once

#include <optional>
#include <type_traits>
#include <utility>

#include "rectrain/base/check.h"
#include "rectrain/base/status.h"

namespace rectrain {

template <typename T>
class [[nodiscard]] Result {
 public:
  // Implicit from a value or from an error Status (which must not be OK).
  Result(const T& value) : value_(value) {}            // NOLINT
  Result(T&& value) : value_(std::move(value)) {}      // NOLINT
  Result(Status status) : status_(std::move(status)) {  // NOLINT
    RECTRAIN_CHECK(!status_.ok()) << "Result constructed from an OK Status without a value";
  }
  template <typename U>
    requires(std::is_constructible_v<T, U&&> && !std::is_same_v<std::decay_t<U>, Status> &&
             !std::is_same_v<std::decay_t<U>, Result<T>> &&
             !std::is_same_v<std::decay_t<U>, status_internal::StatusBuilder>)
  Result(U&& v) : value_(std::in_place, std::forward<U>(v)) {}  // NOLINT
  Result(const status_internal::StatusBuilder& b) : Result(Status(b)) {}  // NOLINT

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }

  // Precondition: ok(). Accessing the value of an error is a programmer error (CHECK).
  T& value() & {
    RECTRAIN_CHECK(ok()) << status_.ToString();
    return *value_;
  }
  const T& value() const& {
    RECTRAIN_CHECK(ok()) << status_.ToString();
    return *value_;
  }
  T&& value() && {
    RECTRAIN_CHECK(ok()) << status_.ToString();
    return std::move(*value_);
  }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  Status status_;  // OK iff value_ holds a value
  std::optional<T> value_;
};

}  // namespace rectrain

#define RECTRAIN_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                   \
  if (!tmp.ok()) return tmp.status();                  \
  lhs = std::move(tmp).value()

// `lhs` is a declaration or an lvalue; returns the error Status of `expr` if it failed.
#define RECTRAIN_ASSIGN_OR_RETURN(lhs, expr) \
  RECTRAIN_ASSIGN_OR_RETURN_IMPL(RECTRAIN_STATUS_CONCAT(_rectrain_r_, __LINE__), lhs, expr)
