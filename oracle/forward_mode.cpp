// oracle/forward_mode.cpp — forward-mode AD over (batch, head) sequences.
#include "oracle/forward_mode.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

#include "core/gdn2_form.hpp"
#include "core/parallel.hpp"
#include "oracle/dual.hpp"

namespace deltaproof::oracle {
namespace {

using D = Dual<double, kTangents>;

// One input coordinate seen from its (batch, head): the tensor, the token row
// (or state row i) and the column (channel, or state column j).
struct HeadCoordinate {
  const TensorLayout* layout;
  int row, column;
};

// The gdn2-form matrix of a sequence named `name` (core/gdn2_form.hpp).
Mat<D>& gdn2_matrix(Sequence<D>& x, std::string_view name) {
  for (auto [field, matrix] : {std::pair{"q", &x.q},
                               {"k", &x.k},
                               {"v", &x.v},
                               {"g", &x.g},
                               {"b", &x.b},
                               {"w", &x.w},
                               {"h0", &x.h0}})
    if (name == field) return *matrix;
  throw std::logic_error("no gdn2-form tensor named " + std::string(name));
}

// Adds `weight` to tangent n of every gdn2-form entry that the coordinate
// feeds (gdn2_tensors_fed): a scalar per token (beta, gdn's g) a whole row of
// each tensor it is broadcast to, any other coordinate its own entry.
void seed(Sequence<D>& x, const HeadCoordinate& c, double weight, int n) {
  const bool broadcast = !c.layout->is_state && c.layout->width == 0;
  for (std::string_view name : gdn2_tensors_fed(c.layout->name)) {
    Mat<D>& m = gdn2_matrix(x, name);
    if (broadcast)
      for (Eigen::Index i = 0; i < m.cols(); ++i) m(c.row, i).tangent[n] += weight;
    else
      m(c.row, c.column).tangent[n] += weight;
  }
}

std::size_t flat_offset(const FixtureSpec& s, const HeadCoordinate& c, const SequenceRef& r) {
  if (c.layout->is_state) return sequence_state_offset(s, r, c.row, c.column);
  return sequence_token_offset(s, c.layout->width, r, r.begin + c.row, c.column,
                               c.layout->key_heads);
}

// Every coordinate of one (batch, head), tensor by tensor.
std::vector<HeadCoordinate> head_coordinates(const FixtureSpec& s,
                                             const std::vector<TensorLayout>& layouts) {
  std::vector<HeadCoordinate> coordinates;
  for (const auto& layout : layouts) {
    const int rows = layout.is_state ? s.K : s.T;
    const int columns = layout.is_state ? s.V : layout.per_token();
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < columns; ++c) coordinates.push_back({&layout, r, c});
  }
  return coordinates;
}

// Runs one dual forward of a sequence with the tangents already seeded in x
// and returns the tangent of L.
std::array<double, kTangents> tangent_of_loss(const Problem& p, Sequence<D>& x,
                                              const SequenceRef& r, const GeneratorFaults& faults) {
  const FixtureSpec& s = p.spec;
  const Mat<D> dout = sequence_tokens<D>(s, p.at("do"), s.V, r);
  const Mat<D> dht = sequence_state<D>(s, p.at("dht"), r);
  const Trajectory<D> trajectory = forward(x, D(s.scale()), false, faults);
  const D total = loss(trajectory, dout, dht);
  return total.tangent;
}

// Runs `body(task, r, first, last, x)` in parallel for every sequence r and
// every batch of kTangents of `count` seeds: x is the sequence for the body
// to seed seeds [first, last) into; task = sequence * batches + batch
// (tangent_batches(count) batches).
int tangent_batches(std::size_t count) {
  return static_cast<int>((count + kTangents - 1) / kTangents);
}
template <class Body>
void for_each_tangent_batch(const Problem& problem, std::size_t count, int threads, Body body) {
  const std::vector<SequenceRef> refs = sequences(problem.spec);
  const int batches = tangent_batches(count);
  parallel_for(static_cast<int>(refs.size()) * batches, threads, [&](int task) {
    const SequenceRef& r = refs[static_cast<std::size_t>(task / batches)];
    const std::size_t first = static_cast<std::size_t>(task % batches) * kTangents;
    const std::size_t last = std::min(count, first + kTangents);
    Sequence<D> x = cut_sequence<D>(problem, r);
    body(task, r, first, last, x);
  });
}

}  // namespace

std::size_t input_coordinate_count(const FixtureSpec& spec) {
  std::size_t count = 0;
  for (const auto& layout : input_layouts(spec))
    count += static_cast<std::size_t>(shape_numel(layout.shape(spec)));
  return count;
}

TensorMap forward_mode_gradient(const Problem& problem, int threads,
                                const GeneratorFaults& faults) {
  const FixtureSpec& s = problem.spec;
  const auto layouts = input_layouts(s);
  const auto coordinates = head_coordinates(s, layouts);

  TensorMap gradient;
  for (const auto& layout : layouts)
    gradient[gradient_name(layout.name)].assign(
        static_cast<std::size_t>(shape_numel(layout.shape(s))), 0.0);

  for_each_tangent_batch(
      problem, coordinates.size(), threads,
      [&](int, const SequenceRef& r, std::size_t first, std::size_t last, Sequence<D>& x) {
        for (std::size_t c = first; c < last; ++c)
          seed(x, coordinates[c], 1.0, static_cast<int>(c - first));
        const auto tangents = tangent_of_loss(problem, x, r, faults);
        // each coordinate belongs to exactly one task: no two tasks write one slot
        for (std::size_t c = first; c < last; ++c)
          gradient[gradient_name(coordinates[c].layout->name)][flat_offset(s, coordinates[c], r)] =
              tangents[c - first];
      });
  return gradient;
}

std::vector<double> forward_mode_directional(const Problem& problem,
                                             const std::vector<Direction>& directions, int threads,
                                             const GeneratorFaults& faults) {
  const FixtureSpec& s = problem.spec;
  const auto layouts = input_layouts(s);
  const int batches = tangent_batches(directions.size());
  const int heads = static_cast<int>(sequences(s).size());
  std::vector<std::array<double, kTangents>> partial(static_cast<std::size_t>(heads) * batches);

  for_each_tangent_batch(
      problem, directions.size(), threads,
      [&](int task, const SequenceRef& seq, std::size_t first, std::size_t last, Sequence<D>& x) {
        for (std::size_t d = first; d < last; ++d) {
          const auto layout = std::find_if(layouts.begin(), layouts.end(), [&](const auto& l) {
            return l.name == directions[d].tensor;
          });
          const int rows = layout->is_state ? s.K : seq.length();
          const int columns = layout->is_state ? s.V : layout->per_token();
          for (int r = 0; r < rows; ++r)
            for (int c = 0; c < columns; ++c) {
              const HeadCoordinate coordinate{&*layout, r, c};
              seed(x, coordinate, directions[d].values[flat_offset(s, coordinate, seq)],
                   static_cast<int>(d - first));
            }
        }
        partial[task] = tangent_of_loss(problem, x, seq, faults);
      });

  // heads summed in a fixed order: the same bits for any thread count
  std::vector<double> derivatives(directions.size(), 0.0);
  for (std::size_t d = 0; d < directions.size(); ++d) {
    const int batch = static_cast<int>(d / kTangents);
    for (int head = 0; head < heads; ++head)
      derivatives[d] += partial[static_cast<std::size_t>(head) * batches + batch][d % kTangents];
  }
  return derivatives;
}

}  // namespace deltaproof::oracle
