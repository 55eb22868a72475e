#include "rectrain/cli/flags.h"

#include <gtest/gtest.h>

#include <optional>

#include "rectrain/cli/exit_codes.h"

namespace rectrain::cli {
namespace {

TEST(FlagParser, ParsesAllKinds) {
  std::string pos, s;
  int64_t n = 0;
  std::vector<std::string> r;
  bool b = false;
  FlagParser p("rectrain x", "ARG", "desc");
  p.Positional("ARG", &pos, true, "");
  p.String("name", &s, "");
  p.Int("rows", &n, "");
  p.Repeated("set", &r, "");
  p.Bool("json", &b, "");
  ASSERT_TRUE(p.Parse({"a.yaml", "--name", "v", "--rows=12", "--set", "x=1", "--set=y=2", "--json"}).ok());
  EXPECT_EQ(pos, "a.yaml");
  EXPECT_EQ(s, "v");
  EXPECT_EQ(n, 12);
  EXPECT_EQ(r, (std::vector<std::string>{"x=1", "y=2"}));
  EXPECT_TRUE(b);
}

enum class Mode : uint8_t { kFast, kSafe };
constexpr NamedEnum<Mode>::Entry kModeEntries[] = {{Mode::kFast, "fast"}, {Mode::kSafe, "safe"}};
constexpr NamedEnum<Mode> kModes(kModeEntries);

TEST(FlagParser, EnumFlagsAreParsedAtTheEdge) {
  std::optional<Mode> unset, set;
  Mode plain = Mode::kFast;
  FlagParser p("rectrain x", "", "desc");
  p.Enum("unset", &unset, kModes, "not given");
  p.Enum("set", &set, kModes, "given");
  p.Enum("plain", &plain, kModes, "a default kept unless given");
  ASSERT_TRUE(p.Parse({"--set", "safe", "--plain=safe"}).ok());
  EXPECT_FALSE(unset.has_value());
  EXPECT_EQ(set, Mode::kSafe);
  EXPECT_EQ(plain, Mode::kSafe);
  EXPECT_NE(p.Help().find("--set VALUE"), std::string::npos);
  EXPECT_NE(p.Help().find("given (fast, safe)"), std::string::npos);
  FlagParser q("rectrain x", "", "desc");
  q.Enum("set", &set, kModes, "");
  EXPECT_EQ(q.Parse({"--set", "slow"}).message(), "flag --set: \"slow\" is not one of fast, safe");
}

TEST(FlagParser, ParseOrExitSaysWhetherTheCommandGoesOn) {
  std::string s;
  auto make = [&]() {
    FlagParser p("rectrain x", "", "desc");
    p.String("name", &s, "");
    return p;
  };
  FlagParser ok = make(), help = make(), bad = make();
  EXPECT_EQ(ParseOrExit(ok, {"--name", "v"}, "x"), std::nullopt);
  EXPECT_EQ(s, "v");
  EXPECT_EQ(ParseOrExit(help, {"--help"}, "x"), 0);
  EXPECT_EQ(ParseOrExit(bad, {"--nmae", "v"}, "x"), ExitInfoFor(StatusCode::kInvalidArgument).exit_code);
}

TEST(FlagParser, Errors) {
  std::string pos, s;
  int64_t n = 0;
  auto make = [&]() {
    FlagParser p("rectrain x", "ARG", "desc");
    p.Positional("ARG", &pos, true, "");
    p.String("run-dir", &s, "");
    p.Int("rows", &n, "");
    return p;
  };
  EXPECT_EQ(make().Parse({"a", "--run-dri", "x"}).message(),
            "unknown flag --run-dri for rectrain x; did you mean --run-dir? (see rectrain x --help)");
  EXPECT_EQ(make().Parse({"a", "-x"}).message(), "unknown flag -x for rectrain x (see rectrain x --help)");
  EXPECT_EQ(make().Parse({"a", "--rows"}).message(), "flag --rows needs a value (see rectrain x --help)");
  EXPECT_EQ(make().Parse({"a", "--rows", "1k"}).message(), "flag --rows expects an integer, got \"1k\"");
  EXPECT_EQ(make().Parse({}).message(), "rectrain x needs ARG (see rectrain x --help)");
  EXPECT_EQ(make().Parse({"a", "b"}).message(), "unexpected argument \"b\" for rectrain x (see rectrain x --help)");
  EXPECT_EQ(make().Parse({"a", "--rows", "1", "--rows", "2"}).message(),
            "flag --rows given twice (see rectrain x --help)");
  FlagParser h = make();
  ASSERT_TRUE(h.Parse({"--help"}).ok());
  EXPECT_TRUE(h.help_requested());
}

TEST(ExitCodes, Table) {
  EXPECT_EQ(ExitInfoFor(StatusCode::kInvalidArgument).exit_code, 2);
  EXPECT_EQ(ExitInfoFor(StatusCode::kNotFound).exit_code, 3);
  EXPECT_EQ(ExitInfoFor(StatusCode::kDataLoss).exit_code, 4);
  EXPECT_EQ(ExitInfoFor(StatusCode::kResourceExhausted).exit_code, 5);
  EXPECT_EQ(ExitInfoFor(StatusCode::kAborted).exit_code, 7);
  EXPECT_EQ(ExitInfoFor(StatusCode::kAlreadyExists).exit_code, 8);
  EXPECT_EQ(ExitInfoFor(StatusCode::kInternal).exit_code, 1);
  EXPECT_EQ(SignalExitCode(2), 130);
  EXPECT_EQ(SignalExitCode(15), 143);
}

}  // namespace
TEST(ParseUntilTest, DurationsDatesAndTimesOfDay) {
  const auto now = std::chrono::system_clock::from_time_t(1700000000);  // 2023-11-14T22:13:20Z
  EXPECT_EQ(*ParseUntil("90s", now), now + std::chrono::seconds(90));
  EXPECT_EQ(*ParseUntil("+30m", now), now + std::chrono::minutes(30));
  EXPECT_EQ(*ParseUntil("2h", now), now + std::chrono::hours(2));
  EXPECT_EQ(*ParseUntil("2023-11-15T00:00:00Z", now), std::chrono::system_clock::from_time_t(1700006400));
  EXPECT_EQ(*ParseUntil("2023-11-15T00:00Z", now), std::chrono::system_clock::from_time_t(1700006400));
  auto later = ParseUntil("18:30", now);
  ASSERT_TRUE(later.ok());
  EXPECT_GT(*later, now);
  EXPECT_LE(*later, now + std::chrono::hours(24));
  for (const char* bad : {"", "soon", "10x", "0s", "2023-13-45T00:00", "25:99", "12:00:00"}) {
    auto r = ParseUntil(bad, now);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) EXPECT_NE(r.status().message().find("expected a duration"), std::string::npos);
  }
}

}  // namespace rectrain::cli
