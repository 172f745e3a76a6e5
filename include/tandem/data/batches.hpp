#pragma once
// Mini-batches: the example indices of one epoch, shuffled from a seeded
// generator (Fisher-Yates), cut into batches. The same seed gives the same
// order on every machine and thread count.

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "tandem/core/error.hpp"
#include "tandem/core/random.hpp"
#include "tandem/core/tensor.hpp"

namespace tandem::data {

// A permutation of [0, n).
inline std::vector<std::int64_t> shuffled_indices(std::int64_t n, generator& gen) {
  std::vector<std::int64_t> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), std::int64_t{0});
  if (n < 2) return order;
  tensor<std::int64_t> draws = integers<std::int64_t>({n}, 0, std::int64_t{1} << 62, gen);
  for (std::int64_t i = n - 1; i > 0; --i)
    std::swap(order[static_cast<std::size_t>(i)], order[static_cast<std::size_t>(draws.data()[i] % (i + 1))]);
  return order;
}

namespace detail {

// `order` cut into index tensors of `batch_size`, the last one shorter
// unless `drop_last`.
inline std::vector<tensor<std::int64_t>> cut_into_batches(const std::vector<std::int64_t>& order,
                                                          std::int64_t batch_size, bool drop_last) {
  const auto total = static_cast<std::int64_t>(order.size());
  std::vector<tensor<std::int64_t>> out;
  for (std::int64_t first = 0; first < total; first += batch_size) {
    std::int64_t count = std::min(batch_size, total - first);
    if (count < batch_size && drop_last) break;
    tensor<std::int64_t> index(shape{count});
    std::copy_n(order.begin() + first, count, index.data());
    out.push_back(index);
  }
  return out;
}

}  // namespace detail

// The batches of one epoch over `examples` examples, as index tensors for
// index_select: shuffled when a generator is given, the last one shorter
// unless `drop_last`.
inline std::vector<tensor<std::int64_t>> batches(std::int64_t examples, std::int64_t batch_size, generator* shuffle,
                                                 bool drop_last = false) {
  if (examples < 0 || batch_size <= 0)
    throw value_error("tandem::data::batches: need a positive batch size and a non-negative example count (got " +
                      std::to_string(batch_size) + " and " + std::to_string(examples) + ")");
  std::vector<std::int64_t> order(static_cast<std::size_t>(examples));
  if (shuffle) order = shuffled_indices(examples, *shuffle);
  else std::iota(order.begin(), order.end(), std::int64_t{0});
  return detail::cut_into_batches(order, batch_size, drop_last);
}

// One rank's batches for data-parallel training over `ranks` ranks: every
// rank draws the same epoch order (the same seed), padded by wrapping
// around to a multiple of `ranks`, and rank r takes every ranks-th example
// from the r-th (as PyTorch's DistributedSampler), cut into batches of
// `batch_size`. Each rank gets as many batches of the same sizes, so the
// ranks run the same number of steps, and step k's batches together are
// one batch of ranks * batch_size examples.
inline std::vector<tensor<std::int64_t>> distributed_batches(std::int64_t examples, std::int64_t batch_size,
                                                             generator* shuffle, int rank, int ranks,
                                                             bool drop_last = false) {
  if (ranks <= 0 || rank < 0 || rank >= ranks)
    throw value_error("tandem::data::distributed_batches: rank " + std::to_string(rank) + " of " +
                      std::to_string(ranks) + " ranks");
  if (examples < 0 || batch_size <= 0)
    throw value_error(
        "tandem::data::distributed_batches: need a positive batch size and a non-negative example count (got " +
        std::to_string(batch_size) + " and " + std::to_string(examples) + ")");
  std::vector<std::int64_t> order(static_cast<std::size_t>(examples));
  if (shuffle) order = shuffled_indices(examples, *shuffle);
  else std::iota(order.begin(), order.end(), std::int64_t{0});
  const std::int64_t per_rank = (examples + ranks - 1) / ranks;
  std::vector<std::int64_t> mine;
  for (std::int64_t k = 0; k < per_rank && examples > 0; ++k)
    mine.push_back(order[static_cast<std::size_t>((k * ranks + rank) % examples)]);
  return detail::cut_into_batches(mine, batch_size, drop_last);
}

}  // namespace tandem::data
