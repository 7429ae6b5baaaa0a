#include "gemm/diagnose_step.h"

#include <set>

#include "gemm/device_ops.h"
#include "gemm/diagnose.h"
#include "gemm/steps.h"

namespace gemm {

std::vector<ProbeVerdict> DiagnoseStep(int step, const DeviceContext& ctx, cudaStream_t stream) {
  const StepInfo* info = FindStep(step);
  if (info == nullptr) return {};
  return DiagnoseLauncher(*info, [&](const Problem& p) { return Launch(step, p, ctx, stream); }, stream);
}

std::vector<ProbeVerdict> DiagnoseLauncher(const StepInfo& limits, const ProbeLauncher& launch, cudaStream_t stream) {
  std::vector<ProbeVerdict> verdicts;
  for (const DiagnosticProbe& p : DiagnosticProbes(limits.max_m, limits.max_n, limits.max_k)) {
    __half *a = nullptr, *b = nullptr, *d = nullptr;
    std::string error;
    if (cudaMalloc(&a, p.a.size() * 2) != cudaSuccess || cudaMalloc(&b, p.b.size() * 2) != cudaSuccess ||
        cudaMalloc(&d, p.m * p.n * 2) != cudaSuccess) {
      error = "cannot allocate the probe";
    }
    std::vector<uint16_t> out(static_cast<size_t>(p.m * p.n));
    if (error.empty()) {
      cudaMemcpyAsync(a, p.a.data(), p.a.size() * 2, cudaMemcpyHostToDevice, stream);
      cudaMemcpyAsync(b, p.b.data(), p.b.size() * 2, cudaMemcpyHostToDevice, stream);
      Poison(d, out.size(), stream);
      error = launch(Problem{p.m, p.n, p.k, a, b, d, p.k, p.k, p.n});
    }
    if (error.empty()) {
      cudaMemcpyAsync(out.data(), d, out.size() * 2, cudaMemcpyDeviceToHost, stream);
      if (cudaError_t e = cudaStreamSynchronize(stream); e != cudaSuccess) error = cudaGetErrorString(e);
    }
    for (void* ptr : {static_cast<void*>(a), static_cast<void*>(b), static_cast<void*>(d)}) {
      if (ptr) cudaFree(ptr);
    }
    verdicts.push_back({p.name, error.empty() ? Diagnose(p, out).Summary() : "did not run: " + error});
    if (!error.empty()) break;
  }
  return verdicts;
}

std::string DiagnosisSummary(const std::vector<ProbeVerdict>& verdicts, size_t max_bytes) {
  std::set<std::string> seen;  // findings without their evidence: one probe's word for each
  std::string out;
  for (const auto& v : verdicts) {
    if (v.verdict == "exact") continue;
    std::string finding = v.verdict;
    for (size_t at; (at = finding.find(" (e.g. ")) != std::string::npos;) {
      const size_t end = finding.find(')', at);
      finding.erase(at, end == std::string::npos ? std::string::npos : end + 1 - at);
    }
    if (!seen.insert(finding).second) continue;
    const std::string item = v.probe + ": " + v.verdict;
    if (out.size() + item.size() + 2 > max_bytes) {
      out += out.empty() ? item.substr(0, max_bytes) : "; ...";
      break;
    }
    out += (out.empty() ? "" : "; ") + item;
  }
  return out.empty() ? "every diagnostic probe exact" : out;
}

}  // namespace gemm
