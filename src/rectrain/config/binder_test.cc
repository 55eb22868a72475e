#include "rectrain/config/binder.h"

#include <gtest/gtest.h>

namespace rectrain::config {
namespace {

ConfigBinder Parse(const std::string& text) {
  auto b = ConfigBinder::FromYamlString(text, "c.yaml");
  EXPECT_TRUE(b.ok()) << b.status();
  return std::move(b).value();
}

TEST(Binder, ReadsTypedValuesAndDefaults) {
  ConfigBinder b = Parse("a: 3\nsec:\n  f: 0.5\n  s: hello\n  l: [1, 2, 3]\n  b: true\n");
  EXPECT_EQ(b.Int("a", 0), 3);
  EXPECT_FLOAT_EQ(b.Float("sec.f", 0), 0.5f);
  EXPECT_EQ(b.String("sec.s", ""), "hello");
  EXPECT_EQ(b.IntList("sec.l", {}), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_TRUE(b.Bool("sec.b", false));
  EXPECT_EQ(b.Int("missing", 7), 7);
  EXPECT_EQ(b.StringList("sec.missing", {"x"}), (std::vector<std::string>{"x"}));
  EXPECT_TRUE(b.Finish().ok());
}

TEST(Binder, NumberListsTakeAListOrOneValueAndCheckEveryItem) {
  ConfigBinder b = Parse("w: [1, 0.5, 2e-3]\none: 3\nhigh: [1, 7]\nbad: [1, x]\nints: [2, 300]\n");
  EXPECT_EQ(b.DoubleList("w", {}), (std::vector<double>{1, 0.5, 0.002}));
  EXPECT_EQ(b.DoubleList("one", {}), (std::vector<double>{3}));
  EXPECT_EQ(b.DoubleList("missing", {0.25}), (std::vector<double>{0.25}));
  EXPECT_EQ(b.DoubleList("high", {}, Range::Closed(0, 5)), (std::vector<double>{}));  // error: the default
  b.DoubleList("bad", {});
  b.IntList("ints", {}, Range::Closed(0, 255));
  EXPECT_EQ(b.Finish().message(),
            "invalid configuration (3 errors):\n"
            "  high: item 7 is out of range [0, 5] (c.yaml:3:11)\n"
            "  bad: expected a list of numbers, got an item \"x\" (c.yaml:4:10)\n"
            "  ints: item 300 is out of range [0, 255] (c.yaml:5:11)");
}

TEST(Binder, UnknownKeyNamesFullPathAndNearest) {
  ConfigBinder b = Parse("model:\n  hiden: [1]\n  type: deepfm\n");
  b.IntList("model.hidden", {400});
  b.String("model.type", "deepfm");
  Status s = b.Finish();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "invalid configuration: model.hiden: unknown key; did you mean model.hidden? "
            "(c.yaml:2:3)");
}

TEST(Binder, UnknownKeyWithoutCloseMatchHasNoSuggestion) {
  ConfigBinder b = Parse("zzzzzzzzzz: 1\n");
  b.Int("seed", 1);
  EXPECT_EQ(b.Finish().message(), "invalid configuration: zzzzzzzzzz: unknown key (c.yaml:1:1)");
}

TEST(Binder, KeyInWrongSectionSuggestsRightOne) {
  ConfigBinder b = Parse("hidden: [1]\n");
  b.IntList("model.hidden", {400});
  EXPECT_EQ(b.Finish().message(),
            "invalid configuration: hidden: unknown key; did you mean model.hidden? (c.yaml:1:1)");
}

TEST(Binder, WrongTypeAndRangeCollectedTogether) {
  ConfigBinder b = Parse("a: abc\nb: -1\nc: [1, x]\nd: maybe\ne: 2.5\n");
  EXPECT_EQ(b.Int("a", 4), 4);
  EXPECT_EQ(b.Int("b", 1, Range::Closed(1, 100)), 1);
  b.IntList("c", {});
  b.Bool("d", false);
  b.Float("e", 0.1f, Range::HalfOpen(0, 1));
  Status s = b.Finish();
  EXPECT_EQ(s.message(),
            "invalid configuration (5 errors):\n"
            "  a: expected an integer, got \"abc\" (c.yaml:1:1)\n"
            "  b: -1 is out of range [1, 100] (c.yaml:2:1)\n"
            "  c: expected a list of integers, got an item \"x\" (c.yaml:3:8)\n"
            "  d: expected true or false, got \"maybe\" (c.yaml:4:1)\n"
            "  e: 2.5 is out of range [0, 1) (c.yaml:5:1)");
}

TEST(Binder, NumbersAreFiniteAndFitTheirType) {
  ConfigBinder b = Parse("inf: .inf\nnan: .nan\nbig: 1e39\ntiny: 1e-50\nok: 1e-45\nlist: [1, .inf]\n"
                         "i: 9000000000000000001\n");
  b.Double("inf", 1, Range::AtLeast(0));
  b.Double("nan", 1);
  b.Float("big", 1);
  b.Float("tiny", 1, Range::Positive());  // a float 0 would break the range
  EXPECT_FLOAT_EQ(b.Float("ok", 1, Range::Positive()), 1e-45f);
  b.DoubleList("list", {});
  b.Int("i", 0, Range::Closed(0, 9e18));  // past 9e18 exactly, though a double rounds it to 9e18
  EXPECT_EQ(b.Finish().message(),
            "invalid configuration (6 errors):\n"
            "  inf: expected a finite number, got \".inf\" (c.yaml:1:1)\n"
            "  nan: expected a number, got \".nan\" (c.yaml:2:1)\n"
            "  big: 1e39 is beyond what a 32-bit float holds (1e-45 to 3.4028235e+38 in magnitude, or 0) (c.yaml:3:1)\n"
            "  tiny: 1e-50 is beyond what a 32-bit float holds (1e-45 to 3.4028235e+38 in magnitude, or 0) (c.yaml:4:1)\n"
            "  list: expected a list of numbers, got an item \".inf\" (c.yaml:6:11)\n"
            "  i: 9000000000000000001 is out of range [0, 9e+18] (c.yaml:7:1)");
}

TEST(Binder, KeysRecordWhatEachGetterDeclared) {
  ConfigBinder b = Parse("");
  b.Int("a.n", 1, Range::Closed(1, 5));
  b.String("a.s", "x", {"x", "y"});
  b.IntList("l", {}, Range::AtLeast(1));
  b.Int("a.n", 2);  // read again: the first declaration stands
  ASSERT_EQ(b.keys().size(), 3u);
  EXPECT_EQ(b.keys()[0].path, "a.n");
  EXPECT_EQ(b.keys()[0].type, KeySpec::Type::kInt);
  EXPECT_EQ(b.keys()[0].range.ToString(), "[1, 5]");
  EXPECT_EQ(b.keys()[1].choices, (std::vector<std::string>{"x", "y"}));
  EXPECT_FALSE(b.keys()[1].numeric());
  EXPECT_EQ(b.keys()[2].type, KeySpec::Type::kIntList);
  EXPECT_TRUE(b.keys()[2].numeric());
}

TEST(Binder, ChoicesSuggestNearest) {
  ConfigBinder b = Parse("t: deepfn\n");
  b.String("t", "deepfm", {"lr", "fm", "deepfm"});
  EXPECT_EQ(b.Finish().message(),
            "invalid configuration: t: \"deepfn\" is not one of lr, fm, deepfm; did you mean "
            "deepfm? (c.yaml:1:1)");
}

TEST(Binder, SetOverridesScalarsAndLists) {
  ConfigBinder b = Parse("model:\n  hidden: [400]\n");
  ASSERT_TRUE(b.ApplySet("model.hidden=[256,128]").ok());
  ASSERT_TRUE(b.ApplySet("train.epochs=3").ok());
  ASSERT_TRUE(b.ApplySet("data.train=/tmp/a b.tsv").ok());
  ASSERT_TRUE(b.ApplySet("data.delimiter=,").ok());
  EXPECT_EQ(b.IntList("model.hidden", {}), (std::vector<int64_t>{256, 128}));
  EXPECT_EQ(b.Int("train.epochs", 1), 3);
  EXPECT_EQ(b.StringList("data.train", {}), (std::vector<std::string>{"/tmp/a b.tsv"}));
  EXPECT_EQ(b.String("data.delimiter", "\t"), ",");
  EXPECT_TRUE(b.Finish().ok());
}

TEST(Binder, SetUnknownPathIsReportedWithSuggestion) {
  ConfigBinder b = Parse("");
  ASSERT_TRUE(b.ApplySet("model.hiden=[3]").ok());
  b.IntList("model.hidden", {400});
  EXPECT_EQ(b.Finish().message(),
            "invalid configuration: model.hiden: unknown key; did you mean model.hidden? "
            "(--set model.hiden=[3])");
}

TEST(Binder, SetSyntaxErrors) {
  ConfigBinder b = Parse("seed: 1\n");
  EXPECT_EQ(b.ApplySet("seed").message(),
            "--set seed: expected KEY=VALUE, e.g. --set model.hidden=[256,128]");
  EXPECT_EQ(b.ApplySet("seed.x=1").message(),
            "--set seed.x=1: seed is \"1\", not a section, so it has no key \"x\"");
  EXPECT_EQ(b.ApplySet("a..b=1").message(), "--set a..b=1: empty key segment in \"a..b\"");
}

TEST(Binder, SyntaxErrorHasLocation) {
  auto b = ConfigBinder::FromYamlString("a: [1, 2\nb: 3\n", "x.yaml");
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(b.status().message().rfind("x.yaml:", 0), 0u) << b.status().message();
}

TEST(Binder, DuplicateKeyIsError) {
  auto b = ConfigBinder::FromYamlString("a: 1\na: 2\n", "x.yaml");
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().message(), "a: duplicate key (x.yaml:2:1)");
}

TEST(Binder, TopLevelMustBeMap) {
  auto b = ConfigBinder::FromYamlString("[1, 2]\n", "x.yaml");
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().message(),
            "x.yaml: the top level of a config must be a map of keys, got a list");
}

TEST(Binder, ScalarWhereSectionExpected) {
  ConfigBinder b = Parse("train:\n  early_stopping: 3\n");
  b.Int("train.early_stopping.patience", 0);
  EXPECT_EQ(b.Finish().message(),
            "invalid configuration: train.early_stopping: expected a section (a map of keys), "
            "got \"3\" (c.yaml:2:3)");
}

TEST(Binder, IntMapConsumesChildren) {
  ConfigBinder b = Parse("model:\n  field_dims: {C3: 8, C4: 4}\n");
  auto m = b.IntMap("model.field_dims", {}, Range::AtLeast(1));
  EXPECT_EQ(m, (std::map<std::string, int64_t>{{"C3", 8}, {"C4", 4}}));
  EXPECT_TRUE(b.Finish().ok());
}

TEST(Binder, ByteSizes) {
  EXPECT_EQ(ParseByteSize("8GiB").value(), int64_t{8} << 30);
  EXPECT_EQ(ParseByteSize("1.5 GB").value(), 1500000000);
  EXPECT_EQ(ParseByteSize("512mib").value(), int64_t{512} << 20);
  EXPECT_EQ(ParseByteSize("1000").value(), 1000);
  EXPECT_EQ(ParseByteSize("8 parsecs").status().message(),
            "\"8 parsecs\" has an unknown unit \" parsecs\"; expected a byte size such as 512MiB, "
            "8GiB, 1.5GB or 1000000");
  EXPECT_EQ(FormatByteSize(int64_t{8} << 30), "8GiB");
  EXPECT_EQ(FormatByteSize(1000), "1000");
  ConfigBinder b = Parse("m: 2GiB\n");
  EXPECT_EQ(b.Bytes("m", 0), int64_t{2} << 30);
  EXPECT_TRUE(b.Finish().ok());
}

TEST(Binder, ResolvedYamlRoundTrips) {
  ConfigBinder b = Parse("model: {hidden: [8, 4]}\nname: \"123\"\n");
  b.Int("seed", 42);
  b.IntList("model.hidden", {});
  b.Float("model.dropout", 0.1f);
  b.String("name", "");
  b.Bytes("mem", int64_t{1} << 30);
  ASSERT_TRUE(b.Finish().ok());
  std::string yaml = b.ResolvedYaml();
  EXPECT_EQ(yaml,
            "seed: 42\nmodel:\n  hidden: [8, 4]\n  dropout: 0.1\nname: \"123\"\nmem: 1GiB\n");
  ConfigBinder again = Parse(yaml);
  EXPECT_EQ(again.Int("seed", 0), 42);
  EXPECT_EQ(again.IntList("model.hidden", {}), (std::vector<int64_t>{8, 4}));
  EXPECT_FLOAT_EQ(again.Float("model.dropout", 0), 0.1f);
  EXPECT_EQ(again.String("name", ""), "123");
  EXPECT_EQ(again.Bytes("mem", 0), int64_t{1} << 30);
  EXPECT_TRUE(again.Finish().ok());
}

// `levels` lines of anchors, each a list of `fanout` aliases of the one before: fanout^levels
// values from a few hundred bytes.
std::string AliasBomb(int levels, int fanout) {
  std::string text = "a0: &a0 [x";
  for (int i = 1; i < fanout; ++i) text += ",x";
  text += "]\n";
  for (int level = 1; level < levels; ++level) {
    const std::string prev = "*a" + std::to_string(level - 1);
    text += "a" + std::to_string(level) + ": &a" + std::to_string(level) + " [" + prev;
    for (int i = 1; i < fanout; ++i) text += "," + prev;
    text += "]\n";
  }
  return text;
}

TEST(BinderLimits, AliasBombIsRefusedWhileItExpands) {
  const std::string bomb = AliasBomb(6, 10);  // 10^6 values in 329 bytes
  ASSERT_LT(bomb.size(), 400u);
  auto b = ConfigBinder::FromYamlString(bomb, "bomb.yaml");
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(b.status().message().find("more than 100000 values once its YAML aliases (*name) are expanded"),
            std::string::npos)
      << b.status();
  EXPECT_EQ(b.status().message().rfind("bomb.yaml:", 0), 0u) << b.status();
  // The same bomb in a --set value.
  ConfigBinder ok = Parse("seed: 1\n");
  Status bombed = ok.ApplySet("x=" + bomb);
  EXPECT_EQ(bombed.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bombed.message().find("more than 100000 values"), std::string::npos) << bombed;
}

TEST(BinderLimits, SmallerDocumentsWithAliasesStillLoad) {
  auto b = ConfigBinder::FromYamlString(AliasBomb(4, 10) + "seed: 3\n", "c.yaml");  // 11,111 values
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->Int("seed", 0), 3);
}

TEST(BinderLimits, DeepAliasChainIsRefused) {
  // Each line nests the previous list one deeper: 200 lines, 200 levels, 200 values.
  std::string text = "a0: &a0 [x]\n";
  for (int i = 1; i < 200; ++i) {
    text += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [*a" + std::to_string(i - 1) + "]\n";
  }
  auto b = ConfigBinder::FromYamlString(text, "deep.yaml");
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("maps and lists nest more than 64 deep"), std::string::npos) << b.status();
}

TEST(BinderLimits, SecondDocumentIsRefused) {
  auto b = ConfigBinder::FromYamlString("seed: 1\n---\nseed: 2\n", "two.yaml");
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().message(),
            "two.yaml:2:1: a second YAML document (after a '---' line): a config is one document; remove the "
            "'---' or split the file");
  EXPECT_TRUE(ConfigBinder::FromYamlString("---\nseed: 1\n...\n", "one.yaml").ok());
}

TEST(BinderLimits, OversizedTextIsRefusedBeforeParsing) {
  const std::string big = "seed: 1\n#" + std::string(static_cast<size_t>(kMaxConfigBytes), 'x') + "\n";
  auto b = ConfigBinder::FromYamlString(big, "big.yaml");
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("is more than a config may hold (4194304 bytes"), std::string::npos)
      << b.status();
}

TEST(BinderLimits, EndlessFileIsReadOnlyUpToTheLimit) {
  auto b = ConfigBinder::FromYamlFile("/dev/zero");
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("4194305 bytes is more than a config may hold"), std::string::npos)
      << b.status();
}

TEST(BinderLimits, ManyErrorsAreCountedNotAllListed) {
  std::string text;
  for (int i = 0; i < 5000; ++i) text += "k" + std::to_string(i) + ": 1\n";
  ConfigBinder b = Parse(text);
  b.Int("seed", 1);
  const Status s = b.Finish();
  EXPECT_EQ(s.message().rfind("invalid configuration (5000 errors):\n  k0: unknown key", 0), 0u);
  EXPECT_NE(s.message().find("\n  ... and 4950 more"), std::string::npos);
  EXPECT_LT(s.message().size(), 5000u);
}

TEST(BinderLimits, SetPathDepthIsBounded) {
  ConfigBinder b = Parse("");
  std::string path = "a";
  for (int i = 0; i < 100; ++i) path += ".a";
  const Status s = b.ApplySet(path + "=1");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("a key path of 101 segments (a config nests at most 64 deep)"), std::string::npos) << s;
}

TEST(Binder, EditDistance) {
  EXPECT_EQ(EditDistance("hiden", "hidden"), 1);
  EXPECT_EQ(EditDistance("", "abc"), 3);
  EXPECT_EQ(EditDistance("kitten", "sitting"), 3);
}

}  // namespace
}  // namespace rectrain::config
