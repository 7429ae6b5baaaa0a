// Host-side fp16 <-> fp32, from Debian's libfp16-dev (exact IEEE rounding).
#pragma once

#include <fp16.h>

#include <cstdint>

namespace gemm {

inline float HalfToFloat(uint16_t h) { return fp16_ieee_to_fp32_value(h); }
inline uint16_t FloatToHalf(float f) { return fp16_ieee_from_fp32_value(f); }

}  // namespace gemm
