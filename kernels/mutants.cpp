// kernels/mutants.cpp — see mutants.hpp.
#include "kernels/mutants.hpp"

#include <array>
#include <atomic>
#include <cstdlib>
#include <mutex>

namespace deltaproof::kernels {
namespace {

std::atomic<int>& mutant() {
  static std::atomic<int> id = [] {
    const char* text = std::getenv("DELTAPROOF_MUTANT");
    return text ? std::atoi(text) : 0;
  }();
  return id;
}

std::array<std::atomic<bool>, kMaxMutantId + 1>& reached() {
  static std::array<std::atomic<bool>, kMaxMutantId + 1> points{};
  return points;
}

std::mutex& hooks_mutex() {
  static std::mutex m;
  return m;
}
std::vector<DeviceMutantHooks>& device_hooks() {
  static std::vector<DeviceMutantHooks> hooks;
  return hooks;
}

}  // namespace

bool register_device_mutant_hooks(DeviceMutantHooks hooks) {
  const std::lock_guard<std::mutex> lock(hooks_mutex());
  device_hooks().push_back(hooks);
  return true;
}

int active_mutant() { return mutant().load(std::memory_order_relaxed); }
void set_active_mutant(int id) {
  mutant().store(id, std::memory_order_relaxed);
  const std::lock_guard<std::mutex> lock(hooks_mutex());
  for (const auto& hooks : device_hooks()) hooks.push(id);
}

bool mutant_point(int id) {
  if (id > 0 && id <= kMaxMutantId) {
    auto& point = reached()[static_cast<std::size_t>(id)];
    // a load first: the points sit in the kernels' inner loops, shared by threads
    if (!point.load(std::memory_order_relaxed)) point.store(true, std::memory_order_relaxed);
  }
  return id > 0 && id == active_mutant();
}

std::vector<int> reached_mutants() {
  std::vector<int> device;
  {
    const std::lock_guard<std::mutex> lock(hooks_mutex());
    for (const auto& hooks : device_hooks()) hooks.pull(device);
  }
  for (int id : device)
    if (id > 0 && id <= kMaxMutantId) reached()[static_cast<std::size_t>(id)].store(true);
  std::vector<int> ids;
  for (int id = 1; id <= kMaxMutantId; ++id)
    if (reached()[static_cast<std::size_t>(id)].load(std::memory_order_relaxed)) ids.push_back(id);
  return ids;
}

MutantSuspended::MutantSuspended() : saved_(active_mutant()) { set_active_mutant(0); }
MutantSuspended::~MutantSuspended() { set_active_mutant(saved_); }

}  // namespace deltaproof::kernels
