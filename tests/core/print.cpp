// Printing matches NumPy's str() character for character (golden strings
// produced by NumPy 1.26), so MindSpore's documented outputs come out the same.

#include <limits>
#include "support/check.hpp"

using namespace tandem;
using tandem::test::printed;

TEST_CASE("the seeds' outputs") {
  CHECK(printed(tensor<float>{5, 7, 9}) == "[5. 7. 9.]");
  CHECK(printed(full<float>({3, 3}, 1024)) == "[[1024. 1024. 1024.]\n [1024. 1024. 1024.]\n [1024. 1024. 1024.]]");
  CHECK(printed(tensor<float>{{9.02f, 5.4f, 7.2000003f}, {9.02f, 5.4f, 7.2000003f}}) ==
        "[[9.02      5.4       7.2000003]\n [9.02      5.4       7.2000003]]");
  CHECK(printed(tensor<float>{1, 1, 1}) == "[1. 1. 1.]");
}

TEST_CASE("floats: shared width, signs, shortest round-trip digits") {
  tensor<float> mixed{{1.2345418f, -2.9550533f, -1.4934675f}, {-1.3847915f, -0.39231718f, 0.8239876f}};
  CHECK(printed(mixed) == "[[ 1.2345418  -2.9550533  -1.4934675 ]\n [-1.3847915  -0.39231718  0.8239876 ]]");
  CHECK(printed(tensor<float>{-0.0f, 1.5f}) == "[-0.   1.5]");
  CHECK(printed((arange<double>(6) / 3.0).reshape({2, 3})) ==
        "[[0.         0.33333333 0.66666667]\n [1.         1.33333333 1.66666667]]");
  CHECK(printed(full<float>({}, 3.5)) == "3.5");
  CHECK(printed(full<float>({}, 7.2000003f)) == "7.2000003");
}

TEST_CASE("scientific notation when magnitudes are far apart") {
  CHECK(printed(tensor<double>{1e-5, 1.5, 100}) == "[1.0e-05 1.5e+00 1.0e+02]");
  CHECK(printed(tensor<float>{1e9f, 2.0f}) == "[1.e+09 2.e+00]");
}

TEST_CASE("non-finite values") {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  CHECK(printed(tensor<float>{nan, 1, -inf}) == "[ nan   1. -inf]");
}

TEST_CASE("integers and bools") {
  CHECK(printed(tensor<bool>{true, false, true}) == "[ True False  True]");
  CHECK(printed(tensor<std::int32_t>{{1, -20}, {300, 4}}) == "[[  1 -20]\n [300   4]]");
  CHECK(printed(tensor<float>(shape{0, 3})) == "[]");
}

TEST_CASE("nesting, wrapping and summaries") {
  CHECK(printed(arange<float>(8).reshape({2, 2, 2})) == "[[[0. 1.]\n  [2. 3.]]\n\n [[4. 5.]\n  [6. 7.]]]");
  CHECK(printed(linspace(0, 1, 30)) ==
        "[0.         0.03448276 0.06896552 0.10344828 0.13793103 0.1724138\n"
        " 0.20689656 0.2413793  0.27586207 0.31034482 0.3448276  0.37931034\n"
        " 0.41379312 0.44827586 0.4827586  0.51724136 0.55172414 0.5862069\n"
        " 0.62068963 0.6551724  0.6896552  0.7241379  0.7586207  0.79310346\n"
        " 0.82758623 0.86206895 0.8965517  0.9310345  0.9655172  1.        ]");
  CHECK(printed(arange(1001)) == "[   0    1    2 ...  998  999 1000]");
  CHECK(printed(arange<float>(2000).reshape({20, 100})) ==
        "[[0.000e+00 1.000e+00 2.000e+00 ... 9.700e+01 9.800e+01 9.900e+01]\n"
        " [1.000e+02 1.010e+02 1.020e+02 ... 1.970e+02 1.980e+02 1.990e+02]\n"
        " [2.000e+02 2.010e+02 2.020e+02 ... 2.970e+02 2.980e+02 2.990e+02]\n"
        " ...\n"
        " [1.700e+03 1.701e+03 1.702e+03 ... 1.797e+03 1.798e+03 1.799e+03]\n"
        " [1.800e+03 1.801e+03 1.802e+03 ... 1.897e+03 1.898e+03 1.899e+03]\n"
        " [1.900e+03 1.901e+03 1.902e+03 ... 1.997e+03 1.998e+03 1.999e+03]]");
}

TEST_CASE("print options") {
  print_options saved = get_print_options();
  print_options fewer = saved;
  fewer.precision = 3;
  set_print_options(fewer);
  CHECK(printed(tensor<float>{1.0f / 3, 2.0f / 3, 10}) == "[ 0.333  0.667 10.   ]");
  fewer = saved;
  fewer.threshold = 5;
  fewer.edge_items = 2;
  set_print_options(fewer);
  CHECK(printed(arange<std::int32_t>(10)) == "[0 1 ... 8 9]");
  fewer = saved;
  fewer.line_width = 20;
  set_print_options(fewer);
  CHECK(printed(arange<float>(8)) == "[0. 1. 2. 3. 4. 5.\n 6. 7.]");
  set_print_options(saved);
  CHECK(to_string(arange<std::int32_t>(10), fewer) == "[0 1 2 3 4 5 6 7 8\n 9]");
}
