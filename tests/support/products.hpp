#pragma once
// A matrix product in double, the reference the tests of reduced-precision
// products (16-bit tensors, autocast) compare with.

#include <cstdint>
#include <vector>

#include "tandem/tandem.hpp"

namespace tandem::test {

// a (m x k) times b (k x n) in double, on the elements' values as they are.
template <class T>
std::vector<double> product_in_double(const tensor<T>& a, const tensor<T>& b) {
  std::vector<double> want;
  for (std::int64_t i = 0; i < a.shape(0); ++i)
    for (std::int64_t j = 0; j < b.shape(1); ++j) {
      double s = 0;
      for (std::int64_t p = 0; p < a.shape(1); ++p) s += static_cast<double>(a.at(i, p)) * static_cast<double>(b.at(p, j));
      want.push_back(s);
    }
  return want;
}

}  // namespace tandem::test
