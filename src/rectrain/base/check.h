// rectrain/base/check.h: invariant checks for programmer errors only.
// RECTRAIN_CHECK is always on and aborts with file:line and the streamed message.
// RECTRAIN_DCHECK is on in debug/sanitizer builds. Never CHECK a value that came from a file,
// flag, socket or user: return a Status instead (see STYLE.md §4).
#pragma once

#include <sstream>

namespace rectrain::check_internal {
class CheckFailure {
 public:
  CheckFailure(const char* file, int line, const char* condition);
  [[noreturn]] ~CheckFailure();
  template <typename T>
  CheckFailure& operator<<(const T& v) {
    stream_ << v;
    return *this;
  }

 private:
  std::ostringstream stream_;
};
// Makes the ternary in RECTRAIN_CHECK have type void on both branches.
struct Voidify {
  void operator&(const CheckFailure&) {}
};
}  // namespace rectrain::check_internal

#define RECTRAIN_CHECK(cond)                                  \
  (cond) ? (void)0                                            \
         : ::rectrain::check_internal::Voidify() &            \
               ::rectrain::check_internal::CheckFailure(__FILE__, __LINE__, #cond)

#ifdef NDEBUG
#define RECTRAIN_DCHECK(cond) \
  while (false) RECTRAIN_CHECK(cond)
#else
#define RECTRAIN_DCHECK(cond) RECTRAIN_CHECK(cond)
#endif
