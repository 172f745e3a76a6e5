// Collectives against what a single process computes from every rank's
// contribution: rank r contributes a tensor each rank can compute, so each
// checks the result on its own, in double, on sizes that hit SIMD tails and
// on strided views; then the errors ranks must all see when they disagree.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <tandem/dist.hpp>
#include <tandem/tandem.hpp>

#include "dist/same_on_every_rank.hpp"
#include "support/check.hpp"

using namespace tandem;
using dist::reduce_op;
using dist::reduce_op_name;

namespace {

const std::vector<std::int64_t> sizes{0, 1, 7, 17, test::largest_size};

// Rank r's contribution at element i.
double contribution(int r, std::int64_t i) { return std::sin(0.37 * static_cast<double>(i) + r) * (r + 1) + r; }

// As the element type holds it (integers: rounded, ten times larger).
template <class T>
T contribution_as(int r, std::int64_t i) {
  if constexpr (std::is_integral_v<T>) return static_cast<T>(std::round(10 * contribution(r, i)));
  else return static_cast<T>(contribution(r, i));
}

template <class T>
tensor<T> contribution_of(int r, std::int64_t n) {
  tensor<T> t(shape{n});
  for (std::int64_t i = 0; i < n; ++i) t.data()[i] = contribution_as<T>(r, i);
  return t;
}

template <class T>
double expected(reduce_op op, int ranks, std::int64_t i) {
  double sum = 0, high = -1e300, low = 1e300;
  for (int r = 0; r < ranks; ++r) {
    double v = static_cast<double>(contribution_as<T>(r, i));
    sum += v;
    high = std::max(high, v);
    low = std::min(low, v);
  }
  switch (op) {
    case reduce_op::sum: return sum;
    case reduce_op::mean: return sum / ranks;
    case reduce_op::max: return high;
    default: return low;
  }
}

template <class T>
bool near(T got, double want) {
  const double tol = std::is_same_v<T, float> ? 1e-5 : std::is_same_v<T, double> ? 1e-12 : 0;
  return std::abs(static_cast<double>(got) - want) <= tol * (1 + std::abs(want));
}

template <class T>
void check_all_reduce(reduce_op op) {
  const int me = dist::rank(), ranks = dist::world_size();
  for (std::int64_t n : sizes) {
    CAPTURE(n);
    tensor<T> x = contribution_of<T>(me, n);
    tensor<T> result = dist::all_reduce(x, op).wait();
    CHECK(result.storage() == x.storage());
    std::int64_t wrong = 0;
    // The contribution of element i does not depend on n.
    for (std::int64_t i = 0; i < n; i += (n > 1000 ? 997 : 1))
      if (!near(x.data()[i], expected<T>(op, ranks, i))) ++wrong;
    CHECK(wrong == 0);
    CHECK(test::same_on_every_rank(x));
  }
}

}  // namespace

TEST_CASE("dist: rank and world size, seen by every rank alike") {
  const int me = dist::rank(), ranks = dist::world_size();
  REQUIRE(ranks >= 1);
  tensor<std::int32_t> ids = dist::all_gather(full<std::int32_t>({}, me)).wait();
  REQUIRE(ids.shape() == shape{ranks});
  for (int r = 0; r < ranks; ++r) CHECK(ids.data()[r] == r);
}

TEST_CASE("dist::all_reduce: sum, mean, max and min against the ranks' contributions") {
  for (reduce_op op : {reduce_op::sum, reduce_op::mean, reduce_op::max, reduce_op::min}) {
    CAPTURE(reduce_op_name(op));
    check_all_reduce<float>(op);
    check_all_reduce<double>(op);
    if (op != reduce_op::mean) {
      check_all_reduce<std::int32_t>(op);
      check_all_reduce<std::int64_t>(op);
    }
  }
}

TEST_CASE("dist::all_reduce into a strided view writes the view and nothing else") {
  const int me = dist::rank(), ranks = dist::world_size();
  tensor<double> base = full<double>({6, 4}, -7.0);
  // Columns 1 and 3 of the transposed base: a view with strides (1, 8).
  tensor<double> view = base.transpose(0, 1).slice(0, 1, 4, 2);
  REQUIRE_FALSE(view.is_contiguous());
  view.assign(full<double>({}, me + 1.0));
  dist::all_reduce(view).wait();
  const double total = ranks * (ranks + 1) / 2.0;
  for (std::int64_t i = 0; i < 6; ++i)
    for (std::int64_t j = 0; j < 4; ++j) CHECK(base.at(i, j) == (j % 2 == 1 ? total : -7.0));
}

TEST_CASE("dist::broadcast: every rank gets the root's tensor, in place, also through a view") {
  const int me = dist::rank(), ranks = dist::world_size();
  for (int root : {0, ranks - 1}) {
    for (std::int64_t n : sizes) {
      tensor<float> x = contribution_of<float>(me, n);
      dist::broadcast(x, root).wait();
      tensor<float> want = contribution_of<float>(root, n);
      CHECK(std::equal(x.data(), x.data() + n, want.data()));
    }
  }
  tensor<std::int64_t> base = full<std::int64_t>({3, 5}, me);
  dist::broadcast(base.slice(1, 0, 5, 2), ranks - 1).wait();
  for (std::int64_t i = 0; i < 3; ++i)
    for (std::int64_t j = 0; j < 5; ++j) CHECK(base.at(i, j) == (j % 2 == 0 ? ranks - 1 : me));
}

TEST_CASE("dist::all_gather concatenates the ranks' tensors along axis 0, in rank order") {
  const int me = dist::rank(), ranks = dist::world_size();
  for (std::int64_t n : sizes) {
    tensor<double> x = contribution_of<double>(me, n).reshape({n, 1});
    tensor<double> all = dist::all_gather(x).wait();
    REQUIRE(all.shape() == shape{ranks * n, 1});
    bool equal = true;
    for (int r = 0; r < ranks; ++r) {
      tensor<double> want = contribution_of<double>(r, n);
      equal = equal && std::equal(want.data(), want.data() + n, all.data() + r * n);
    }
    CHECK(equal);
  }
  // A strided input is gathered by value.
  tensor<float> base = full<float>({4, 3}, static_cast<float>(me));
  tensor<float> column = dist::all_gather(base.transpose(0, 1).slice(0, 1, 2)).wait();
  CHECK(column.shape() == shape{ranks, 4});
  for (int r = 0; r < ranks; ++r) CHECK(column.at(r, 3) == static_cast<float>(r));
}

TEST_CASE("dist::reduce_scatter: the combined tensor, split along axis 0, part r on rank r") {
  const int me = dist::rank(), ranks = dist::world_size();
  for (reduce_op op : {reduce_op::sum, reduce_op::mean, reduce_op::max}) {
    for (std::int64_t rows : {std::int64_t{1}, std::int64_t{3}, std::int64_t{257}}) {
      const std::int64_t n = rows * ranks;
      tensor<double> x = contribution_of<double>(me, n * 2).reshape({n, 2});
      tensor<double> part = dist::reduce_scatter(x, op).wait();
      REQUIRE(part.shape() == shape{rows, 2});
      std::int64_t wrong = 0;
      for (std::int64_t k = 0; k < rows * 2; ++k)
        if (!near(part.data()[k], expected<double>(op, ranks, me * rows * 2 + k))) ++wrong;
      CHECK(wrong == 0);
    }
  }
}

TEST_CASE("dist: collectives run in the background until waited for, in any order") {
  const int me = dist::rank(), ranks = dist::world_size();
  tensor<float> a = full<float>({100000}, me + 1.0f), b = full<float>({3}, 2.0f * me);
  auto first = dist::all_reduce(a);
  auto second = dist::all_reduce(b, reduce_op::max);
  CHECK(second.wait().data()[2] == 2.0f * (ranks - 1));
  while (!first.ready()) {
  }
  CHECK(first.wait().data()[99999] == ranks * (ranks + 1) / 2.0f);
  {
    // Dropped without a wait: the destructor waits, and the result is there.
    tensor<float> c = full<float>({5}, 1.0f);
    auto dropped = dist::all_reduce(c);
    (void)dropped;
  }
}

TEST_CASE("dist: ranks that disagree all get one error naming the ranks and what each called") {
  const int me = dist::rank(), ranks = dist::world_size();
  if (ranks < 2) return;
  auto message_of = [](auto&& call) {
    try {
      call();
    } catch (const error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  std::string shapes = message_of([&] { dist::all_reduce(full<float>({me == 1 ? 4 : 3}, 1.0f)).wait(); });
  CHECK(shapes.find("tandem::dist::all_reduce: the ranks disagree: rank 0 calls all_reduce(float32[3], sum), "
                    "rank 1 calls all_reduce(float32[4], sum)") != std::string::npos);
  std::string types = message_of([&] {
    if (me == 1) dist::all_reduce(full<double>({3}, 1.0)).wait();
    else dist::all_reduce(full<float>({3}, 1.0f)).wait();
  });
  CHECK(types.find("rank 1 calls all_reduce(float64[3], sum)") != std::string::npos);
  std::string ops = message_of([&] {
    if (me == 1) dist::broadcast(full<float>({3}, 1.0f), 0).wait();
    else dist::all_reduce(full<float>({3}, 1.0f), reduce_op::max).wait();
  });
  CHECK(ops.find("rank 0 calls all_reduce(float32[3], max), rank 1 calls broadcast(float32[3], root 0)") !=
        std::string::npos);
  std::string roots = message_of([&] { dist::broadcast(full<float>({2}, 1.0f), me == 1 ? 1 : 0).wait(); });
  CHECK(roots.find("rank 1 calls broadcast(float32[2], root 1)") != std::string::npos);
  // After the errors the ranks are in step: a collective still meets.
  CHECK(dist::all_reduce(full<float>({}, 1.0f)).wait().item() == static_cast<float>(ranks));
}

TEST_CASE("dist: arguments no rank could run with throw before anything is sent") {
  const int ranks = dist::world_size();
  CHECK_THROWS_WITH_AS(dist::broadcast(full<float>({2}, 1.0f), ranks), doctest::Contains("is not a rank of"),
                       value_error);
  if (ranks > 1)
    CHECK_THROWS_WITH_AS(dist::reduce_scatter(full<float>({ranks + 1, 2}, 1.0f)),
                         doctest::Contains("does not split along axis 0"), shape_error);
  CHECK_THROWS_WITH_AS(dist::reduce_scatter(full<float>({}, 1.0f)), doctest::Contains("does not split along axis 0"),
                       shape_error);
  CHECK_THROWS_WITH_AS(dist::all_reduce(full<std::int32_t>({2}, 1), reduce_op::mean),
                       doctest::Contains("the mean of an integer tensor"), value_error);
  tensor<float> weight = full<float>({2}, 1.0f);
  weight.set_requires_grad(true);
  CHECK_THROWS_WITH_AS(dist::all_reduce(weight), doctest::Contains("cannot be written in place while recording"), error);
  {
    no_grad plain;
    CHECK(dist::all_reduce(weight).wait().data()[0] == static_cast<float>(ranks));
  }
}
