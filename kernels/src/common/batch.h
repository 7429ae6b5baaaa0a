// A strided batch as the TMA steps see it (gemm::Problem's batch and
// strides). Every tensor map has a third coordinate, the batch entry, and
// the tile scheduler's tiles run over every entry, so a batch of small
// GEMMs fills the GPU as one large GEMM does. An operand the whole batch
// shares (stride 0) has a map of one entry, which every tile reads at
// entry 0: TMA would zero-fill any other.
#pragma once

#include <cstdint>
#include <string>

#include "common/tile_layout.h"  // GEMM_TILE_HD, Vectorizable
#include "gemm/form.h"
#include "gemm/gemm.h"

namespace gemm::common {

struct BatchArgs {
  int entries = 1;
  bool a_moves = false, b_moves = false;  // stride not 0
  GEMM_TILE_HD int32_t EntryOfA(int entry) const { return a_moves ? entry : 0; }
  GEMM_TILE_HD int32_t EntryOfB(int entry) const { return b_moves ? entry : 0; }
};

inline BatchArgs BatchOf(const Problem& p) {
  return BatchArgs{static_cast<int>(p.batch), p.batch > 1 && p.stride_a != 0, p.batch > 1 && p.stride_b != 0};
}

// "" when the TMA steps can walk p's batch (explicit leading dimensions and
// stride_d) in one launch; otherwise why not, and gemm::Launch runs the
// entries one at a time. A map's entry stride must be a whole number of 16
// bytes and keep its entries apart; a D whose row tails a store would
// overwrite goes through a copy, which is an entry's business.
inline std::string OneLaunchBatchError(const Problem& p) {
  const auto apart = [](int64_t stride, int64_t rows, int64_t ld) { return stride == 0 || stride >= rows * ld; };
  const StoredShape a = StoredShapeOf(p.a_layout, p.m, p.k), b = StoredShapeOf(p.b_layout, p.n, p.k);
  if (p.stride_a % 8 != 0 || p.stride_b % 8 != 0 || p.stride_d % 8 != 0) return "a stride is not 16-byte aligned";
  if (!apart(p.stride_a, a.rows, p.lda) || !apart(p.stride_b, b.rows, p.ldb)) return "operand entries overlap";
  if (!Vectorizable(p.a, p.lda) || !Vectorizable(p.b, p.ldb) || !Vectorizable(p.d, p.ldd)) {
    return "a pitch or base is not 16-byte aligned";
  }
  if (p.n % 8 != 0 && !p.d_tail_is_scratch) return "D's row tails are not scratch";
  if ((p.m + 127) / 128 * ((p.n + 63) / 64) * p.batch > INT32_MAX / 2) return "more tiles than the scheduler counts";
  return "";
}

}  // namespace gemm::common
