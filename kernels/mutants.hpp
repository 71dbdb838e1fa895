// kernels/mutants.hpp — the switch of mutant schemata (falsify/mutants.py,
// issue 16): a kernel source rewritten with every mutant compiled in, each
// behind DELTAPROOF_MUTANT(id), one (or none) switched on at run time. Every
// point also records that it was reached, so a mutant no gate reaches is
// reported NoCoverage without being run. Only the rewritten sources of a
// mutation run include this; the switch itself is in every build.
#pragma once

#include <vector>

namespace deltaproof::kernels {

// The mutant switched on (0: none): `gate run --mutant ID`, else
// DELTAPROOF_MUTANT in the environment.
int active_mutant();
void set_active_mutant(int id);

// A mutant's point, evaluated where the kernel reaches it: records the reach,
// true when `id` is the active mutant. Ids from 1 to kMaxMutantId.
inline constexpr int kMaxMutantId = 1 << 16;
bool mutant_point(int id);
// The points reached since the process started, ascending.
std::vector<int> reached_mutants();

// A CUDA translation unit's own copy of the switch (device code cannot call
// mutant_point; without relocatable device code each unit has its own
// __device__ copy): set_active_mutant pushes the id to every registered unit,
// reached_mutants pulls each unit's reach. Registered by the unit's static
// initializer (below, under __CUDACC__).
struct DeviceMutantHooks {
  void (*push)(int id);
  void (*pull)(std::vector<int>& reached);
};
bool register_device_mutant_hooks(DeviceMutantHooks hooks);

// No mutant while one lives (the bf16/tf32 noise ensemble, which must see the
// clean kernel): as kernels::FaultSuspended for the catalog's faults.
class MutantSuspended {
 public:
  MutantSuspended();
  ~MutantSuspended();
  MutantSuspended(const MutantSuspended&) = delete;
  MutantSuspended& operator=(const MutantSuspended&) = delete;

 private:
  int saved_;
};

}  // namespace deltaproof::kernels

#if defined(__CUDACC__)
#include <cuda_runtime.h>

namespace deltaproof::kernels::device_mutants {
namespace {  // this translation unit's copy

__device__ int active_id = 0;
__device__ unsigned int reached_words[kMaxMutantId / 32 + 1];

void push(int id) { cudaMemcpyToSymbol(active_id, &id, sizeof id); }

void pull(std::vector<int>& reached) {
  static unsigned int words[kMaxMutantId / 32 + 1];
  if (cudaMemcpyFromSymbol(words, reached_words, sizeof words) != cudaSuccess) return;
  for (int id = 1; id <= kMaxMutantId; ++id)
    if (words[id >> 5] & (1u << (id & 31))) reached.push_back(id);
}

const bool registered = register_device_mutant_hooks({&push, &pull});

}  // namespace

__host__ __device__ inline bool mutant_here(int id) {
#if defined(__CUDA_ARCH__)
  const unsigned int bit = 1u << (id & 31);
  unsigned int* word = &reached_words[id >> 5];
  if (!(*word & bit)) atomicOr(word, bit);  // a read first: the points sit in inner loops
  return id == active_id;
#else
  return ::deltaproof::kernels::mutant_point(id);
#endif
}

}  // namespace deltaproof::kernels::device_mutants

#define DELTAPROOF_MUTANT(id) (::deltaproof::kernels::device_mutants::mutant_here(id))
#else
#define DELTAPROOF_MUTANT(id) (::deltaproof::kernels::mutant_point(id))
#endif
