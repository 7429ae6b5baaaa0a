#include "api/reply_senders.h"

#include "thread_name.h"

namespace gemmd {

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
  {
    std::lock_guard lock(mu_);
    for (auto& send : sends) queue_.push_back(std::move(send));
  }
  if (sends.size() == 1) {
    ready_.notify_one();
  } else {
    ready_.notify_all();
  }
}

void ReplySenders::Loop() {
  std::unique_lock lock(mu_);
  for (;;) {
    ready_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and nothing left to send
    auto send = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    send();
    lock.lock();
  }
}

}  // namespace gemmd
