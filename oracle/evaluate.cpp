// oracle/evaluate.cpp — running the recurrence of core/recurrence.hpp over
// every (batch, head) of a problem.
#include "oracle/evaluate.hpp"

#include "core/gdn2_form.hpp"
#include "core/parallel.hpp"
#include "oracle/scalar.hpp"

namespace deltaproof::oracle {
namespace {

template <class S>
struct HeadResult {
  Trajectory<S> trajectory;
  SequenceGradients<S> gradients;
  S loss = S(0);
};

}  // namespace

std::vector<std::string> output_names(const FixtureSpec&) { return {"o", "ht"}; }

std::vector<std::string> gradient_names(const FixtureSpec& spec) {
  std::vector<std::string> names;
  for (const auto& layout : input_layouts(spec)) names.push_back(gradient_name(layout.name));
  return names;
}

template <class S>
OracleOutput evaluate(const Problem& problem, bool with_gradients, int threads,
                      const GeneratorFaults& faults) {
  const FixtureSpec& s = problem.spec;
  const S scale = S(s.scale());
  const std::vector<SequenceRef> refs = sequences(s);
  std::vector<HeadResult<S>> heads(refs.size());
  parallel_for(static_cast<int>(heads.size()), threads, [&](int index) {
    const SequenceRef& r = refs[static_cast<std::size_t>(index)];
    const Sequence<S> x = cut_sequence<S>(problem, r);
    const Mat<S> dout = sequence_tokens<S>(s, problem.at("do"), s.V, r);
    const Mat<S> dht = sequence_state<S>(s, problem.at("dht"), r);
    HeadResult<S>& result = heads[static_cast<std::size_t>(index)];
    result.trajectory = forward(x, scale, with_gradients, faults);
    result.loss = loss(result.trajectory, dout, dht);
    if (with_gradients) {
      result.gradients = reverse(x, result.trajectory, dout, dht, scale, faults);
      result.trajectory.states.clear();
    }
  });

  OracleOutput out;
  auto& tensors = out.tensors;
  auto allocate = [&](const TensorLayout& layout) {
    tensors[layout.name].assign(static_cast<std::size_t>(shape_numel(layout.shape(s))), 0.0);
  };
  for (const auto& layout : output_layouts(s)) allocate(layout);
  const auto inputs = input_layouts(s);
  if (with_gradients)
    for (auto layout : inputs) {
      layout.name = gradient_name(layout.name);
      allocate(layout);
    }
  auto narrow = [](const S& x) { return to_double(x); };
  auto keep = [](const S& x) { return x; };
  // the gradients of g, b and w in gdn2 form, kept in S until they are folded
  // back into the op's own (core/gdn2_form.hpp)
  std::map<std::string, std::vector<S>> gates, keyed;
  if (with_gradients) {
    const auto size = [&](int heads, int width) {
      return static_cast<std::size_t>(s.B) * s.T * heads * width;
    };
    gates = {{"dg", std::vector<S>(size(s.value_heads(), s.K), S(0))},
             {"db", std::vector<S>(size(s.value_heads(), s.K), S(0))},
             {"dw", std::vector<S>(size(s.value_heads(), s.V), S(0))}};
    // dq and dk of a key head: its group's value heads summed in S, in order
    keyed = {{"dq", std::vector<S>(size(s.H, s.K), S(0))},
             {"dk", std::vector<S>(size(s.H, s.K), S(0))}};
  }
  S total = S(0);
  for (std::size_t n = 0; n < refs.size(); ++n) {
    const SequenceRef& ref = refs[n];
    const HeadResult<S>& r = heads[n];
    total += r.loss;
    store_sequence_tokens(s, r.trajectory.o, s.V, ref, tensors["o"], narrow);
    store_sequence_state(s, r.trajectory.ht, ref, tensors["ht"], narrow);
    if (!with_gradients) continue;
    const SequenceGradients<S>& d = r.gradients;
    if (ref.value_head % s.group() == 0) {  // the group's first value head
      store_sequence_tokens(s, d.dq, s.K, ref, keyed["dq"], keep, on_key_head("q"));
      store_sequence_tokens(s, d.dk, s.K, ref, keyed["dk"], keep, on_key_head("k"));
    } else {
      add_sequence_tokens(s, d.dq, s.K, ref, keyed["dq"]);
      add_sequence_tokens(s, d.dk, s.K, ref, keyed["dk"]);
    }
    store_sequence_tokens(s, d.dv, s.V, ref, tensors["dv"], narrow);
    store_sequence_tokens(s, d.dg, s.K, ref, gates["dg"], keep);
    store_sequence_tokens(s, d.db, s.K, ref, gates["db"], keep);
    store_sequence_tokens(s, d.dw, s.V, ref, gates["dw"], keep);
    store_sequence_state(s, d.dh0, ref, tensors["dh0"], narrow);
  }
  if (with_gradients) fold_gradients(s.op, s.K, s.V, gates);
  for (const auto* kept : {&keyed, &gates})
    for (const auto& [name, values] : *kept) {
      std::vector<double>& tensor = tensors.at(name);
      for (std::size_t i = 0; i < values.size(); ++i) tensor[i] = narrow(values[i]);
    }
  out.loss = to_double(total);
  return out;
}

template OracleOutput evaluate<double>(const Problem&, bool, int, const GeneratorFaults&);

OracleOutput evaluate_quad(const Problem& problem, bool with_gradients, int threads,
                           const GeneratorFaults& faults) {
  return evaluate<quad>(problem, with_gradients, threads, faults);
}

double loss_f64(const Problem& problem, int threads, const GeneratorFaults& faults) {
  return evaluate<double>(problem, false, threads, faults).loss;
}

std::vector<double> loss_f64_along(const Problem& problem, const std::string& tensor,
                                   const std::vector<double>& direction,
                                   const std::vector<double>& steps, int threads,
                                   const GeneratorFaults& faults) {
  const FixtureSpec& s = problem.spec;
  const double scale = s.scale();
  const std::vector<SequenceRef> refs = sequences(s);
  // the loss of sequence n at step i, at n * steps.size() + i
  std::vector<double> losses(refs.size() * steps.size());
  parallel_for(static_cast<int>(refs.size()), threads, [&](int index) {
    const SequenceRef& r = refs[static_cast<std::size_t>(index)];
    const Mat<double> dout = sequence_tokens<double>(s, problem.at("do"), s.V, r);
    const Mat<double> dht = sequence_state<double>(s, problem.at("dht"), r);
    for (std::size_t i = 0; i < steps.size(); ++i) {
      const Sequence<double> x = cut_sequence<double>(problem, r, {tensor, &direction, steps[i]});
      losses[static_cast<std::size_t>(index) * steps.size() + i] =
          loss(forward(x, scale, false, faults), dout, dht);
    }
  });
  // summed over the sequences in their order, as evaluate sums its loss
  std::vector<double> totals(steps.size(), 0.0);
  for (std::size_t n = 0; n < refs.size(); ++n)
    for (std::size_t i = 0; i < steps.size(); ++i) totals[i] += losses[n * steps.size() + i];
  return totals;
}

}  // namespace deltaproof::oracle
