// oracle/forward_mode.cpp — forward-mode AD over (batch, head) sequences.
#include "oracle/forward_mode.hpp"

#include <algorithm>

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

// Adds `weight` to tangent n of every gdn2-form entry that the coordinate
// feeds: beta feeds a row of b and a row of w; gdn's scalar g a row of g.
void seed(Sequence<D>& x, const FixtureSpec& s, const HeadCoordinate& c, double weight, int n) {
  const std::string& name = c.layout->name;
  auto add = [&](Mat<D>& m, int row, int column) { m(row, column).tangent[n] += weight; };
  if (name == "q")
    add(x.q, c.row, c.column);
  else if (name == "k")
    add(x.k, c.row, c.column);
  else if (name == "v")
    add(x.v, c.row, c.column);
  else if (name == "b")
    add(x.b, c.row, c.column);
  else if (name == "w")
    add(x.w, c.row, c.column);
  else if (name == "h0")
    add(x.h0, c.row, c.column);
  else if (name == "g") {
    if (s.op == Op::gdn)
      for (int i = 0; i < s.K; ++i) add(x.g, c.row, i);
    else
      add(x.g, c.row, c.column);
  } else if (name == "beta") {
    for (int i = 0; i < s.K; ++i) add(x.b, c.row, i);
    for (int j = 0; j < s.V; ++j) add(x.w, c.row, j);
  }
}

std::size_t flat_offset(const FixtureSpec& s, const HeadCoordinate& c, int b, int h) {
  if (c.layout->is_state) return state_offset(s, b, h, c.row, c.column);
  return token_offset(s, c.layout->width, b, c.row, h, c.column);
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

// Runs one dual forward of (b, h) with the tangents already seeded in x and
// returns the tangent of L.
std::array<double, kTangents> tangent_of_loss(const Problem& p, Sequence<D>& x, int b, int h,
                                              const GeneratorFaults& faults) {
  const FixtureSpec& s = p.spec;
  const Mat<D> dout = head_tokens<D>(s, p.at("do"), s.V, 0, b, h);
  const Mat<D> dht = head_state<D>(s, p.at("dht"), b, h);
  const Trajectory<D> trajectory = forward(x, D(s.scale()), false, faults);
  const D total = loss(trajectory, dout, dht);
  return total.tangent;
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
  const int batches = static_cast<int>((coordinates.size() + kTangents - 1) / kTangents);
  const int heads = s.B * s.H;

  TensorMap gradient;
  for (const auto& layout : layouts)
    gradient[gradient_name(layout.name)].assign(
        static_cast<std::size_t>(shape_numel(layout.shape(s))), 0.0);

  parallel_for(heads * batches, threads, [&](int task) {
    const int head = task / batches;
    const int batch = task % batches;
    const int b = head / s.H;
    const int h = head % s.H;
    Sequence<D> x = head_sequence<D>(problem, b, h);
    const std::size_t first = static_cast<std::size_t>(batch) * kTangents;
    const std::size_t last = std::min(coordinates.size(), first + kTangents);
    for (std::size_t c = first; c < last; ++c)
      seed(x, s, coordinates[c], 1.0, static_cast<int>(c - first));
    const auto tangents = tangent_of_loss(problem, x, b, h, faults);
    // each coordinate belongs to exactly one task: no two tasks write one slot
    for (std::size_t c = first; c < last; ++c)
      gradient[gradient_name(coordinates[c].layout->name)][flat_offset(s, coordinates[c], b, h)] =
          tangents[c - first];
  });
  return gradient;
}

std::vector<double> forward_mode_directional(const Problem& problem,
                                             const std::vector<Direction>& directions, int threads,
                                             const GeneratorFaults& faults) {
  const FixtureSpec& s = problem.spec;
  const auto layouts = input_layouts(s);
  const int batches = static_cast<int>((directions.size() + kTangents - 1) / kTangents);
  const int heads = s.B * s.H;
  std::vector<std::array<double, kTangents>> partial(static_cast<std::size_t>(heads) * batches);

  parallel_for(heads * batches, threads, [&](int task) {
    const int head = task / batches;
    const int batch = task % batches;
    const int b = head / s.H;
    const int h = head % s.H;
    Sequence<D> x = head_sequence<D>(problem, b, h);
    const std::size_t first = static_cast<std::size_t>(batch) * kTangents;
    const std::size_t last = std::min(directions.size(), first + kTangents);
    for (std::size_t d = first; d < last; ++d) {
      const auto layout = std::find_if(layouts.begin(), layouts.end(), [&](const auto& l) {
        return l.name == directions[d].tensor;
      });
      const int rows = layout->is_state ? s.K : s.T;
      const int columns = layout->is_state ? s.V : layout->per_token();
      for (int r = 0; r < rows; ++r)
        for (int c = 0; c < columns; ++c) {
          const HeadCoordinate coordinate{&*layout, r, c};
          seed(x, s, coordinate, directions[d].values[flat_offset(s, coordinate, b, h)],
               static_cast<int>(d - first));
        }
    }
    partial[task] = tangent_of_loss(problem, x, b, h, faults);
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
