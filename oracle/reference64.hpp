// oracle/reference64.hpp — the function and its gradients in f64 on the
// GPU (oracle/reference64.cu): DESIGN.md section 1 token by token and
// core/recurrence.hpp's reverse sweep, in double, one block per sequence. A
// reference at shapes whose CPU oracle would take hours (issue 13: B4 T4096
// H16 K=V=128, one sequence of T 32768), itself checked against the quad
// oracle on sampled sequences (oracle/sampled.hpp). Plain C++: host code
// includes it.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace deltaproof::oracle {

// A problem in gdn2 form (core/gdn2_form.hpp), FLA layout, host vectors.
struct Reference64Input {
  int B = 1, T = 1, H = 1, K = 1, V = 1;
  double scale = 1.0;
  std::vector<double> q, k, g, b;  // [B,T,H,K]
  std::vector<double> v, w;        // [B,T,H,V]
  std::vector<double> h0;          // [B,H,K,V]
  std::vector<double> d_o, dht;    // cotangents (backward only)
};

// o and ht; with the backward every gradient in gdn2 form (dg db over K, dw
// over V) and dh0.
struct Reference64Output {
  std::vector<double> o, ht, dq, dk, dg, db, dv, dw, dh0;
};

// Limits of the one-block-per-sequence layout: the state and a few vectors of
// doubles in shared memory.
struct Reference64Config {
  static constexpr int kThreads = 256;
  static constexpr int kMaxDim = 128;  // K and V at most
  static constexpr int kSegment = 64;  // tokens between the forward's checkpoints
};

// Runs on the current device; throws std::runtime_error with a sentence (a
// shape it cannot run, a size that does not match, a CUDA error).
Reference64Output run_reference64(const Reference64Input& in, bool backward);

// The forward of one problem, its inputs kept on the device across many
// evaluations that each replace some of them: the loss evaluations of gen's
// directional checks (oracle/gpu_reference.cpp). At B4 T4096 H16 K=V=128 an
// evaluation then uploads the one tensor that moved, not all seven (1.9 GB).
// Bit for bit run_reference64's forward on the same values.
class Reference64Session {
 public:
  explicit Reference64Session(const Reference64Input& in);  // validates and uploads
  ~Reference64Session();
  Reference64Session(const Reference64Session&) = delete;
  Reference64Session& operator=(const Reference64Session&) = delete;

  // A gdn2-form input (q k v g b w h0) replaced for one forward: values of its full size.
  struct Replacement {
    const char* name;
    const std::vector<double>* values;
  };
  // The number of values of a gdn2-form input; throws std::invalid_argument
  // for a name that is none.
  std::size_t size(const std::string& name) const;
  // o and ht with `replaced` in place of those inputs (the others as uploaded),
  // into o and ht (resized).
  void forward(const std::vector<Replacement>& replaced, std::vector<double>& o,
               std::vector<double>& ht);

 private:
  struct Device;
  std::unique_ptr<Device> device_;
};

}  // namespace deltaproof::oracle
