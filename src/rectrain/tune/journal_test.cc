#include "rectrain/tune/journal.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "rectrain/tune/launcher.h"

namespace rectrain::tune {
namespace {

std::string Fresh(const std::string& name) {
  const std::string p = testing::TempDir() + "/" + name;
  std::filesystem::remove(p);
  return p;
}

TEST(Journal, AppendsAndReplaysInOrder) {
  const std::string path = Fresh("j1.jsonl");
  {
    auto j = Journal::Open(path, nullptr);
    ASSERT_TRUE(j.ok());
    ASSERT_TRUE((*j)->Append({{"ev", "a"}, {"n", 1}}).ok());
    ASSERT_TRUE((*j)->Append({{"ev", "b"}, {"n", 2}}).ok());
  }
  std::vector<nlohmann::json> events;
  auto j = Journal::Open(path, &events);
  ASSERT_TRUE(j.ok());
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[1]["n"], 2);
  EXPECT_TRUE(events[0].contains("time"));
}

TEST(Journal, DropsATornLastLineAndContinuesOnANewLine) {
  const std::string path = Fresh("j2.jsonl");
  std::ofstream(path) << "{\"ev\":\"a\"}\n{\"ev\":\"b\",\"tor";
  std::vector<nlohmann::json> events;
  {
    auto j = Journal::Open(path, &events);
    ASSERT_TRUE(j.ok());
    ASSERT_EQ(events.size(), 1u);
    ASSERT_TRUE((*j)->Append({{"ev", "c"}}).ok());
  }
  events.clear();
  ASSERT_TRUE(Journal::Open(path, &events).ok());
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[1]["ev"], "c");
}

TEST(Journal, ADamagedLineInsideIsDataLoss) {
  const std::string path = Fresh("j3.jsonl");
  std::ofstream(path) << "{\"ev\":\"a\"}\nnot json\n{\"ev\":\"b\"}\n";
  auto j = Journal::Open(path, nullptr);
  ASSERT_FALSE(j.ok());
  EXPECT_EQ(j.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(j.status().message().find("line 2"), std::string::npos);
}

// The exit of `p`, polled every 10 ms for at most 10 s (nullopt: it did not end in time).
std::optional<ExitInfo> WaitExit(TrialProcess& p) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  std::optional<ExitInfo> e;
  while (!(e = p.Poll()) && std::chrono::steady_clock::now() < deadline) usleep(10000);
  return e;
}

TEST(Launcher, LocalProcessExitAndSignals) {
  const std::string log = Fresh("launch.log");
  LaunchRequest r;
  r.argv = {"/bin/sh", "-c", "echo hello; exit 3"};
  r.log_path = log;
  auto p = MakeLocalLauncher()->Start(r);
  ASSERT_TRUE(p.ok());
  std::optional<ExitInfo> e = WaitExit(**p);
  ASSERT_TRUE(e.has_value()) << "the process did not end within 10 s";
  EXPECT_EQ(e->Describe(), "exit code 3");
  std::ifstream in(log);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "hello");

  r.argv = {"/bin/sleep", "30"};
  auto q = MakeLocalLauncher()->Start(r);
  ASSERT_TRUE(q.ok());
  EXPECT_TRUE(ProcessAlive((*q)->pid()));
  (*q)->Signal(SIGTERM);
  e = WaitExit(**q);
  ASSERT_TRUE(e.has_value()) << "SIGTERM did not end the process within 10 s";
  EXPECT_EQ(e->Describe(), "killed by SIGTERM");
}

TEST(Launcher, TemplateSubstitutesPlaceholdersWithQuoting) {
  auto t = MakeTemplateLauncher("env SLOT={slot} HOST={host} T={threads} {cmd}", {"n1", "n2"});
  LaunchRequest r;
  r.argv = {"/bin/echo", "a b", "it's"};
  r.slot = 1;
  r.threads = 2;
  EXPECT_EQ(t->Describe(r), "env SLOT=1 HOST=n2 T=2 /bin/echo 'a b' 'it'\\''s'");
  r.log_path = Fresh("template.log");
  auto p = t->Start(r);
  ASSERT_TRUE(p.ok());
  std::optional<ExitInfo> e = WaitExit(**p);
  ASSERT_TRUE(e.has_value()) << "the process did not end within 10 s";
  EXPECT_EQ(e->exit_code, 0);
  std::ifstream in(r.log_path);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "a b it's");
}

}  // namespace
}  // namespace rectrain::tune
