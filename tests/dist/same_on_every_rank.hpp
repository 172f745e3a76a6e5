#pragma once
// The check every distributed test ends with: the ranks hold the same bits.

#include <algorithm>
#include <cstdint>

#include <tandem/dist.hpp>
#include <tandem/tandem.hpp>

namespace tandem::test {

// Whether every rank holds the same values in t, bit for bit (a collective:
// every rank calls it).
template <class T>
bool same_on_every_rank(const tensor<T>& t) {
  tensor<T> all = dist::all_gather(t.contiguous().reshape({-1})).wait();
  const std::int64_t n = t.numel();
  for (std::int64_t k = 0; k < all.numel(); ++k)
    if (all.data()[k] != all.data()[k % std::max<std::int64_t>(n, 1)]) return false;
  return true;
}

}  // namespace tandem::test
