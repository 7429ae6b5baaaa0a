#include "api/reply_senders.h"

#include <chrono>

#include "thread_name.h"

namespace gemmd {
namespace {

constexpr auto kSpinBeforeSleep = std::chrono::microseconds(1000);

}  // namespace

ReplySenders::ReplySenders(unsigned threads) {
  for (unsigned i = 0; i < threads; ++i) {
    threads_.emplace_back([this] {
      NameThisThread("reply-sender");
      Loop();
    });
  }
}

ReplySenders::~ReplySenders() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  ready_.notify_all();
  for (auto& t : threads_) t.join();
}

void ReplySenders::Post(std::vector<std::function<void()>> sends) {
  if (sends.empty()) return;
  if (threads_.empty()) {
    for (auto& send : sends) send();
    return;
  }
  bool spinner = false;
  {
    std::lock_guard lock(mu_);
    for (auto& send : sends) queue_.push_back(std::move(send));
    queued_.store(queue_.size(), std::memory_order_release);
    spinner = spinners_ > 0;
  }
  if (sends.size() > 1) {
    ready_.notify_all();
  } else if (!spinner) {  // a spinning sender takes it by itself
    ready_.notify_one();
  }
}

void ReplySenders::Loop() {
  std::unique_lock lock(mu_);
  for (;;) {
    if (queue_.empty() && !stopping_ && spinners_ == 0) {
      ++spinners_;
      lock.unlock();
      const auto until = std::chrono::steady_clock::now() + kSpinBeforeSleep;
      while (queued_.load(std::memory_order_acquire) == 0 && std::chrono::steady_clock::now() < until) {
        std::this_thread::yield();
      }
      while (!lock.try_lock()) std::this_thread::yield();  // a blocking lock() sleeps in the kernel
      --spinners_;
    }
    ready_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and nothing left to send
    auto send = std::move(queue_.front());
    queue_.pop_front();
    queued_.store(queue_.size(), std::memory_order_release);
    // Posts woke no one while this sender spun: what else came meanwhile
    // must not wait for this send.
    if (!queue_.empty()) ready_.notify_one();
    lock.unlock();
    send();
    lock.lock();
  }
}

}  // namespace gemmd
