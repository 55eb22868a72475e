#include "rectrain/base/status.h"

#include <gtest/gtest.h>

#include "rectrain/base/result.h"

namespace rectrain {
namespace {

Status FailWith(StatusCode code) { return Status(code, "inner"); }

Status Outer() {
  RECTRAIN_RETURN_IF_ERROR(FailWith(StatusCode::kDataLoss)) << "while reading " << "x.tsv";
  return OkStatus();
}

Result<int> Half(int v) {
  if (v % 2) return InvalidArgumentError("odd value " + std::to_string(v));
  return v / 2;
}

Result<int> Quarter(int v) {
  RECTRAIN_ASSIGN_OR_RETURN(int h, Half(v));
  RECTRAIN_ASSIGN_OR_RETURN(int q, Half(h));
  return q;
}

TEST(StatusTest, OkByDefault) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.ToString(), "OK");
  EXPECT_EQ(s.code(), StatusCode::kOk);
}

TEST(StatusTest, ContextIsPrependedAndCodeKept) {
  Status s = Outer();
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_EQ(s.message(), "while reading x.tsv: inner");
  EXPECT_EQ(s.ToString(), "DATA_LOSS: while reading x.tsv: inner");
}

TEST(StatusTest, ErrnoMapping) {
  EXPECT_EQ(ErrnoToStatus(ENOENT, "open a").code(), StatusCode::kNotFound);
  EXPECT_NE(ErrnoToStatus(ENOENT, "open a").message().find("open a: "), std::string::npos);
}

TEST(ResultTest, ValueAndErrorPropagate) {
  Result<int> ok = Quarter(8);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, 2);
  Result<int> bad = Quarter(6);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "odd value 3");
}

TEST(ResultDeathTest, ValueOfErrorAborts) {
  Result<int> bad = InvalidArgumentError("nope");
  EXPECT_DEATH((void)bad.value(), "nope");
}

}  // namespace
}  // namespace rectrain
