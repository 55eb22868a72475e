#include "rectrain/io/s3/s3_config.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>

#include <gtest/gtest.h>

namespace rectrain::io::s3 {
namespace {

class S3ConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) / ("s3_config_test_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_ / ".aws");
    env_["HOME"] = dir_.string();
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void File(const std::string& name, const std::string& text) { std::ofstream(dir_ / ".aws" / name) << text; }
  Result<S3Config> Resolve() {
    return ResolveS3Config([this](const std::string& n) -> std::optional<std::string> {
      auto it = env_.find(n);
      if (it == env_.end()) return std::nullopt;
      return it->second;
    });
  }
  std::filesystem::path dir_;
  std::map<std::string, std::string> env_;
};

TEST_F(S3ConfigTest, DefaultsToAwsAndAnonymous) {
  auto c = Resolve();
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->endpoint, "https://s3.us-east-1.amazonaws.com");
  EXPECT_TRUE(c->credentials.anonymous());
  EXPECT_FALSE(c->UsePathStyle("bucket"));
  EXPECT_TRUE(c->UsePathStyle("my.dotted.bucket"));
  EXPECT_EQ(c->max_attempts, 10);
}

TEST_F(S3ConfigTest, EnvironmentWinsOverProfilesAndNeverShowsSecrets) {
  File("credentials", "[default]\naws_access_key_id = FILEKEY\naws_secret_access_key = FILESECRET\n");
  env_["AWS_ACCESS_KEY_ID"] = "ENVKEY";
  env_["AWS_SECRET_ACCESS_KEY"] = "ENVSECRET";
  env_["AWS_SESSION_TOKEN"] = "TOKEN";
  env_["AWS_REGION"] = "eu-west-3";
  env_["AWS_ENDPOINT_URL"] = "http://127.0.0.1:9000/";
  auto c = Resolve();
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->credentials.access_key_id, "ENVKEY");
  EXPECT_EQ(c->credentials.session_token, "TOKEN");
  EXPECT_EQ(c->region, "eu-west-3");
  EXPECT_EQ(c->endpoint, "http://127.0.0.1:9000");
  EXPECT_TRUE(c->UsePathStyle("bucket"));  // an IP endpoint
  const std::string d = c->Describe();
  EXPECT_EQ(d.find("ENVSECRET"), std::string::npos);
  EXPECT_EQ(d.find("TOKEN"), std::string::npos);
  EXPECT_NE(d.find("environment"), std::string::npos);
}

TEST_F(S3ConfigTest, NamedProfileFromBothFilesWithNestedS3Section) {
  File("credentials", "# comment\n[default]\naws_access_key_id = D\naws_secret_access_key = DS\n"
                      "[team]\naws_access_key_id = T\naws_secret_access_key = TS\n");
  File("config", "[profile team]\nregion = ap-south-1\ns3 =\n  endpoint_url = https://minio.example:9000\n"
                 "  addressing_style = virtual\nmax_attempts = 4\n");
  env_["AWS_PROFILE"] = "team";
  auto c = Resolve();
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->credentials.access_key_id, "T");
  EXPECT_EQ(c->region, "ap-south-1");
  EXPECT_EQ(c->endpoint, "https://minio.example:9000");
  EXPECT_EQ(c->addressing, AddressingStyle::kVirtual);
  EXPECT_FALSE(c->UsePathStyle("b"));
  EXPECT_EQ(c->max_attempts, 4);
  EXPECT_NE(c->credentials_source.find("profile team"), std::string::npos);
}

TEST_F(S3ConfigTest, LocalhostIsPathStyleAndBadValuesAreNamed) {
  env_["AWS_ENDPOINT_URL_S3"] = "http://localhost:4566";
  auto c = Resolve();
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->UsePathStyle("b"));
  env_["AWS_ENDPOINT_URL_S3"] = "localhost:4566";
  EXPECT_NE(Resolve().status().message().find("must start with http:// or https://"), std::string::npos);
  env_["AWS_ENDPOINT_URL_S3"] = "http://user:secret@localhost:4566";
  EXPECT_NE(Resolve().status().message().find("must not hold credentials"), std::string::npos);
  EXPECT_EQ(Resolve().status().message().find("secret"), std::string::npos);
  env_["AWS_ENDPOINT_URL_S3"] = "http://[::1]:4566";
  ASSERT_TRUE(Resolve().ok());
  EXPECT_TRUE(Resolve()->UsePathStyle("b"));
  env_["AWS_MAX_ATTEMPTS"] = "three";
  EXPECT_NE(Resolve().status().message().find("AWS_MAX_ATTEMPTS"), std::string::npos);
  env_.erase("AWS_MAX_ATTEMPTS");
  env_["AWS_ACCESS_KEY_ID"] = "K";
  EXPECT_NE(Resolve().status().message().find("AWS_SECRET_ACCESS_KEY"), std::string::npos);
  env_.erase("AWS_ACCESS_KEY_ID");
  File("config", "[default\nregion = x\n");
  EXPECT_NE(Resolve().status().message().find("config:1"), std::string::npos);
}

}  // namespace
}  // namespace rectrain::io::s3
