#pragma once
// nn::embedding: a [count, dim] table whose rows are looked up by integer
// indices of any shape (the result has the indices' shape plus dim). Rows
// start normal(0, 1) from the generator given; a lookup's gradient adds
// into the rows it read.

#include <cstdint>
#include <string>

#include "tandem/core/random.hpp"
#include "tandem/graph/ops.hpp"
#include "tandem/nn/init.hpp"
#include "tandem/nn/module.hpp"
#include "tandem/ops/shape.hpp"

namespace tandem::detail {

// The table's rows at the indices, shaped as the indices plus the row: a
// function object with a name for the graph's node (graph/ops.hpp says
// why), in tandem::detail as the graph's own are (layer_call says why).
struct table_rows {
  template <class T, class I>
  tensor<T> operator()(const tensor<T>& table, const tensor<I>& index) const {
    shape out = index.shape();
    out.push_back(table.shape(1));
    return index_select(table, 0, index.reshape({-1})).reshape(out);
  }
  shape result_shape(const shape& table, shape index) const {
    index.push_back(table.size() == 2 ? table[1] : 0);
    return index;
  }
};

}  // namespace tandem::detail

namespace tandem::nn {

template <floating_element T = float>
class embedding : public module<embedding<T>> {
 public:
  tensor<T> weight;

  embedding(std::int64_t count, std::int64_t dim, generator& gen) : weight(shape{check(count, dim), dim}) {
    init::normal_(weight, 0.0, 1.0, gen);
    this->register_parameter("weight", weight);
  }

  template <class I>
  auto forward(const I& indices) const {
    return tandem::detail::call_or_trace("embedding", tandem::detail::table_rows{}, weight, indices);
  }

 private:
  static std::int64_t check(std::int64_t count, std::int64_t dim) {
    if (count <= 0 || dim <= 0)
      throw value_error("tandem::nn::embedding: count and dim must be positive (got " + std::to_string(count) + ", " +
                        std::to_string(dim) + ")");
    return count;
  }
};

}  // namespace tandem::nn
