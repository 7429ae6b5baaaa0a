// The median of an engine's timed repeats: the kernel time both engines
// report (one slow repeat, a clock ramp or a preemption, does not move it).
#pragma once

#include <algorithm>
#include <vector>

namespace gemmd {

// `v` must not be empty; the mean of the middle two for an even count.
inline double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t mid = v.size() / 2;
  return v.size() % 2 ? v[mid] : 0.5 * (v[mid - 1] + v[mid]);
}

}  // namespace gemmd
