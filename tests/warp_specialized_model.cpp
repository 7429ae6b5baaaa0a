#include "warp_specialized_model.h"

#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <random>
#include <sstream>
#include <thread>
#include <tuple>
#include <vector>

namespace gemm::sm100::model {

const char* BarrierName(Barrier b) {
  switch (b) {
    case Barrier::kTma2Mma: return "tma2mma";
    case Barrier::kMma2Tma: return "mma2tma";
    case Barrier::kMma2Ld: return "mma2ld";
    case Barrier::kLd2Mma: return "ld2mma";
  }
  return "?";
}

namespace {

constexpr int kWarps = 4;  // of a writeback warpgroup: each warp arrives for its 32 threads
constexpr Barrier kAllBarriers[] = {Barrier::kTma2Mma, Barrier::kMma2Tma, Barrier::kMma2Ld, Barrier::kLd2Mma};

// The PTX ISA's mbarrier: a phase completes when its pending arrivals and
// its transaction bytes both reach zero; waits test the phase's parity.
struct MBarrier {
  int64_t count = 1, pending = 1, tx = 0, phase = 0;
  void Arrive() {
    if (--pending == 0 && tx == 0) Complete();
  }
  void CompleteTx(int64_t bytes) {
    tx -= bytes;
    if (pending == 0 && tx == 0) Complete();
  }
  void Complete() {
    ++phase;
    pending = count;
  }
  bool Passes(uint32_t parity) const { return static_cast<uint32_t>(phase & 1) != parity; }
};

struct Block {  // one 128×64 block of a stage in one CTA
  int64_t tag = -1;      // the (tile, k-tile) iteration it holds
  bool landing = false;  // a TMA write into it is in flight
  int reads_left = 0;    // MMAs that must still read this content
};

struct Accumulator {  // one TMEM slot in one CTA
  int tile = -1, k_issued = 0, k_done = 0, warps_released = 0;
};

struct MmaEvent {
  bool commit;
  Barrier barrier;  // commit
  int stage, consumer, slot, tile, kt;
};

struct TmaLoad {
  int cta, stage, block;
  int64_t tag;
};

enum class Role { kProducer, kMma, kWriteback };

struct Actor {
  Role role;
  int cta, consumer, warp;
  enum class State { kStarting, kWantsTurn, kRunning, kDone } state = State::kStarting;
  std::function<bool()> ready;
  std::string waiting_on;
};

struct Aborted {};

class Model;

// The operations the role loops call, each one event of the model.
class ModelOps {
 public:
  ModelOps(Model* model, int actor) : model_(model), actor_(actor) {}
  void Wait(Barrier b, int index, uint32_t parity);
  void LoadStage(int stage, int tile, int kt);
  void Mma(int stage, int consumer, int slot, int tile, int kt);
  void Commit(Barrier b, int index);
  void ReadChunk(int slot, int tile, int chunk);
  void ReleaseAccumulator(int slot);
  void StoreChunk(int consumer, int tile, int chunk);

 private:
  Model* model_;
  int actor_;
};

class Model {
 public:
  Model(const WarpSpecializedProtocol& p, const ProblemSlice& problem, const Schedule& schedule,
        const Mutation& mutation)
      : p_(p),
        problem_(problem),
        schedule_(schedule),
        mutation_(mutation),
        tiles_(p, problem.m, problem.n, problem.cluster, problem.clusters, problem.entries),
        k_tiles_(static_cast<int>((problem.k + common::kTileK - 1) / common::kTileK)),
        rng_(schedule.seed) {
    ctas_.resize(static_cast<size_t>(p.cta_group));
    for (auto& cta : ctas_) {
      for (Barrier b : kAllBarriers) {
        int64_t count = p.Arrivals(b);
        if (mutation.kind == Mutation::Kind::kArrivalCount && mutation.barrier == b) count += mutation.delta;
        if (count < 1) Fail(std::string(BarrierName(b)) + " initialised with " + std::to_string(count) +
                            " arrivals: the PTX ISA requires at least 1");
        cta.barriers[b].assign(static_cast<size_t>(p.Count(b)), MBarrier{count, count, 0, 0});
      }
      cta.stages.assign(static_cast<size_t>(p.stages), std::vector<Block>(static_cast<size_t>(p.consumers + 1)));
      cta.accumulators.resize(static_cast<size_t>(p.Slots()));
    }
    fifos_.resize(1);  // one issuing thread: its MMAs and commits complete in the order it issued them
    for (int r = 0; r < p.cta_group; ++r) {
      actors_.push_back({Role::kProducer, r, 0, 0});
      if (r == 0) actors_.push_back({Role::kMma, r, 0, 0});  // the one issuer, for every consumer
      for (int c = 0; c < p.consumers; ++c) {
        for (int w = 0; w < kWarps; ++w) actors_.push_back({Role::kWriteback, r, c, w});
      }
    }
    wakeups_.resize(actors_.size());
  }

  Outcome Run() {
    Outcome out;
    out.tiles = tiles_.count();
    out.k_tiles = k_tiles_;
    std::vector<std::thread> threads;
    if (failure_.empty()) {
      for (int a = 0; a < static_cast<int>(actors_.size()); ++a) threads.emplace_back([this, a] { ActorMain(a); });
      Schedule();
    }
    {
      std::lock_guard lock(mu_);
      abort_ = true;
    }
    WakeAll();
    for (auto& t : threads) t.join();
    out.ok = failure_.empty();
    out.failure = failure_;
    out.events = events_;
    return out;
  }

  // One event of actor `self`: waits until the scheduler picks it, which
  // it does only once `ready` holds, then does `action` alone.
  void Step(int self, std::function<bool()> ready, const std::function<void()>& action) {
    std::unique_lock lock(mu_);
    Actor& a = actors_[static_cast<size_t>(self)];
    a.ready = std::move(ready);
    a.state = Actor::State::kWantsTurn;
    turn_ = -1;
    sched_cv_.notify_one();
    wakeups_[static_cast<size_t>(self)].wait(lock, [&] { return turn_ == self || abort_; });
    if (abort_) throw Aborted{};
    a.state = Actor::State::kRunning;
    a.ready = nullptr;
    a.waiting_on.clear();
    ++events_;
    action();
  }

  // --- the events (under mu_, from ModelOps) ----------------------------------
  void Wait(int self, Barrier b, int index, uint32_t parity) {
    Actor& a = actors_[static_cast<size_t>(self)];
    if (mutation_.kind == Mutation::Kind::kPhaseNotFlipped && mutation_.barrier == b) {
      // As if the waiter's PipelineState never flipped: its starting parity.
      parity = b == Barrier::kMma2Tma || b == Barrier::kLd2Mma ? 1 : 0;
    }
    MBarrier* bar = &Bar(a.cta, b, index);
    std::ostringstream what;
    what << BarrierName(b) << "[" << index << "] of CTA " << a.cta << " for parity " << parity;
    a.waiting_on = what.str();
    Step(self, [bar, parity] { return bar->Passes(parity); }, [] {});
  }

  void LoadStage(int self, int stage, int tile, int kt) {
    Step(self, nullptr, [&] {
      const int r = actors_[static_cast<size_t>(self)].cta;
      int64_t m0, n0;
      int entry;  // the blocks inside a tile are the same in every entry
      tiles_.Origin(tile, &m0, &n0, &entry);
      const int64_t tag = Tag(tile, kt);
      if (r == 0) {  // the leader's arrive.expect_tx: bytes first, then the arrival
        MBarrier& full = Bar(0, Barrier::kTma2Mma, stage);
        full.tx += p_.StageTxBytes(problem_.m, problem_.n, m0, n0);
        full.Arrive();
      }
      for (int block = 0; block <= p_.consumers; ++block) {
        if (!InBounds(m0, n0, r, block)) continue;
        Block& blk = ctas_[static_cast<size_t>(r)].stages[static_cast<size_t>(stage)][static_cast<size_t>(block)];
        if (blk.reads_left > 0 || blk.landing) {
          std::ostringstream msg;
          msg << "the producer of CTA " << r << " refilled stage " << stage << " block " << block << " for tile "
              << tile << " k-tile " << kt << " while " << blk.reads_left << " MMA(s) had still to read iteration "
              << blk.tag << (blk.landing ? " (and a load was still landing)" : "");
          return Fail(msg.str());
        }
        blk.landing = true;
        tma_.push_back({r, stage, block, tag});
      }
    });
  }

  void Mma(int self, int stage, int consumer, int slot, int tile, int kt) {
    Step(self, nullptr, [&] {
      int64_t m0, n0;
      int entry;  // the blocks inside a tile are the same in every entry
      tiles_.Origin(tile, &m0, &n0, &entry);
      for (int g = 0; g < p_.cta_group; ++g) {
        for (int block : {consumer, p_.consumers}) {
          if (!InBounds(m0, n0, g, block)) continue;
          const Block& blk = ctas_[static_cast<size_t>(g)].stages[static_cast<size_t>(stage)][static_cast<size_t>(block)];
          if (blk.tag != Tag(tile, kt) || blk.landing) {
            std::ostringstream msg;
            msg << "consumer " << consumer << " issued its MMA for tile " << tile << " k-tile " << kt << " on stage "
                << stage << ", but CTA " << g << "'s block " << block << " holds iteration " << blk.tag
                << (blk.landing ? " with a load still landing" : "") << ", not " << Tag(tile, kt);
            return Fail(msg.str());
          }
        }
        Accumulator& acc = Acc(g, slot);
        if (kt == 0) {
          if (acc.tile >= 0 && acc.warps_released < kWarps) {
            std::ostringstream msg;
            msg << "consumer " << consumer << " began tile " << tile << " in TMEM slot " << slot << " of CTA " << g
                << " while the writeback had released only " << acc.warps_released << " of " << kWarps
                << " warps of tile " << acc.tile;
            return Fail(msg.str());
          }
          acc = Accumulator{tile, 0, 0, 0};
        } else if (acc.tile != tile || acc.k_issued != kt) {
          return Fail("an MMA for tile " + std::to_string(tile) + " accumulated into a slot holding tile " +
                      std::to_string(acc.tile));
        }
        ++acc.k_issued;
      }
      fifos_[static_cast<size_t>(actors_[static_cast<size_t>(self)].consumer)].push_back(
          {false, Barrier::kTma2Mma, stage, consumer, slot, tile, kt});
    });
  }

  void Commit(int self, Barrier b, int index) {
    Step(self, nullptr, [&] {
      const int consumer = actors_[static_cast<size_t>(self)].consumer;
      fifos_[static_cast<size_t>(consumer)].push_back({true, b, index, consumer, 0, 0, 0});
    });
  }

  void ReadChunk(int self, int slot, int tile, int chunk) {
    Step(self, nullptr, [&] {
      const Actor& a = actors_[static_cast<size_t>(self)];
      const Accumulator& acc = Acc(a.cta, slot);
      if (acc.tile != tile || acc.k_done != k_tiles_) {
        std::ostringstream msg;
        msg << "warp " << a.warp << " of CTA " << a.cta << "'s writeback " << a.consumer << " read chunk " << chunk
            << " of tile " << tile << " from TMEM slot " << slot << ", which holds tile " << acc.tile << " with "
            << acc.k_done << " of " << k_tiles_ << " k-tiles done";
        Fail(msg.str());
      }
    });
  }

  void ReleaseAccumulator(int self, int slot) {
    Step(self, nullptr, [&] {
      const Actor& a = actors_[static_cast<size_t>(self)];
      ++Acc(a.cta, slot).warps_released;
      MBarrier& bar = Bar(p_.cta_group == 2 ? 0 : a.cta, Barrier::kLd2Mma, slot);
      for (int thread = 0; thread < 32; ++thread) bar.Arrive();
    });
  }

  void StoreChunk(int self, int consumer, int tile, int chunk) {
    Step(self, nullptr, [&] { ++stores_[{actors_[static_cast<size_t>(self)].cta, consumer, tile, chunk}]; });
  }

 private:
  struct Cta {
    std::map<Barrier, std::vector<MBarrier>> barriers;
    std::vector<std::vector<Block>> stages;
    std::vector<Accumulator> accumulators;
  };

  void ActorMain(int self) {
    try {
      Step(self, nullptr, [] {});  // start when first picked
      const Actor a = actors_[static_cast<size_t>(self)];
      ModelOps ops(this, self);
      const int tiles = tiles_.count();
      if (a.role == Role::kProducer) ProduceStages(p_, tiles, k_tiles_, ops);
      if (a.role == Role::kMma) IssueMmas(p_, tiles, k_tiles_, ops);
      if (a.role == Role::kWriteback) WriteBack(p_, a.consumer, tiles, ops);
      std::lock_guard lock(mu_);
      actors_[static_cast<size_t>(self)].state = Actor::State::kDone;
      turn_ = -1;
      sched_cv_.notify_one();
    } catch (const Aborted&) {
    }
  }

  double Weight(const Actor& a) const {
    const double w = a.role == Role::kProducer ? schedule_.producer
                     : a.role == Role::kMma    ? schedule_.mma
                                               : schedule_.writeback;
    return a.cta == 1 ? w * schedule_.peer : w;
  }

  void Schedule() {
    std::unique_lock lock(mu_);
    for (;;) {
      sched_cv_.wait(lock, [&] { return turn_ == -1 && AllSettled(); });
      if (abort_ || !failure_.empty()) return;
      std::vector<int> ready;
      std::vector<double> weights;
      bool all_done = true;
      for (int i = 0; i < static_cast<int>(actors_.size()); ++i) {
        const Actor& a = actors_[static_cast<size_t>(i)];
        if (a.state != Actor::State::kDone) all_done = false;
        if (a.state == Actor::State::kWantsTurn && (!a.ready || a.ready())) {
          ready.push_back(i);
          weights.push_back(Weight(a));
        }
      }
      const bool hardware = !tma_.empty() || AnyFifo();
      if (hardware) {
        ready.push_back(-1);
        weights.push_back(schedule_.hardware);
      }
      if (ready.empty()) {
        if (all_done) return CheckEnd();
        return Deadlock();
      }
      const int pick = ready[std::discrete_distribution<size_t>(weights.begin(), weights.end())(rng_)];
      if (pick < 0) {
        ++events_;
        HardwareEvent();
        continue;
      }
      turn_ = pick;
      wakeups_[static_cast<size_t>(pick)].notify_one();
    }
  }

  // Every live actor has reached its next event (or ended).
  bool AllSettled() const {
    for (const Actor& a : actors_) {
      if (a.state == Actor::State::kRunning || a.state == Actor::State::kStarting) return false;
    }
    return true;
  }

  bool AnyFifo() const {
    for (const auto& f : fifos_) {
      if (!f.empty()) return true;
    }
    return false;
  }

  // One piece of the hardware's asynchronous work, chosen at random.
  void HardwareEvent() {
    std::vector<int> choices;  // -1 - i: TMA load i; c: the head of issuer c's queue
    for (int i = 0; i < static_cast<int>(tma_.size()); ++i) choices.push_back(-1 - i);
    for (int c = 0; c < static_cast<int>(fifos_.size()); ++c) {
      if (!fifos_[static_cast<size_t>(c)].empty()) choices.push_back(c);
    }
    const int pick = choices[std::uniform_int_distribution<size_t>(0, choices.size() - 1)(rng_)];
    if (pick < 0) {
      const TmaLoad load = tma_[static_cast<size_t>(-1 - pick)];
      tma_.erase(tma_.begin() + (-1 - pick));
      Block& blk = ctas_[static_cast<size_t>(load.cta)].stages[static_cast<size_t>(load.stage)][static_cast<size_t>(load.block)];
      blk = Block{load.tag, false, load.block == p_.consumers ? p_.consumers : 1};
      Bar(0, Barrier::kTma2Mma, load.stage).CompleteTx(common::kTileBytes);  // the leader's, for a pair
      return;
    }
    auto& fifo = fifos_[static_cast<size_t>(pick)];
    const MmaEvent e = fifo.front();
    fifo.pop_front();
    if (e.commit) {  // arrives in every CTA of the group (cta_mask 0b11 for a pair)
      for (int g = 0; g < p_.cta_group; ++g) Bar(g, e.barrier, e.stage).Arrive();
      return;
    }
    int64_t m0, n0;
    int entry;  // the blocks inside a tile are the same in every entry
    tiles_.Origin(e.tile, &m0, &n0, &entry);
    for (int g = 0; g < p_.cta_group; ++g) {
      for (int block : {e.consumer, p_.consumers}) {
        if (!InBounds(m0, n0, g, block)) continue;
        Block& blk = ctas_[static_cast<size_t>(g)].stages[static_cast<size_t>(e.stage)][static_cast<size_t>(block)];
        if (blk.tag != Tag(e.tile, e.kt) || blk.landing) {
          return Fail("an MMA for tile " + std::to_string(e.tile) + " found stage " + std::to_string(e.stage) +
                      " overwritten before it ran");
        }
        --blk.reads_left;
      }
      ++Acc(g, e.slot).k_done;
    }
  }

  void CheckEnd() {
    if (!tma_.empty() || AnyFifo()) return Fail("the CTAs exited with TMA loads or MMAs still in flight");
    for (size_t r = 0; r < ctas_.size(); ++r) {
      for (Barrier b : kAllBarriers) {
        for (const MBarrier& bar : ctas_[r].barriers[b]) {
          if (bar.pending != bar.count || bar.tx != 0) {
            return Fail("CTA " + std::to_string(r) + " exited with a phase of " + BarrierName(b) + " half-complete");
          }
        }
      }
    }
    for (int r = 0; r < p_.cta_group; ++r) {
      for (int c = 0; c < p_.consumers; ++c) {
        for (int t = 0; t < tiles_.count(); ++t) {
          for (int chunk = 0; chunk < p_.WritebackChunks(); ++chunk) {
            const auto it = stores_.find({r, c, t, chunk});
            if (it == stores_.end() || it->second != kWarps) {
              return Fail("chunk " + std::to_string(chunk) + " of tile " + std::to_string(t) + " was not stored once");
            }
          }
        }
      }
    }
  }

  void Deadlock() {
    std::ostringstream msg;
    msg << "deadlock after " << events_ << " events:";
    for (const Actor& a : actors_) {
      if (a.state == Actor::State::kDone) continue;
      const char* role = a.role == Role::kProducer ? "producer" : a.role == Role::kMma ? "MMA issuer" : "writeback";
      msg << " [" << role << " " << a.consumer << (a.role == Role::kWriteback ? " warp " + std::to_string(a.warp) : "")
          << " of CTA " << a.cta << " waits on " << a.waiting_on << "]";
    }
    Fail(msg.str());
  }

  void Fail(const std::string& why) {
    if (failure_.empty()) failure_ = why;
    abort_ = true;
    WakeAll();
  }

  void WakeAll() {
    for (auto& w : wakeups_) w.notify_all();
  }

  int64_t Tag(int tile, int kt) const { return int64_t{tile} * k_tiles_ + kt; }
  // Whether CTA r loads `block` (A blocks 0..consumers-1, then B) of the
  // cluster tile at (m0, n0): the device's test, from the same functions.
  bool InBounds(int64_t m0, int64_t n0, int r, int block) const {
    return block < p_.consumers ? p_.ARow(m0, r, block) < problem_.m : p_.BRow(n0, r) < problem_.n;
  }
  MBarrier& Bar(int cta, Barrier b, int index) {
    return ctas_[static_cast<size_t>(cta)].barriers[b][static_cast<size_t>(index)];
  }
  Accumulator& Acc(int cta, int slot) { return ctas_[static_cast<size_t>(cta)].accumulators[static_cast<size_t>(slot)]; }

  const WarpSpecializedProtocol p_;
  const ProblemSlice problem_;
  const model::Schedule schedule_;
  const Mutation mutation_;
  const ClusterTiles tiles_;
  const int k_tiles_;
  std::mt19937_64 rng_;

  std::mutex mu_;
  std::condition_variable sched_cv_;
  std::deque<std::condition_variable> wakeups_;  // one per actor: only the one picked wakes
  int turn_ = -1;
  bool abort_ = false;
  std::string failure_;
  int64_t events_ = 0;
  std::vector<Actor> actors_;
  std::vector<Cta> ctas_;
  std::vector<std::deque<MmaEvent>> fifos_;
  std::vector<TmaLoad> tma_;
  std::map<std::tuple<int, int, int, int>, int> stores_;
};

void ModelOps::Wait(Barrier b, int index, uint32_t parity) { model_->Wait(actor_, b, index, parity); }
void ModelOps::LoadStage(int stage, int tile, int kt) { model_->LoadStage(actor_, stage, tile, kt); }
void ModelOps::Mma(int stage, int consumer, int slot, int tile, int kt) {
  model_->Mma(actor_, stage, consumer, slot, tile, kt);
}
void ModelOps::Commit(Barrier b, int index) { model_->Commit(actor_, b, index); }
void ModelOps::ReadChunk(int slot, int tile, int chunk) { model_->ReadChunk(actor_, slot, tile, chunk); }
void ModelOps::ReleaseAccumulator(int slot) { model_->ReleaseAccumulator(actor_, slot); }
void ModelOps::StoreChunk(int consumer, int tile, int chunk) { model_->StoreChunk(actor_, consumer, tile, chunk); }

}  // namespace

Outcome Run(const WarpSpecializedProtocol& protocol, const ProblemSlice& problem, const Schedule& schedule,
            const Mutation& mutation) {
  return Model(protocol, problem, schedule, mutation).Run();
}

}  // namespace gemm::sm100::model
