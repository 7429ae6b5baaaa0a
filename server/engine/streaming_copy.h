// A copy whose stores bypass the CPU caches. A big copy with ordinary stores
// (a request's bytes into pinned staging, or D out of it) costs three passes
// over memory: read the source, read each destination line for ownership,
// write it back. Streaming stores skip the middle one. glibc's memcpy
// streams only past a threshold of about the last-level cache, and a
// staging chunk split over the copy threads is far below it, so the big
// copies ask for it here.
#pragma once

#include <cstddef>

namespace gemmd {

// memcpy(dst, src, bytes) with non-temporal stores where the CPU has them
// (x86-64: SSE2, which every x86-64 CPU has); elsewhere plain memcpy. The
// stores are fenced before it returns, so a later release (a mutex, an
// atomic) publishes them as it would ordinary ones.
void StreamingCopy(void* dst, const void* src, size_t bytes);

}  // namespace gemmd
