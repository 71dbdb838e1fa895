// oracle/forward_mode.cpp — forward-mode AD over (batch, head) sequences.
#include "oracle/forward_mode.hpp"

#include <algorithm>
#include <array>
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

// Every coordinate of one sequence, tensor by tensor: its own tokens (a
// packed sequence's length) and its state.
std::vector<HeadCoordinate> sequence_coordinates(const FixtureSpec& s,
                                                 const std::vector<TensorLayout>& layouts,
                                                 const SequenceRef& r) {
  std::vector<HeadCoordinate> coordinates;
  for (const auto& layout : layouts) {
    const int rows = layout.is_state ? s.K : r.length();
    const int columns = layout.is_state ? s.V : layout.per_token();
    for (int row = 0; row < rows; ++row)
      for (int c = 0; c < columns; ++c) coordinates.push_back({&layout, row, c});
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

// One pass of the dual forward: seeds [first, last) of one sequence's
// `count(sequence)` seeds. The tasks run sequence by sequence (the order of
// sequences(spec)), so a sum over tasks in their order is a fixed order.
struct TangentTask {
  std::size_t sequence, first, last;
};
template <class Count>
std::vector<TangentTask> tangent_tasks(std::size_t sequence_count, Count count) {
  std::vector<TangentTask> tasks;
  for (std::size_t n = 0; n < sequence_count; ++n)
    for (std::size_t first = 0; first < count(n); first += kTangents)
      tasks.push_back({n, first, std::min(count(n), first + kTangents)});
  return tasks;
}

// Runs `body(i, tasks[i], r, x)` in parallel for every task: x is the task's
// sequence r for the body to seed the task's seeds into.
template <class Body>
void run_tangent_tasks(const Problem& problem, const std::vector<SequenceRef>& refs,
                       const std::vector<TangentTask>& tasks, int threads, Body body) {
  parallel_for(static_cast<int>(tasks.size()), threads, [&](int i) {
    const TangentTask& task = tasks[static_cast<std::size_t>(i)];
    const SequenceRef& r = refs[task.sequence];
    Sequence<D> x = cut_sequence<D>(problem, r);
    body(static_cast<std::size_t>(i), task, r, x);
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
  const std::vector<SequenceRef> refs = sequences(s);
  std::vector<std::vector<HeadCoordinate>> coordinates;
  for (const auto& r : refs) coordinates.push_back(sequence_coordinates(s, layouts, r));
  const auto tasks =
      tangent_tasks(refs.size(), [&](std::size_t n) { return coordinates[n].size(); });

  std::vector<std::array<double, kTangents>> tangents(tasks.size());
  run_tangent_tasks(
      problem, refs, tasks, threads,
      [&](std::size_t i, const TangentTask& task, const SequenceRef& r, Sequence<D>& x) {
        for (std::size_t c = task.first; c < task.last; ++c)
          seed(x, coordinates[task.sequence][c], 1.0, static_cast<int>(c - task.first));
        tangents[i] = tangent_of_loss(problem, x, r, faults);
      });

  // Gathered in task order: a key head's q and k coordinates are seen by each
  // value head of its group and summed in ascending value head, as the
  // oracle's dq and dk are; every other coordinate belongs to one task.
  TensorMap gradient;
  for (const auto& layout : layouts)
    gradient[gradient_name(layout.name)].assign(
        static_cast<std::size_t>(shape_numel(layout.shape(s))), 0.0);
  for (std::size_t t = 0; t < tasks.size(); ++t) {
    const TangentTask& task = tasks[t];
    for (std::size_t c = task.first; c < task.last; ++c) {
      const HeadCoordinate& coordinate = coordinates[task.sequence][c];
      gradient[gradient_name(coordinate.layout->name)]
              [flat_offset(s, coordinate, refs[task.sequence])] += tangents[t][c - task.first];
    }
  }
  return gradient;
}

std::vector<double> forward_mode_directional(const Problem& problem,
                                             const std::vector<Direction>& directions, int threads,
                                             const GeneratorFaults& faults) {
  const FixtureSpec& s = problem.spec;
  const auto layouts = input_layouts(s);
  const std::vector<SequenceRef> refs = sequences(s);
  const auto tasks = tangent_tasks(refs.size(), [&](std::size_t) { return directions.size(); });

  std::vector<std::array<double, kTangents>> partial(tasks.size());
  run_tangent_tasks(
      problem, refs, tasks, threads,
      [&](std::size_t i, const TangentTask& task, const SequenceRef& seq, Sequence<D>& x) {
        for (std::size_t d = task.first; d < task.last; ++d) {
          const auto layout = std::find_if(layouts.begin(), layouts.end(), [&](const auto& l) {
            return l.name == directions[d].tensor;
          });
          const int rows = layout->is_state ? s.K : seq.length();
          const int columns = layout->is_state ? s.V : layout->per_token();
          for (int r = 0; r < rows; ++r)
            for (int c = 0; c < columns; ++c) {
              const HeadCoordinate coordinate{&*layout, r, c};
              seed(x, coordinate, directions[d].values[flat_offset(s, coordinate, seq)],
                   static_cast<int>(d - task.first));
            }
        }
        partial[i] = tangent_of_loss(problem, x, seq, faults);
      });

  // sequences summed in a fixed order: the same bits for any thread count
  std::vector<double> derivatives(directions.size(), 0.0);
  for (std::size_t t = 0; t < tasks.size(); ++t)
    for (std::size_t d = tasks[t].first; d < tasks[t].last; ++d)
      derivatives[d] += partial[t][d - tasks[t].first];
  return derivatives;
}

}  // namespace deltaproof::oracle
