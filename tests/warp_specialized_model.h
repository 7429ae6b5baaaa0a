// A CPU model of the sm_100a steps 7-10 barrier protocol. It runs the
// kernels' own role loops (sm100/warp_specialized_protocol.h) as actors,
// one thread each, over simulated mbarriers, shared-memory stages and TMEM
// accumulators, with a deterministic scheduler that lets exactly one event
// happen at a time in a seeded random order. The hardware's asynchronous
// work (TMA loads, the MMAs, the commits behind them) is queued and done
// later, also in random order (MMAs and commits of one issuing thread stay
// in order, as tcgen05 keeps them).
//
// A run fails on the first of: a deadlock (no actor can move and nothing
// is in flight), a stage refilled before every MMA that reads it finished,
// an MMA issued on a stage whose bytes have not landed, a TMEM accumulator
// overwritten before its writeback released it, a writeback reading an
// accumulator that is not complete, a CTA exiting with work in flight, or
// a tile of D not stored exactly once.
#pragma once

#include <cstdint>
#include <string>

#include "sm100/warp_specialized_protocol.h"

namespace gemm::sm100::model {

// A bug planted on purpose, to show that the model catches it.
struct Mutation {
  enum class Kind { kNone, kArrivalCount, kPhaseNotFlipped };
  Kind kind = Kind::kNone;
  Barrier barrier = Barrier::kTma2Mma;
  int delta = 0;  // kArrivalCount: added to every `barrier`'s init count
};

// Relative odds that the next event is each kind of actor's, or the
// hardware's; `peer` scales every actor of the pair's second CTA.
struct Schedule {
  uint64_t seed = 1;
  double producer = 1, mma = 1, writeback = 1, hardware = 1, peer = 1;
};

// The m×n×k problem (a batch of `entries` of them), and which of
// `clusters` persistent clusters to model.
struct ProblemSlice {
  int64_t m = 0, n = 0, k = 0;
  int clusters = 1, cluster = 0;
  int entries = 1;
};

struct Outcome {
  bool ok = false;
  std::string failure;  // the first violation, or who waited on what at a deadlock
  int64_t events = 0;   // actor and hardware events, for the test's report
  int tiles = 0, k_tiles = 0;
};

Outcome Run(const WarpSpecializedProtocol& protocol, const ProblemSlice& problem, const Schedule& schedule,
            const Mutation& mutation = {});

const char* BarrierName(Barrier b);

}  // namespace gemm::sm100::model
