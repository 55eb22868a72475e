#include "rectrain/io/s3/s3_client.h"

#include <gtest/gtest.h>

namespace rectrain::io::s3 {
namespace {

// Expected values from Python's hashlib: md5(bytes.fromhex(md5(b"a") + md5(b"b"))) + "-2".
TEST(MultipartEtag, IsTheMd5OfThePartsMd5sAndTheirCount) {
  EXPECT_EQ(MultipartEtag({"0cc175b9c0f1b6a831c399e269772661", "\"92eb5ffee6ae2fec3ad71c777531578f\""}),
            "96e024ba2074fe77e8e965ba43a704be-2");
  EXPECT_EQ(MultipartEtag({"not-an-md5"}), "");
  EXPECT_EQ(MultipartEtag({"0cc175b9c0f1b6a831c399e26977266z"}), "");
}

}  // namespace
}  // namespace rectrain::io::s3
