// A refusal no retry can turn into a success: a shape over the server's
// limits, a matrix larger than the whole quota. It is RESOURCE_EXHAUSTED,
// as a full queue is, and clients' retry policies retry that code; so it
// carries a mark, and the API layer answers it with gRPC's server pushback
// of "never" (grpc-retry-pushback-ms: -1, gRFC A6), which every gRPC
// client's retry policy obeys.
#pragma once

#include <absl/status/status.h>
#include <absl/strings/cord.h>

namespace gemmd {

inline constexpr char kPermanentRefusal[] = "type.googleapis.com/gemmd.PermanentRefusal";

inline absl::Status Permanent(absl::Status status) {
  status.SetPayload(kPermanentRefusal, absl::Cord("no retry can succeed"));
  return status;
}

inline bool IsPermanent(const absl::Status& status) { return status.GetPayload(kPermanentRefusal).has_value(); }

}  // namespace gemmd
