// Host side of every TMA step: tensor maps for A, B and D at their leading
// dimensions, and the staging TMA needs when a pitch is not a multiple of
// 16 bytes or a base is misaligned: such an operand goes through a copy at
// a 128-byte pitch (gemm::LinePitch, from the stream-ordered pool), and D
// comes back from its copy after the kernel. So does a D whose row tail a TMA store would
// overwrite, unless the caller marked that tail as its padding.
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>

#include <string>

#include "gemm/gemm.h"
#include "common/tile_layout.h"

namespace gemm::common {

// Rows of the box each map moves per TMA (columns: always one 64-wide
// k-tile, or 64 columns of D). Steps that split a tile between CTAs of a
// cluster, or D between warpgroups, move smaller boxes.
struct TmaBoxRows {
  uint32_t a = kTileRows, b = kTileRows, d = kTileRows;
};

class TmaProblem {
 public:
  TmaProblem() = default;
  TmaProblem(const TmaProblem&) = delete;
  TmaProblem& operator=(const TmaProblem&) = delete;
  // Staging still held (an error between Prepare and Finish) is freed on
  // Prepare's stream, without copying D back.
  ~TmaProblem();

  // Stages what needs staging and encodes the maps; "" on success. A
  // kernel that writes D without TMA (split-K's sum) asks for no D map. A
  // kernel that can read C by TMA asks for a C map (D's box), made where C
  // is read (beta not 0) and TMA can take it in place: c_mapped() says so.
  std::string Prepare(const Problem& p, cudaStream_t stream, TmaBoxRows boxes = {}, bool d_map = true,
                      bool c_map = false);
  // After the kernel: copies a padded D back and frees the staging.
  std::string Finish(cudaStream_t stream);

  const CUtensorMap& a() const { return a_; }
  const CUtensorMap& b() const { return b_; }
  const CUtensorMap& d() const { return d_; }
  const CUtensorMap& c() const { return c_; }
  bool c_mapped() const { return c_mapped_; }
  // Where the kernel writes D, at which pitch: D itself, or its pitched
  // copy (Finish copies it back). A second kernel that writes some of D's
  // tiles (a split tail's sum) writes them there too.
  __half* d_written() const { return d_pad_ != nullptr ? d_pad_ : p_.d; }
  int64_t ldd_written() const { return ldd_pad_; }

 private:
  void Release();  // frees the staging on stream_

  Problem p_;
  cudaStream_t stream_ = nullptr;
  __half *a_pad_ = nullptr, *b_pad_ = nullptr, *d_pad_ = nullptr;
  int64_t ldd_pad_ = 0;  // D's pitch as the kernel writes it
  CUtensorMap a_{}, b_{}, d_{}, c_{};
  bool c_mapped_ = false;
};

}  // namespace gemm::common
