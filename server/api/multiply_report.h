// A Multiply reply's report: the engine's verification result and phase
// times as gemm.v1's messages, so that the reply's timing adds up to the
// request as docs/service-path.md says.
#pragma once

#include <cstdint>

#include "engine/engine.h"
#include "gemm/v1/gemm.pb.h"

namespace gemmd {

// What was checked, how, and what was found (the mode only when a check ran;
// the fast check's vectors and sure error only for it).
void ReportVerification(const VerificationResult& v, gemm::v1::VerificationReport* report);

// The phases of a request: prepare and queue measured by the service,
// upload, download, kernel and verify by the engine, and compute the
// engine's time between its upload and its download (`engine_seconds` less
// both), which holds the repeats, the verification and the engine's own
// set-up and clean-up.
void ReportTiming(const PhaseSeconds& p, double prepare_seconds, double queue_seconds, double engine_seconds,
                  uint32_t batch_size, gemm::v1::Timing* timing);

}  // namespace gemmd
