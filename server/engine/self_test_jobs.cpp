#include "engine/self_test_jobs.h"

#include <cstdint>

namespace gemmd {

std::vector<GemmJob> SelfTestJobs(const gemm::StepInfo& info) {
  // Small and ragged shapes against cuBLAS (the other forms against an fp64
  // product), D poisoned (Run verifies). The long-K ones make step 10 on an
  // H100 or H200 split K (seven ranges), once on each tile it splits on
  // (common/tile_width.h, SplitKTileWidth): the pair (200×300), the medium
  // tile (100×300) and the narrow one (300×40); 1100×1500×136 takes its
  // medium tile unsplit, 1500×1430×72 its three-quarter tile (ragged N),
  // 3600×2501×3080 its wide tile with a split tail (common/split_k.h:
  // 150 pair tiles, the last wave's 18 to 30 split; ragged, and the last
  // tile-row's lower CTAs without rows),
  // the small ones its half-height tile (128×128,
  // 77×100, 256×512, 1×300, 129×257: ragged) or its narrow one (1000×129,
  // 300×1). The last one gives every persistent CTA, and every pair of
  // step 10 on a B200, several tiles and every stage ring several rounds,
  // so phases wrap and TMEM accumulators are reused as they are under real
  // load.
  struct Shape {
    int64_t m, n, k;
  };
  const Shape self_test[] = {{128, 128, 64}, {77, 100, 50},   {128, 128, 1000}, {256, 512, 320},
                             {1000, 129, 77}, {1, 300, 64},   {300, 1, 8},      {129, 257, 13},
                             {100, 300, 4000}, {200, 300, 4000}, {300, 40, 4000}, {1100, 1500, 136},
                             {1500, 1430, 72}, {3600, 2501, 3080}, {4100, 8000, 300}};
  // The forms the step takes (gemm::IsLadderForm): fp16, bf16 and bf16
  // x @ W (B stored k x n) on every shape; the mixed type pairs, the other
  // layouts and the fused epilogue (x @ W·α + β·C) on the ragged ones
  // (their instantiations share all but the MMA kind and the rounding, the
  // tiles' loads and descriptors, or the epilogue's arithmetic); and batches,
  // one sharing B, on every shape but the largest (steps 4-10 walk those
  // whose rows are whole 16 bytes in one launch, the rest entry by entry).
  using gemm::ElementType;
  using gemm::Layout;
  constexpr Layout kK = Layout::kKContiguous, kMn = Layout::kMnContiguous;
  struct Types {
    ElementType operands, result;
    Layout a, b;
    bool every_shape;
    double alpha = 1, beta = 0;
    int64_t batch = 1;
    bool shared_b = false;
  };
  const Types types[] = {{ElementType::kF16, ElementType::kF16, kK, kK, true},
                         {ElementType::kBF16, ElementType::kBF16, kK, kK, true},
                         {ElementType::kBF16, ElementType::kBF16, kK, kMn, true},
                         {ElementType::kBF16, ElementType::kF16, kK, kK, false},
                         {ElementType::kF16, ElementType::kBF16, kK, kK, false},
                         {ElementType::kF16, ElementType::kF16, kMn, kK, false},
                         {ElementType::kBF16, ElementType::kBF16, kMn, kMn, false},
                         {ElementType::kBF16, ElementType::kBF16, kK, kMn, false, 0.5, -1.0},
                         {ElementType::kF16, ElementType::kF16, kK, kK, true, 1.0, 0.0, 3},
                         {ElementType::kBF16, ElementType::kBF16, kK, kMn, true, 0.5, -1.0, 2, true}};
  const int step = info.step;
  std::vector<GemmJob> jobs;
  for (const Types& t : types) {
    for (const Shape& s : self_test) {
      if (!gemm::ShapeError(info, s.m, s.n, s.k).empty()) continue;
      if (!t.every_shape && s.n % 8 == 0 && s.k % 8 == 0) continue;
      if (t.batch > 1 && s.m * s.n * s.k > 100'000'000) continue;
      GemmJob job;
      job.m = s.m;
      job.n = s.n;
      job.k = s.k;
      job.step = step;
      job.form.a = job.form.b = t.operands;
      job.form.d = t.result;
      job.form.a_layout = t.a;
      job.form.b_layout = t.b;
      job.form.alpha = t.alpha;
      job.form.beta = t.beta;
      job.form.has_c = t.beta != 0;
      job.form.c = t.result;
      job.c.seed = 3000 + step;
      job.form.batch = t.batch;
      job.form.StackDensely(s.m, s.n, s.k);
      if (t.shared_b) job.form.stride_b = 0;
      job.a.seed = 1000 + step;
      job.b.seed = 2000 + step;
      jobs.push_back(std::move(job));
    }
  }
  return jobs;
}

}  // namespace gemmd
