// matmul against a double-precision loop: 1-d, 2-d and batched operands,
// broadcasting, transposed and strided views, sizes around the micro-kernel
// tiles, integer types, and the errors.

#include "support/check.hpp"
#include "support/gradcheck.hpp"

using namespace tandem;
using tandem::test::check_values;

namespace {

template <class T>
std::vector<double> reference_matmul(const tensor<T>& a, const tensor<T>& b, std::int64_t m, std::int64_t k,
                                     std::int64_t n) {
  // Each operand's element is read once (at_broadcast follows any view),
  // then the product runs on plain arrays: an element read per
  // multiply-add made the large products' checks 40 s under the sanitizers.
  std::vector<double> left(static_cast<std::size_t>(m * k)), right(static_cast<std::size_t>(k * n));
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t p = 0; p < k; ++p) left[i * k + p] = test::at_broadcast(a, {i, p});
  for (std::int64_t p = 0; p < k; ++p)
    for (std::int64_t j = 0; j < n; ++j) right[p * n + j] = test::at_broadcast(b, {p, j});
  std::vector<double> out(static_cast<std::size_t>(m * n), 0);
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t p = 0; p < k; ++p)
      for (std::int64_t j = 0; j < n; ++j) out[i * n + j] += left[i * k + p] * right[p * n + j];
  return out;
}

}  // namespace

TEST_CASE_TEMPLATE("2-d products on sizes around the tiles, in every layout", T, float, double, std::int32_t,
                   std::int64_t) {
  std::uint64_t seed = 1;
  for (auto [m, k, n] : std::vector<std::array<std::int64_t, 3>>{
           {1, 1, 1}, {0, 3, 4}, {3, 0, 4}, {7, 17, 33}, {6, 32, 16}, {13, 300, 70}, {97, 5, 129}, {1, 700, 45},
           {2, 40, 37}}) {
    tensor<T> a = test::random_tensor<T>({m, k}, -2, 2, seed++);
    tensor<T> b = test::random_tensor<T>({k, n}, -2, 2, seed++);
    auto want = reference_matmul(a, b, m, k, n);
    for (auto& [la, xa] : test::layouts(a))
      for (auto& [lb, xb] : test::layouts(b))
        check_values(matmul(xa, xb), {m, n}, want, la + " x " + lb + " " + std::to_string(m) + "x" +
                     std::to_string(k) + "x" + std::to_string(n), 1e-5, 1e-4);
  }
}

TEST_CASE("a large product matches the reference") {
  tensor<float> a = test::random_tensor<float>({300, 517}, -1, 1, 3);
  tensor<float> b = test::random_tensor<float>({517, 260}, -1, 1, 4);
  check_values(matmul(a, b), {300, 260}, reference_matmul(a, b, 300, 517, 260), "300x517x260", 1e-4, 1e-4);
}

TEST_CASE("1-d operands and batches broadcast as in NumPy") {
  tensor<double> v{1, 2, 3};
  tensor<double> m = arange<double>(6).reshape({3, 2});
  CHECK(matmul(v, v).shape() == shape{});
  CHECK(matmul(v, v).item() == 14);
  CHECK(matmul(v, m).to_vector() == std::vector<double>{16, 22});
  CHECK(matmul(m.transpose(0, 1), v).to_vector() == std::vector<double>{16, 22});
  tensor<double> batch = arange<double>(2 * 2 * 3).reshape({2, 1, 2, 3});
  tensor<double> right = ones<double>({3, 3, 4});
  tensor<double> out = matmul(batch, right);
  CHECK(out.shape() == shape{2, 3, 2, 4});
  CHECK(out.at(1, 2, 1, 3) == 9 + 10 + 11);
  CHECK(matmul(batch, v).shape() == shape{2, 1, 2});
  auto mixed = matmul(tensor<std::int32_t>{{1, 2}}, tensor<float>{{0.5}, {0.25}});
  static_assert(std::is_same_v<decltype(mixed), tensor<float>>);
  CHECK(mixed.item() == 1.0f);
}

TEST_CASE("a batch of rows against one matrix: one product of all the rows, and the matrix's gradient") {
  // x [B, T, K] times w [K, N] (a layer's weight) folds the batch into the
  // rows when they lie evenly apart (contiguous, or a slice of the last
  // axis); a transposed batch does not fold and runs a product per batch.
  std::uint64_t seed = 40;
  for (auto [batches, rows, k, n] : std::vector<std::array<std::int64_t, 4>>{
           {2, 1, 1, 1}, {3, 7, 17, 5}, {2, 17, 7, 33}, {4, 0, 3, 2}, {5, 3, 0, 4}, {3, 40, 70, 129}}) {
    tensor<double> wide = test::random_tensor<double>({batches, rows, k + 2}, -1, 1, seed++);
    tensor<double> w = test::random_tensor<double>({k, n}, -1, 1, seed++);
    tensor<double> across = test::random_tensor<double>({rows, batches, k}, -1, 1, seed++);
    for (const tensor<double>& x : {wide.slice(2, 0, k).contiguous(), wide.slice(2, 1, k + 1), across.transpose(0, 1)}) {
      const std::string what = std::to_string(batches) + "x" + std::to_string(rows) + "x" + std::to_string(k) + " x " +
                               std::to_string(k) + "x" + std::to_string(n) + (x.is_contiguous() ? "" : ", x a view");
      std::vector<double> want;
      for (std::int64_t b = 0; b < batches; ++b) {
        auto one = reference_matmul(x.take(0, b, 1).squeeze(0), w, rows, k, n);
        want.insert(want.end(), one.begin(), one.end());
      }
      check_values(matmul(x, w), {batches, rows, n}, want, what, 1e-12, 1e-12);
      for (auto& [layout, wv] : test::layouts(w)) check_values(matmul(x, wv), {batches, rows, n}, want, what + ", w " + layout, 1e-12, 1e-12);
    }
  }
  // An axis of one element whose stride (four blocks of [5, 6]) is not the
  // span of the axes after it: the batches' rows are not evenly apart.
  tensor<double> spaced = test::random_tensor<double>({3, 4, 5, 6}, -1, 1, 57).take(1, 0, 1, 4);
  tensor<double> w6 = test::random_tensor<double>({6, 2}, -1, 1, 58);
  check_values(matmul(spaced, w6), matmul(spaced.contiguous(), w6), "a [3, 1, 5, 6] view every fourth block", 1e-12, 1e-12);
  test::check_gradients([](const auto& v) { return sum(square(matmul(v[0], v[1]))); },
                        {test::away_from_zero({3, 5, 4}, 50), test::away_from_zero({4, 6}, 51)}, "matmul([3, 5, 4], [4, 6])");
  test::check_gradients([](const auto& v) { return sum(square(matmul(v[0].transpose(0, 1), v[1]))); },
                        {test::away_from_zero({5, 3, 4}, 52), test::away_from_zero({4, 6}, 53)},
                        "matmul(a transposed batch, [4, 6])");
  // The weight's gradient as one deep product equals the per-batch
  // products summed.
  tensor<double> x = test::random_tensor<double>({4, 9, 6}, -1, 1, 54), g = test::random_tensor<double>({4, 9, 3}, -1, 1, 55);
  tensor<double> w = test::random_tensor<double>({6, 3}, -1, 1, 56).set_requires_grad(true);
  matmul(x, w).backward(g);
  tensor<double> want = zeros<double>({6, 3});
  for (std::int64_t b = 0; b < 4; ++b) want = want + matmul(x.take(0, b, 1).squeeze(0).transpose(0, 1), g.take(0, b, 1).squeeze(0));
  check_values(w.grad(), want, "the weight's gradient", 1e-12, 1e-12);
}

TEST_CASE("matmul mistakes name the shapes") {
  CHECK_THROWS_WITH_AS(matmul(zeros({2, 3}), zeros({4, 2})),
                       "tandem::matmul: inner dimensions must agree (shapes [2, 3] and [4, 2])", shape_error);
  CHECK_THROWS_WITH_AS(matmul(zeros({2, 2, 3}), zeros({3, 3, 4})),
                       "tandem::matmul: batch dimensions do not broadcast (shapes [2, 2, 3] and [3, 3, 4])",
                       shape_error);
  CHECK_THROWS_WITH_AS(matmul(zeros({}), zeros({3})),
                       "tandem::matmul: operands must have at least one axis (shapes [] and [3])", shape_error);
}

TEST_CASE("products whose A or B is packed by transposes, A read in place, or meets a one-batch B") {
  // Rows of A 2048 floats apart are packed (in place, they would share a
  // cache set), four steps of the depth at a time with a remainder (1030 =
  // blocks of 344, 344 and 342); 10 and 16 columns run one-batch tiles on AVX-512;
  // 25 rows end in a partial panel.
  tensor<float> wide = test::random_tensor<float>({13, 2048}, -1, 1, 11);
  tensor<float> a = wide.slice(1, 0, 1030);
  tensor<float> b = test::random_tensor<float>({1030, 70}, -1, 1, 12);
  check_values(matmul(a, b), {13, 70}, reference_matmul(a, b, 13, 1030, 70), "13x1030x70, rows 2048 apart", 1e-4,
               1e-4);
  // A transposed B (an MLP's G W^T) is packed by transposes too: 70
  // columns of full and partial panels, a depth of 23 (not four steps a
  // time); 14 rows end in a panel of two.
  tensor<float> g = test::random_tensor<float>({14, 23}, -1, 1, 15);
  tensor<float> w = test::random_tensor<float>({70, 23}, -1, 1, 16).transpose(0, 1);
  check_values(matmul(g, w), {14, 70}, reference_matmul(g, w, 14, 23, 70), "14x23x70, B transposed", 1e-5, 1e-5);
  for (std::int64_t n : {1, 10, 16, 17}) {
    tensor<float> x = test::random_tensor<float>({25, 20}, -1, 1, 13);
    tensor<float> y = test::random_tensor<float>({20, n}, -1, 1, 14);
    for (auto& [ly, view] : test::layouts(y))
      check_values(matmul(x, view), {25, n}, reference_matmul(x, view, 25, 20, n), "25x20x" + std::to_string(n) + " " + ly,
                   1e-5, 1e-5);
  }
}

TEST_CASE("matmul gives the same bits for any thread count") {
  // Three threads split the columns of a product with few rows (250) or
  // with A no larger than B (700 x 70 x 720), and the rows of a tall one
  // (700 x 70 x 300).
  for (const std::array<std::int64_t, 3>& shape : {std::array<std::int64_t, 3>{250, 300, 200},
                                                  std::array<std::int64_t, 3>{700, 70, 720},
                                                  std::array<std::int64_t, 3>{700, 70, 300}}) {
    // Named copies, not a structured binding: clang 14 cannot capture one
    // in INFO's lambda.
    const std::int64_t m = shape[0], k = shape[1], n = shape[2];
    INFO(m, "x", k, "x", n);
    tensor<float> a = test::random_tensor<float>({m, k}, -1, 1, 8);
    tensor<float> b = test::random_tensor<float>({k, n}, -1, 1, 9);
    set_num_threads(1);
    auto one = matmul(a, b).to_vector();
    set_num_threads(3);
    auto many = matmul(a, b).to_vector();
    set_num_threads(0);
    CHECK(one == many);
    const std::vector<double> want = reference_matmul(a, b, m, k, n);
    for (std::size_t i = 0; i < want.size(); ++i) REQUIRE(test::close(many[i], want[i], 1e-5, 1e-6 * k));
  }
}

TEST_CASE_TEMPLATE("a row of a product has the same bits with any number of rows beside it", T, float, double) {
  // One or two rows of A (a decoding step's product) stream B's rows in
  // place; three to five meet B's panels in place; more pack B. Columns
  // around whole and partial batches, a depth of several summation blocks,
  // B contiguous or a transposed view (then packed), any thread count.
  // (The first case checks one and two rows' values against the loop.)
  for (const std::int64_t n : {std::int64_t{13}, std::int64_t{45}, std::int64_t{200}}) {
    for (const std::int64_t k : {std::int64_t{7}, std::int64_t{1000}}) {
      const std::int64_t rows = 13;
      const tensor<T> a = test::random_tensor<T>({rows, k}, -1, 1, 50);
      const tensor<T> b = test::random_tensor<T>({k, n}, -1, 1, 51);
      const tensor<T> b_transposed = b.transpose(0, 1).contiguous().transpose(0, 1);
      const std::vector<T> all = matmul(a, b).to_vector();
      for (const int threads : {1, 3}) {
        set_num_threads(threads);
        for (std::int64_t m = 1; m <= 6; ++m) {
          INFO(m, "x", k, "x", n, ", ", threads, " threads");
          const tensor<T> some = a.take(0, rows - m, m);
          const std::vector<T> in_place = matmul(some, b).to_vector(), packed = matmul(some, b_transposed).to_vector();
          const std::vector<T> tail(all.end() - m * n, all.end());
          CHECK(in_place == tail);
          CHECK(packed == tail);
        }
      }
      set_num_threads(0);
    }
  }
}

TEST_CASE("the depth's passes over C and the blocks of B do not change a product's bits") {
  // 1000 steps are summed in 4 blocks of 250 whichever number of them one
  // pass over C covers, and B is packed in blocks of any number of panels
  // (the machine's caches decide both); 61 rows end in a panel of one row,
  // 45 columns in a partial tile. A is read in place (its rows contiguous)
  // or packed (a transposed view), and a pass's packed A serves several
  // blocks of B where they are three panels wide.
  using detail::gemm_shape;
  constexpr std::int64_t nr = gemm_shape<double>::nr;
  for (const std::int64_t n : {std::int64_t{45}, std::int64_t{7 * nr}}) {
    const std::int64_t m = 61, k = 1000;
    const tensor<double> a = test::random_tensor<double>({m, k}, -1, 1, 10);
    const tensor<double> a_by_columns = a.transpose(0, 1).contiguous();
    const tensor<double> b = test::random_tensor<double>({k, n}, -1, 1, 11);
    const std::vector<double> want = reference_matmul(a, b, m, k, n);
    std::vector<std::vector<double>> products;
    for (const bool a_packed : {false, true}) {
      const detail::strided_matrix<double> a_view =
          a_packed ? detail::strided_matrix<double>{a_by_columns.data(), 1, m}
                   : detail::strided_matrix<double>{a.data(), k, 1};
      for (const std::int64_t pass_blocks : {0, 1, 2, 3, 4}) {
        for (const std::int64_t columns_per_block : {std::int64_t{0}, nr, 3 * nr}) {
          INFO("A packed: ", a_packed, ", blocks per pass: ", pass_blocks, ", columns per block of B: ",
               columns_per_block, ", ", m, "x", k, "x", n);
          std::vector<double> c(static_cast<std::size_t>(m * n), -1.0);
          detail::gemm_blocks<gemm_shape<double>>(m, n, k, a_view, {b.data(), n, 1}, c.data(), n,
                                                  {nullptr, [](const void*, const detail::gemm_block&) {}},
                                                  pass_blocks, columns_per_block);
          for (std::size_t i = 0; i < c.size(); ++i) REQUIRE(test::close(c[i], want[i], 1e-12, 1e-12 * k));
          products.push_back(std::move(c));
        }
      }
    }
    for (const auto& c : products) CHECK(c == products.front());
  }
}

TEST_CASE("products of up to 12 columns, summed along the depth: tails, every layout, any thread count") {
  // Depths around the 16-step chunks (31 is below the narrow kernel, 32 its
  // least, 1300 and 2001 past the depth where AVX2 sums in pairs of rows),
  // rows around its 4-row tiles, columns in chunks of 1 to 4.
  std::uint64_t seed = 40;
  for (auto [m, k, n] : std::vector<std::array<std::int64_t, 3>>{{1, 32, 1},
                                                                  {5, 33, 12},
                                                                  {13, 100, 10},
                                                                  {4, 48, 4},
                                                                  {3, 31, 10},
                                                                  {7, 1000, 3},
                                                                  {130, 257, 7},
                                                                  {9, 1300, 11},
                                                                  {6, 2001, 1}}) {
    tensor<float> a = test::random_tensor<float>({m, k}, -1, 1, seed++);
    tensor<float> b = test::random_tensor<float>({k, n}, -1, 1, seed++);
    auto want = reference_matmul(a, b, m, k, n);
    const std::string size = std::to_string(m) + "x" + std::to_string(k) + "x" + std::to_string(n);
    for (auto& [la, xa] : test::layouts(a))
      for (auto& [lb, xb] : test::layouts(b))
        check_values(matmul(xa, xb), {m, n}, want, la + " x " + lb + " " + size, 1e-5, 1e-5);
  }
  // Each element is summed alike whatever the threads, and whatever A's
  // layout (rows in place, or packed from a transposed view).
  tensor<float> stored = test::random_tensor<float>({257, 130}, -1, 1, 60);
  tensor<float> b = test::random_tensor<float>({257, 10}, -1, 1, 61);
  const tensor<float> a = stored.transpose(0, 1);
  set_num_threads(1);
  const auto one = matmul(a, b).to_vector();
  set_num_threads(3);
  const auto many = matmul(a, b).to_vector();
  const auto in_place = matmul(a.contiguous(), b).to_vector();
  set_num_threads(0);
  CHECK(one == many);
  CHECK(one == in_place);
}

TEST_CASE("few columns with A a transposed view, C's rows in the lanes: the bits of A contiguous") {
  // A's stored rows a power of two long (an MLP's H^T) and not, inside a
  // wider buffer, rows below and around the 16- and 32-row tiles and their
  // tails, 1 to 12 columns (in chunks of up to 6 on AVX2, one chunk on
  // AVX-512; below 4 stored one float at a time), depths around 16, B
  // contiguous and a transposed view (copied into rows).
  std::uint64_t seed = 70;
  for (auto [m, k, n] : std::vector<std::array<std::int64_t, 3>>{{256, 128, 10},
                                                                  {16, 784, 9},
                                                                  {33, 47, 1},
                                                                  {31, 32, 3},
                                                                  {64, 100, 4},
                                                                  {50, 257, 7},
                                                                  {97, 64, 12},
                                                                  {40, 1300, 11}}) {
    const std::string size = std::to_string(m) + "x" + std::to_string(k) + "x" + std::to_string(n);
    tensor<float> wide = test::random_tensor<float>({k, m + 3}, -1, 1, seed++);
    const tensor<float> a = wide.slice(1, 1, m + 1).transpose(0, 1);
    const tensor<float> b = test::random_tensor<float>({k, n}, -1, 1, seed++);
    tensor<float> b_flipped = empty<float>({n, k});
    b_flipped.assign(b.transpose(0, 1));
    const tensor<float> contiguous_a = a.contiguous();
    const std::vector<double> want = reference_matmul(contiguous_a, b, m, k, n);
    const std::vector<float> in_place = matmul(contiguous_a, b).to_vector();
    for (const tensor<float>& b_view : {b, b_flipped.transpose(0, 1)}) {
      INFO(size, b_view.is_contiguous() ? ", B contiguous" : ", B transposed");
      check_values(matmul(a, b_view), {m, n}, want, size, 1e-5, 1e-5);
      CHECK(matmul(a, b_view).to_vector() == in_place);
    }
  }
}
