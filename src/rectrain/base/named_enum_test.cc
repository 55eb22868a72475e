#include "rectrain/base/named_enum.h"

#include <gtest/gtest.h>

namespace rectrain {
namespace {

enum class Fruit : uint8_t { kApple, kPear, kPlum };
constexpr NamedEnum<Fruit>::Entry kFruitEntries[] = {{Fruit::kApple, "apple"}, {Fruit::kPear, "pear"}, {Fruit::kPlum, "plum"}};
constexpr NamedEnum<Fruit> kFruits(kFruitEntries);

TEST(NamedEnum, NamesAndValuesBothWays) {
  EXPECT_STREQ(kFruits.Name(Fruit::kPear), "pear");
  EXPECT_STREQ(kFruits.Name(static_cast<Fruit>(9)), "?");
  EXPECT_EQ(kFruits.Find("plum"), Fruit::kPlum);
  EXPECT_EQ(kFruits.Find("Plum"), std::nullopt);  // exact, as config values are
  EXPECT_EQ(kFruits.Names(), (std::vector<std::string>{"apple", "pear", "plum"}));
  EXPECT_EQ(kFruits.List(), "apple, pear, plum");
}

TEST(NamedEnum, ParseNamesTheKeyAndTheValidValues) {
  ASSERT_TRUE(kFruits.Parse("apple", "fruit").ok());
  EXPECT_EQ(*kFruits.Parse("apple", "fruit"), Fruit::kApple);
  const Result<Fruit> bad = kFruits.Parse("kiwi", "basket.fruit");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message(), "basket.fruit: \"kiwi\" is not one of apple, pear, plum");
}

}  // namespace
}  // namespace rectrain
