// Recording and the backward engine: leaves and accumulation, no_grad and
// detach, backward twice, the version counter, memory over a long loop, and
// the errors.

#include "support/check.hpp"

using namespace tandem;

TEST_CASE("backward accumulates into leaves; zero_grad clears") {
  tensor<double> x{1, 2, 3};
  x.set_requires_grad();
  CHECK(x.is_leaf());
  auto y = sum(x * x);
  CHECK_FALSE(y.is_leaf());
  CHECK(y.requires_grad());
  y.backward();
  CHECK(x.grad().to_vector() == std::vector<double>{2, 4, 6});
  sum(x * 3.0).backward();
  CHECK(x.grad().to_vector() == std::vector<double>{5, 7, 9});
  x.zero_grad();
  CHECK_FALSE(x.has_grad());
  tensor<double> shared = x + 0.0;
  (shared + shared).backward(tensor<double>{1, 1, 1});
  CHECK(x.grad().to_vector() == std::vector<double>{2, 2, 2});
}

TEST_CASE("a leaf's gradient is its own buffer") {
  tensor<float> a{1, 2}, b{3, 4};
  a.set_requires_grad();
  b.set_requires_grad();
  sum(a + b).backward();
  CHECK(a.grad().storage() != b.grad().storage());
  tensor<float> c = ones({1});
  c.set_requires_grad();
  sum(c.expand({5})).backward();
  CHECK(c.grad().to_vector() == std::vector<float>{5});
}

TEST_CASE("no_grad and detach stop recording") {
  tensor<float> x = ones({3});
  x.set_requires_grad();
  {
    no_grad quiet;
    CHECK_FALSE(is_grad_enabled());
    CHECK_FALSE((x * 2).requires_grad());
    {
      enable_grad loud;
      CHECK((x * 2).requires_grad());
    }
  }
  CHECK(is_grad_enabled());
  CHECK_FALSE(x.detach().requires_grad());
  CHECK(x.detach().storage() == x.storage());
  tensor<float> y = x * 2;
  tensor<float> z = y.detach() * x;
  sum(z).backward();
  CHECK(x.grad().to_vector() == std::vector<float>{2, 2, 2});
}

TEST_CASE("ops on integers or without inputs that need gradients record nothing") {
  tensor<float> x = ones({2});
  CHECK_FALSE((x * 2).requires_grad());
  x.set_requires_grad();
  CHECK_FALSE((x > 0).requires_grad());
  CHECK_FALSE(argmax(x).requires_grad());
  CHECK_FALSE(x.astype<std::int32_t>().requires_grad());
}

TEST_CASE("backward twice: an error unless the graph was retained") {
  tensor<double> x{1, 2};
  x.set_requires_grad();
  auto y = sum(exp(x));
  y.backward({.retain_graph = true});
  y.backward();
  CHECK(x.grad().to_vector()[0] == doctest::Approx(2 * std::exp(1.0)));
  CHECK_THROWS_WITH_AS(y.backward(),
                       "tandem::backward: the graph through sum was freed by an earlier backward; pass retain_graph = "
                       "true to run backward through it twice",
                       error);
}

TEST_CASE("modifying a saved value in place makes backward refuse") {
  tensor<double> x{1, 2};
  x.set_requires_grad();
  tensor<double> w{3, 4};
  auto y = sum(x * w);
  w.fill(0);
  CHECK_THROWS_WITH_AS(y.backward(),
                       "tandem::backward: a tensor of shape [2] saved by mul was modified in place after it was saved "
                       "(version 0, now 1)",
                       error);
  auto fine = sum(x + w);
  w.fill(1);
  fine.backward();
  CHECK(x.grad().to_vector() == std::vector<double>{1, 1});
}

TEST_CASE("in-place writes to tensors that require gradients are refused while recording") {
  tensor<float> p = ones({2});
  p.set_requires_grad();
  CHECK_THROWS_WITH_AS(p += 1,
                       "tandem::assign: a tensor of shape [2] that requires a gradient cannot be written in place "
                       "while recording; use tandem::no_grad",
                       error);
  {
    no_grad update;
    p -= 0.5f;
  }
  CHECK(p.to_vector() == std::vector<float>{0.5, 0.5});
  CHECK_THROWS_AS(p.slice(0, 0, 1).fill(3), error);
}

TEST_CASE("memory stays flat over a long training loop") {
  generator gen(3);
  parameter<float> w(normal({16, 4}, 0, 0.1, gen), "w");
  parameter<float> b(zeros({4}), "b");
  tensor<float> inputs = normal({32, 16}, 0, 1, gen);
  tensor<std::int64_t> labels = integers({32}, 0, 4, gen);
  auto step = [&] {
    tensor<float> loss = cross_entropy(relu(matmul(inputs, w) + b), labels);
    loss.backward();
    no_grad update;
    w -= w.grad() * 0.1f;
    b -= b.grad() * 0.1f;
    w.zero_grad();
    b.zero_grad();
    return loss.item();
  };
  float first = step();
  for (int i = 0; i < 50; ++i) step();
  std::int64_t live = memory_stats().live_blocks;
  float last = 0;
  for (int i = 0; i < 3000; ++i) last = step();
  CHECK(memory_stats().live_blocks == live);
  CHECK(last < first);
}

TEST_CASE("autograd mistakes say what happened") {
  tensor<float> x{1, 2};
  CHECK_THROWS_WITH_AS(sum(x).backward(),
                       "tandem::backward: the tensor of shape [] does not require a gradient (no input of the ops that "
                       "made it requires one)",
                       error);
  x.set_requires_grad();
  CHECK_THROWS_WITH_AS((x * 2).backward(),
                       "tandem::backward: a tensor of shape [2] is not a scalar; pass a sensitivity of that shape",
                       shape_error);
  CHECK_THROWS_WITH_AS((x * 2).backward(ones({3})),
                       "tandem::backward: the sensitivity of shape [3] does not match the output of shape [2]",
                       shape_error);
  CHECK_THROWS_WITH_AS(tensor<float>{1}.grad(),
                       "tandem::grad: this tensor of shape [1] has no gradient (it is not a leaf that requires one, or "
                       "backward has not reached it)",
                       error);
  auto y = x * 2;
  CHECK_THROWS_WITH_AS(y.set_requires_grad(),
                       "tandem::set_requires_grad: a tensor computed from others (by mul) already follows its inputs; "
                       "call detach() first",
                       error);
}

TEST_CASE("parameters are named leaves") {
  parameter<double> z(tensor<double>{2.0}, "z");
  CHECK(z.requires_grad());
  CHECK(z.is_leaf());
  CHECK(z.name() == "z");
  tensor<double> alias = z;
  CHECK(alias.name() == "z");
  sum(z * 3.0).backward();
  CHECK(alias.grad().item() == 3.0);
}
