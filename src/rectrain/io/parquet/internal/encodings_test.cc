// Unit tests for the value/level decoders (hand-computed byte streams).
#include "rectrain/io/parquet/internal/encodings.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

namespace rectrain::io::parquet::internal {
namespace {

std::span<const uint8_t> S(const std::vector<uint8_t>& v) { return {v.data(), v.size()}; }

TEST(RleHybrid, RunsAndBitPacked) {
  // RLE run: 5 x value 3 (bit width 2) then bit-packed 1 group: values 0,1,2,3,0,1,2,3.
  std::vector<uint8_t> in = {0x0a, 0x03, 0x03, 0b11100100, 0b11100100};
  std::vector<uint32_t> out(13);
  ASSERT_TRUE(DecodeRleHybrid<uint32_t>(S(in), 2, 13, out.data()).ok());
  EXPECT_EQ(out, (std::vector<uint32_t>{3, 3, 3, 3, 3, 0, 1, 2, 3, 0, 1, 2, 3}));
  std::vector<uint16_t> out16(13);
  ASSERT_TRUE(DecodeRleHybrid<uint16_t>(S(in), 2, 13, out16.data()).ok());
  EXPECT_EQ(out16[12], 3);
}

TEST(RleHybrid, ErrorsInsteadOfOverrun) {
  std::vector<uint8_t> in = {0x0a, 0x03};
  std::vector<uint32_t> out(6);
  EXPECT_EQ(DecodeRleHybrid<uint32_t>(S(in), 2, 6, out.data()).message(),
            "RLE data ends after 5 of 6 values");
  EXPECT_EQ(DecodeRleHybrid<uint32_t>(S(in), 33, 1, out.data()).message(),
            "RLE bit width 33 exceeds 32");
  std::vector<uint8_t> bad_value = {0x02, 0x07};  // run value 7 does not fit 2 bits
  EXPECT_EQ(DecodeRleHybrid<uint32_t>(S(bad_value), 2, 1, out.data()).message(),
            "RLE run value 7 does not fit in 2 bits");
  // A run longer than needed is truncated to n.
  EXPECT_TRUE(DecodeRleHybrid<uint32_t>(S(in), 2, 2, out.data()).ok());
}

TEST(UnpackBits, AllWidthsRoundTrip) {
  // Exactly-sized inputs: whole groups of 8 (the per-width fast path) and the tail loops.
  for (int n : {1, 8, 9, 77, 1000}) {
    for (int bw = 1; bw <= 32; ++bw) {
      std::vector<uint8_t> packed((n * bw + 7) / 8);
      std::vector<uint32_t> expect(n);
      uint64_t mask = (uint64_t{1} << bw) - 1;
      for (int i = 0; i < n; ++i) {
        expect[i] = static_cast<uint32_t>((i * 2654435761u + 17) & mask);
        for (int b = 0; b < bw; ++b) {
          if ((expect[i] >> b) & 1) packed[(i * bw + b) / 8] |= 1 << ((i * bw + b) % 8);
        }
      }
      std::vector<uint32_t> got(n);
      UnpackBits32(packed.data(), packed.size(), bw, n, got.data());
      EXPECT_EQ(got, expect) << "bit width " << bw << ", " << n << " values";
    }
  }
}

TEST(DeltaBinaryPacked, SpecExample) {
  // Block 128, 4 miniblocks, 5 values: 1 2 3 4 5 -> deltas 1, min delta 1, width 0.
  std::vector<uint8_t> in = {0x80, 0x01, 0x04, 0x05, 0x02, 0x02, 0, 0, 0, 0};
  std::vector<int64_t> out(5);
  int64_t used = 0;
  ASSERT_TRUE(DecodeDeltaBinaryPacked<int64_t>(S(in), 5, out.data(), &used).ok());
  EXPECT_EQ(out, (std::vector<int64_t>{1, 2, 3, 4, 5}));
  EXPECT_EQ(used, 10);
  EXPECT_EQ(DecodeDeltaBinaryPacked<int64_t>(S(in), 4, out.data(), &used).message(),
            "DELTA_BINARY_PACKED holds 5 values where the page needs 4");
  std::vector<uint8_t> wide = {0x80, 0x01, 0x04, 0x02, 0x02, 0x02, 65, 0, 0, 0};
  EXPECT_EQ(DecodeDeltaBinaryPacked<int64_t>(S(wide), 2, out.data(), &used).message(),
            "DELTA_BINARY_PACKED miniblock bit width 65 exceeds 64");
}

TEST(ByteStreamSplit, Floats) {
  float a[2] = {1.5f, -2.25f};
  uint8_t raw[8];
  std::memcpy(raw, a, 8);
  std::vector<uint8_t> split(8);
  for (int i = 0; i < 2; ++i)
    for (int b = 0; b < 4; ++b) split[b * 2 + i] = raw[i * 4 + b];
  float got[2];
  ASSERT_TRUE(DecodeByteStreamSplit(S(split), 2, 4, reinterpret_cast<uint8_t*>(got)).ok());
  EXPECT_EQ(got[0], 1.5f);
  EXPECT_EQ(got[1], -2.25f);
  EXPECT_FALSE(DecodeByteStreamSplit(S(split), 3, 4, reinterpret_cast<uint8_t*>(got)).ok());
}

TEST(Utf8, Validation) {
  auto ok = [](const std::string& s) {
    return IsValidUtf8(reinterpret_cast<const uint8_t*>(s.data()), s.size());
  };
  EXPECT_TRUE(ok("plain ascii text, longer than eight bytes"));
  EXPECT_TRUE(ok("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"));
  EXPECT_FALSE(ok("\xc0\x80"));          // overlong
  EXPECT_FALSE(ok("\xed\xa0\x80"));      // surrogate
  EXPECT_FALSE(ok("\xf4\x90\x80\x80"));  // > U+10FFFF
  EXPECT_FALSE(ok("abc\xe2\x82"));       // truncated
  EXPECT_FALSE(ok("\x80"));
}

TEST(RleHybridEncoder, RoundTripsEveryPattern) {
  // Runs shorter and longer than 8, literals of every length mod 8, widths 0..32.
  uint64_t x = 42;
  auto next = [&] { return x = x * 6364136223846793005ULL + 1442695040888963407ULL; };
  for (int bw : {0, 1, 2, 3, 7, 8, 13, 16, 31, 32}) {
    const uint64_t mask = bw == 32 ? 0xffffffffULL : (uint64_t{1} << bw) - 1;
    for (int n : {1, 7, 8, 9, 15, 16, 17, 100, 1000}) {
      std::vector<uint32_t> v(n);
      for (int i = 0; i < n;) {
        const int run = 1 + static_cast<int>(next() >> 60);  // 1..16
        const uint32_t val = static_cast<uint32_t>((next() >> 20) & mask);
        for (int k = 0; k < run && i < n; ++k) v[i++] = val;
      }
      std::string enc;
      EncodeRleHybrid(v.data(), n, bw, &enc);
      std::vector<uint32_t> back(n);
      std::span<const uint8_t> in(reinterpret_cast<const uint8_t*>(enc.data()), enc.size());
      ASSERT_TRUE(DecodeRleHybrid<uint32_t>(in, bw, n, back.data()).ok()) << "bw " << bw << " n " << n;
      EXPECT_EQ(back, v) << "bw " << bw << " n " << n;
    }
  }
}

TEST(RleHybridEncoder, LongRunIsOneRun) {
  std::vector<uint32_t> v(100000, 5);
  std::string enc;
  EncodeRleHybrid(v.data(), static_cast<int64_t>(v.size()), 3, &enc);
  EXPECT_EQ(enc.size(), 4u);  // varint header (3 bytes for 200000) + 1 value byte
  EXPECT_EQ(BitWidth(0), 0);
  EXPECT_EQ(BitWidth(1), 1);
  EXPECT_EQ(BitWidth(255), 8);
  EXPECT_EQ(BitWidth(256), 9);
}

}  // namespace
}  // namespace rectrain::io::parquet::internal
