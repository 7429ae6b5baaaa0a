// The element types a GEMM's operands and D may have, and their encodings.
//
// fp16 and fp32 are IEEE 754 binary16 and binary32; bf16 is binary32's top
// 16 bits; the two fp8 types are the OCP 8-bit floating point formats
// (OCP "8-bit Floating Point Specification (OFP8)", rev. 1.0, 2023, table 1),
// which the PTX ISA calls e4m3 and e5m2:
//   e4m3: bias 7, no infinities, S.1111.111 is NaN, largest finite 448;
//   e5m2: bias 15, IEEE-like (infinities and NaNs at exponent 31), largest
//         finite 57344.
// Encoding rounds to nearest, ties to even, as the GPU's cvt.rn does; fp8
// saturates to the largest finite value (cvt.rn.satfinite), so that a
// scaled input never turns into an infinity or a NaN.
// Host and device share these functions: an operand generated from a seed
// is the same bits on every engine.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "gemm/random_fill.h"

#if defined(__CUDACC__)
#include <cuda_fp16.h>
#endif

namespace gemm {

enum class ElementType : uint8_t { kF16 = 0, kBF16 = 1, kF32 = 2, kF8E4M3 = 3, kF8E5M2 = 4 };
inline constexpr int kElementTypes = 5;

// f(std::integral_constant<ElementType, t>{}): code templated on the type
// that a runtime value names (a kernel launched per element type).
template <typename F>
auto WithElementType(ElementType t, F&& f) {
  switch (t) {
    case ElementType::kBF16: return f(std::integral_constant<ElementType, ElementType::kBF16>{});
    case ElementType::kF32: return f(std::integral_constant<ElementType, ElementType::kF32>{});
    case ElementType::kF8E4M3: return f(std::integral_constant<ElementType, ElementType::kF8E4M3>{});
    case ElementType::kF8E5M2: return f(std::integral_constant<ElementType, ElementType::kF8E5M2>{});
    case ElementType::kF16: break;
  }
  return f(std::integral_constant<ElementType, ElementType::kF16>{});
}

GEMM_HOST_DEVICE constexpr size_t ElementBytes(ElementType t) {
  switch (t) {
    case ElementType::kF32: return 4;
    case ElementType::kF8E4M3:
    case ElementType::kF8E5M2: return 1;
    default: return 2;
  }
}

constexpr const char* ElementName(ElementType t) {
  switch (t) {
    case ElementType::kF16: return "fp16";
    case ElementType::kBF16: return "bf16";
    case ElementType::kF32: return "fp32";
    case ElementType::kF8E4M3: return "fp8_e4m3";
    case ElementType::kF8E5M2: return "fp8_e5m2";
  }
  return "unknown";
}

GEMM_HOST_DEVICE constexpr bool IsFp8(ElementType t) { return t == ElementType::kF8E4M3 || t == ElementType::kF8E5M2; }

namespace element_detail {

GEMM_HOST_DEVICE inline uint32_t FloatBits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}
GEMM_HOST_DEVICE inline float BitsFloat(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}
// 2^e for a normal float's exponent (-126 to 127), from its bits: exact,
// and a few instructions where ldexpf is a library call on the GPU.
GEMM_HOST_DEVICE inline float Pow2f(int e) { return BitsFloat(static_cast<uint32_t>(e + 127) << 23); }

// An fp8 format: exponent and mantissa widths, bias, and whether the top
// exponent holds infinities and NaNs (e5m2) or only the one NaN (e4m3).
struct Fp8Format {
  int exponent_bits, mantissa_bits, bias;
  bool ieee_specials;
  float max_finite;
  uint8_t max_code;  // the largest finite value's magnitude bits
};
GEMM_HOST_DEVICE constexpr Fp8Format Fp8FormatOf(ElementType t) {
  return t == ElementType::kF8E4M3 ? Fp8Format{4, 3, 7, false, 448.0f, 0x7e} : Fp8Format{5, 2, 15, true, 57344.0f, 0x7b};
}

GEMM_HOST_DEVICE inline float DecodeFp8(uint8_t code, Fp8Format f) {
  const bool negative = (code & 0x80) != 0;
  const int exponent = (code >> f.mantissa_bits) & ((1 << f.exponent_bits) - 1);
  const int mantissa = code & ((1 << f.mantissa_bits) - 1);
  const int top = (1 << f.exponent_bits) - 1;
  float value;
  if (f.ieee_specials && exponent == top) {
    value = mantissa == 0 ? INFINITY : NAN;
  } else if (!f.ieee_specials && exponent == top && mantissa == (1 << f.mantissa_bits) - 1) {
    value = NAN;
  } else if (exponent == 0) {
    value = static_cast<float>(mantissa) * Pow2f(1 - f.bias - f.mantissa_bits);
  } else {
    value = static_cast<float>(mantissa + (1 << f.mantissa_bits)) * Pow2f(exponent - f.bias - f.mantissa_bits);
  }
  return negative ? -value : value;
}

GEMM_HOST_DEVICE inline uint8_t EncodeFp8(float x, Fp8Format f) {
  const uint8_t sign = (FloatBits(x) >> 24) & 0x80;
  if (x != x) return 0x7f;  // NaN in both formats (e5m2: any mantissa; e4m3: the one NaN)
  const float a = fabsf(x);
  if (!(a < f.max_finite)) return sign | f.max_code;  // saturating, infinities included
  const int min_exponent = 1 - f.bias;                 // of the normal numbers
  int e;
  frexpf(a, &e);  // a = g·2^e, g in [0.5, 1): a's binade is 2^(e-1)
  const int binade = e - 1 < min_exponent ? min_exponent : e - 1;
  const int quantum_exponent = binade - f.mantissa_bits;
  // rintf rounds to nearest even; the quotient is exact below 2^24.
  const float q = rintf(ldexpf(a, -quantum_exponent));
  const float rounded = ldexpf(q, quantum_exponent);
  if (rounded > f.max_finite) return sign | f.max_code;
  if (rounded == 0.0f) return sign;
  if (rounded < ldexpf(1.0f, min_exponent)) {  // a subnormal: exponent field 0
    return sign | static_cast<uint8_t>(q);
  }
  int re;
  frexpf(rounded, &re);
  const int exponent = re - 1;
  const int mantissa = static_cast<int>(ldexpf(rounded, f.mantissa_bits - exponent)) - (1 << f.mantissa_bits);
  return sign | static_cast<uint8_t>(((exponent + f.bias) << f.mantissa_bits) | mantissa);
}

// IEEE binary16 from binary32, rounding to nearest even (the device uses
// its own conversion; this one serves code compiled for either side).
GEMM_HOST_DEVICE inline uint16_t EncodeHalf(float x) {
  const uint32_t u = FloatBits(x);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000);
  const float a = fabsf(x);
  if (a != a) return sign | 0x7e00;
  if (a >= 65520.0f) return sign | 0x7c00;  // rounds to infinity
  if (a < 0x1p-14f) {                       // subnormal or zero: quantum 2^-24
    return sign | static_cast<uint16_t>(rintf(a * 0x1p24f));
  }
  int e;
  frexpf(a, &e);
  const int exponent = e - 1;
  const float q = rintf(ldexpf(a, 10 - exponent));  // 1024..2048
  uint32_t bits = static_cast<uint32_t>(exponent + 15) << 10;
  bits += static_cast<uint32_t>(q) - 1024;  // q = 2048 carries into the exponent
  return sign | static_cast<uint16_t>(bits);
}

GEMM_HOST_DEVICE inline float DecodeHalf(uint16_t h) {
#if defined(__CUDA_ARCH__)
  return __half2float(__ushort_as_half(h));  // one conversion instruction, exact as below
#endif
  const int exponent = (h >> 10) & 0x1f;
  const int mantissa = h & 0x3ff;
  float value;
  if (exponent == 31) {
    value = mantissa == 0 ? INFINITY : NAN;
  } else if (exponent == 0) {
    value = static_cast<float>(mantissa) * Pow2f(-24);
  } else {
    value = static_cast<float>(mantissa + 1024) * Pow2f(exponent - 25);
  }
  return (h & 0x8000) ? -value : value;
}

}  // namespace element_detail

GEMM_HOST_DEVICE inline uint16_t EncodeBf16(float x) {
  const uint32_t u = element_detail::FloatBits(x);
  if (x != x) return static_cast<uint16_t>((u >> 16) | 0x40);  // a quiet NaN, sign kept
  return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
GEMM_HOST_DEVICE inline float DecodeBf16(uint16_t b) { return element_detail::BitsFloat(static_cast<uint32_t>(b) << 16); }

// Element `index` of an array of type `t` at `base`, as a float (every
// type here widens to binary32 exactly).
GEMM_HOST_DEVICE inline float LoadElement(ElementType t, const void* base, uint64_t index) {
  switch (t) {
    case ElementType::kF16: return element_detail::DecodeHalf(static_cast<const uint16_t*>(base)[index]);
    case ElementType::kBF16: return DecodeBf16(static_cast<const uint16_t*>(base)[index]);
    case ElementType::kF32: return static_cast<const float*>(base)[index];
    default:
      return element_detail::DecodeFp8(static_cast<const uint8_t*>(base)[index], element_detail::Fp8FormatOf(t));
  }
}

// Stores `value` rounded to `t` as element `index` of `base`.
GEMM_HOST_DEVICE inline void StoreElement(ElementType t, void* base, uint64_t index, float value) {
  switch (t) {
    case ElementType::kF16: static_cast<uint16_t*>(base)[index] = element_detail::EncodeHalf(value); return;
    case ElementType::kBF16: static_cast<uint16_t*>(base)[index] = EncodeBf16(value); return;
    case ElementType::kF32: static_cast<float*>(base)[index] = value; return;
    default:
      static_cast<uint8_t*>(base)[index] = element_detail::EncodeFp8(value, element_detail::Fp8FormatOf(t));
  }
}

// A value rounded to `t` and widened back: what storing it would keep.
GEMM_HOST_DEVICE inline float RoundTo(ElementType t, float value) {
  unsigned char bytes[4];
  StoreElement(t, bytes, 0, value);
  return LoadElement(t, bytes, 0);
}

// Server-generated inputs of any type: the fp16 generator's value
// (random_fill.h, j/1024 in [-1, 1)) rounded to the type, so that every
// engine makes the same bits from the same seed. fp16 and fp32 hold it
// exactly; bf16 keeps 8 significant bits of it and fp8 3 or 2.
GEMM_HOST_DEVICE inline float RandomValueAs(ElementType t, uint64_t stream, uint64_t index) {
  return RoundTo(t, RandomValueIn(stream, index));
}

}  // namespace gemm
