// The element encodings (gemm/element_type.h) against the formats' own
// tables, and the host's fp16 against Debian's libfp16.
#include "gemm/element_type.h"

#include <fp16.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

namespace gemm {
namespace {

uint8_t Fp8(ElementType t, float v) {
  uint8_t code = 0;
  StoreElement(t, &code, 0, v);
  return code;
}
float Fp8Value(ElementType t, uint8_t code) { return LoadElement(t, &code, 0); }

// OCP 8-bit Floating Point Specification (OFP8) rev. 1.0, table 1.
TEST(ElementType, E4m3MatchesTheOcpTable) {
  const ElementType t = ElementType::kF8E4M3;
  EXPECT_EQ(Fp8Value(t, 0x7e), 448.0f);          // max normal S.1111.110
  EXPECT_EQ(Fp8Value(t, 0x08), 0x1p-6f);         // min normal S.0001.000
  EXPECT_EQ(Fp8Value(t, 0x07), 0.875f * 0x1p-6f);  // max subnormal S.0000.111
  EXPECT_EQ(Fp8Value(t, 0x01), 0x1p-9f);         // min subnormal S.0000.001
  EXPECT_TRUE(std::isnan(Fp8Value(t, 0x7f)));    // NaN S.1111.111
  EXPECT_EQ(Fp8Value(t, 0x38), 1.0f);            // bias 7
  EXPECT_EQ(Fp8Value(t, 0xb8), -1.0f);
  EXPECT_EQ(Fp8(t, 1000.0f), 0x7e) << "satfinite: saturates, no infinity in e4m3";
  EXPECT_EQ(Fp8(t, -INFINITY), 0xfe);
}

TEST(ElementType, E5m2MatchesTheOcpTable) {
  const ElementType t = ElementType::kF8E5M2;
  EXPECT_EQ(Fp8Value(t, 0x7b), 57344.0f);      // max normal S.11110.11
  EXPECT_EQ(Fp8Value(t, 0x04), 0x1p-14f);      // min normal S.00001.00
  EXPECT_EQ(Fp8Value(t, 0x01), 0x1p-16f);      // min subnormal S.00000.01
  EXPECT_EQ(Fp8Value(t, 0x7c), INFINITY);      // S.11111.00
  EXPECT_TRUE(std::isnan(Fp8Value(t, 0x7d)));  // S.11111.{01,10,11}
  EXPECT_EQ(Fp8Value(t, 0x3c), 1.0f);          // bias 15
  EXPECT_EQ(Fp8(t, 1e6f), 0x7b) << "satfinite";
}

TEST(ElementType, Fp8EncodingRoundTripsEveryFiniteCode) {
  for (ElementType t : {ElementType::kF8E4M3, ElementType::kF8E5M2}) {
    for (int code = 0; code < 256; ++code) {
      const float v = Fp8Value(t, static_cast<uint8_t>(code));
      if (!std::isfinite(v)) continue;
      if (v == 0.0f) {
        EXPECT_EQ(Fp8(t, v) & 0x7f, 0) << code;
        continue;
      }
      EXPECT_EQ(Fp8(t, v), code) << ElementName(t) << " code " << code;
    }
  }
}

// gemm::WidenedToF16 rests on this: fp16 (IEEE 754 binary16, by Debian's
// libfp16) holds every fp8 value of both formats exactly, Inf and NaN too.
TEST(ElementType, EveryFp8ValueIsAnFp16Value) {
  for (ElementType t : {ElementType::kF8E4M3, ElementType::kF8E5M2}) {
    for (int code = 0; code < 256; ++code) {
      const float v = Fp8Value(t, static_cast<uint8_t>(code));
      const float widened = fp16_ieee_to_fp32_value(fp16_ieee_from_fp32_value(v));
      if (std::isnan(v)) {
        EXPECT_TRUE(std::isnan(widened)) << ElementName(t) << " code " << code;
      } else {
        EXPECT_EQ(widened, v) << ElementName(t) << " code " << code;
      }
    }
  }
}

TEST(ElementType, Fp8RoundsToNearestTiesToEven) {
  const ElementType t = ElementType::kF8E4M3;
  // Between 1.0 (0x38, mantissa 000) and 1.125 (0x39): 1.0625 is the tie,
  // and goes to the even mantissa, 1.0; just above it goes up.
  EXPECT_EQ(Fp8(t, 1.0625f), 0x38);
  EXPECT_EQ(Fp8(t, 1.0626f), 0x39);
  // 1.1875 ties between 1.125 (odd 001) and 1.25 (even 010).
  EXPECT_EQ(Fp8(t, 1.1875f), 0x3a);
  // In the subnormals: 1.5·2^-9 ties between 2^-9 (001) and 2^-8 (010).
  EXPECT_EQ(Fp8(t, 1.5f * 0x1p-9f), 0x02);
  EXPECT_EQ(Fp8(t, 0.5f * 0x1p-9f), 0x00) << "half the smallest subnormal ties to zero (even)";
}

TEST(ElementType, Bf16IsBinary32sTopHalfRoundedToNearestEven) {
  EXPECT_EQ(EncodeBf16(1.0f), 0x3f80);
  EXPECT_EQ(DecodeBf16(0x3f80), 1.0f);
  // 1 + 2^-8 is the tie between 1.0 and 1 + 2^-7: even, 1.0.
  EXPECT_EQ(EncodeBf16(1.0f + 0x1p-8f), 0x3f80);
  EXPECT_EQ(EncodeBf16(1.0f + 0x1p-8f + 0x1p-20f), 0x3f81);
  EXPECT_EQ(EncodeBf16(1.0f + 0x1p-7f + 0x1p-8f), 0x3f82) << "tie from an odd mantissa goes up";
  EXPECT_TRUE(std::isnan(DecodeBf16(EncodeBf16(NAN))));
  EXPECT_EQ(DecodeBf16(EncodeBf16(-INFINITY)), -INFINITY);
}

TEST(ElementType, HalfAgreesWithLibfp16) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float want = fp16_ieee_to_fp32_value(static_cast<uint16_t>(h));
    uint16_t bits = static_cast<uint16_t>(h);
    const float got = LoadElement(ElementType::kF16, &bits, 0);
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got));
      continue;
    }
    ASSERT_EQ(got, want) << h;
  }
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> mag(-30.0f, 17.0f);
  for (int i = 0; i < 200000; ++i) {
    const float v = std::ldexp(1.0f + (rng() & 0xffffff) * 0x1p-24f, static_cast<int>(mag(rng))) * ((rng() & 1) ? 1 : -1);
    uint16_t got = 0;
    StoreElement(ElementType::kF16, &got, 0, v);
    ASSERT_EQ(got, fp16_ieee_from_fp32_value(v)) << v;
  }
}

TEST(ElementType, RandomValuesAreTheFp16GeneratorsRoundedToTheType) {
  const uint64_t stream = RandomStream(5, OperandId::kA);
  for (uint64_t i = 0; i < 4096; ++i) {
    const float v = RandomValueIn(stream, i);
    EXPECT_EQ(RandomValueAs(ElementType::kF16, stream, i), v);
    EXPECT_EQ(RandomValueAs(ElementType::kF32, stream, i), v);
    EXPECT_EQ(RandomValueAs(ElementType::kBF16, stream, i), DecodeBf16(EncodeBf16(v)));
    const float e4m3 = RandomValueAs(ElementType::kF8E4M3, stream, i);
    EXPECT_LE(std::fabs(e4m3 - v), std::fabs(v) * 0x1p-4f + 0x1p-10f) << v;
  }
}

}  // namespace
}  // namespace gemm
