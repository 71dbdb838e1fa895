// core/parallel.hpp — a deterministic parallel loop: task i always computes the
// same thing whatever thread runs it, and results go to slots indexed by i, so
// the thread count never changes a bit of the output.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace deltaproof {

// 0 means "all hardware threads", or DELTAPROOF_THREADS where it is set (a
// mutation run's children share the machine: falsify mutate --parallel).
inline int resolve_threads(int requested) {
  if (requested > 0) return requested;
  if (const char* env = std::getenv("DELTAPROOF_THREADS"); env && std::atoi(env) > 0)
    return std::atoi(env);
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

inline void parallel_for(int num_tasks, int threads, const std::function<void(int)>& task) {
  threads = std::min(resolve_threads(threads), num_tasks);
  if (threads <= 1) {
    for (int i = 0; i < num_tasks; ++i) task(i);
    return;
  }
  std::atomic<int> next{0};
  std::exception_ptr failure;
  std::mutex failure_mutex;
  std::vector<std::thread> workers;
  for (int w = 0; w < threads; ++w) {
    workers.emplace_back([&] {
      for (int i = next++; i < num_tasks; i = next++) {
        try {
          task(i);
        } catch (...) {
          std::lock_guard<std::mutex> lock(failure_mutex);
          if (!failure) failure = std::current_exception();
        }
      }
    });
  }
  for (auto& worker : workers) worker.join();
  if (failure) std::rethrow_exception(failure);
}

}  // namespace deltaproof
