#pragma once
// An emulated GPU for tests: "cuda:0" in host memory (the stand-in runtime)
// with every slot that <tandem/cuda.hpp> fills filled by plain host loops
// over the same op structs and the same arguments (kernels/cuda/install.hpp
// lists them). With it, a g++ test program runs the host side of every GPU
// path (which slot is asked for, with which shapes, strides and offsets,
// what is recorded for autograd) on every machine; the CUDA kernels
// themselves run in tests/cuda where a GPU is.
//
// One translation unit of a program installs it, filling the program's
// slots for good (detail::device_kernels::install_all<emulated_backend>:
// instantiating every op's loops is most of what the emulation costs to
// compile); the program has no other use for them.

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <vector>

#include "support/check.hpp"
#include "support/stand_in_device.hpp"
#include "tandem/kernels/cuda/install.hpp"

namespace tandem::test {

inline std::int64_t offset_of(const std::vector<std::int64_t>& index, const detail::dims& strides) {
  std::int64_t offset = 0;
  for (std::size_t axis = 0; axis < index.size(); ++axis) offset += index[axis] * strides[axis];
  return offset;
}

template <class T>
T read_operand(const detail::device_operand<T>& in, const std::vector<std::int64_t>& index) {
  return in.data ? in.data[offset_of(index, in.strides)] : in.scalar;
}

struct emulated_backend {
  template <class R, class C, class Op, class... In>
  static void elementwise_loop(const Op& op, int, const shape& out_shape, R* out, const detail::dims& out_strides,
                               const detail::device_operand<In>&... in) {
    for_each_index(out_shape, [&](const std::vector<std::int64_t>& index) {
      out[offset_of(index, out_strides)] = static_cast<R>(op(static_cast<C>(read_operand(in, index))...));
    });
  }
  template <class R, class C, class Op, class... In>
  static detail::cuda_elementwise_kernel<R, C, Op, In...> elementwise() {
    return &elementwise_loop<R, C, Op, In...>;
  }

  template <class R, class C, class Op, std::size_t M, class... In>
  static void elementwise_outputs_loop(const Op& op, int, const shape& out_shape, const std::array<R*, M>& out,
                                       const detail::dims& out_strides, const detail::device_operand<In>&... in) {
    for_each_index(out_shape, [&](const std::vector<std::int64_t>& index) {
      const auto values = op(static_cast<C>(read_operand(in, index))...);
      const std::int64_t o = offset_of(index, out_strides);
      for (std::size_t k = 0; k < M; ++k) out[k][o] = static_cast<R>(values[k]);
    });
  }
  template <class R, class C, class Op, std::size_t M, class... In>
  static detail::cuda_elementwise_outputs_kernel<R, C, Op, M, In...> elementwise_outputs() {
    return &elementwise_outputs_loop<R, C, Op, M, In...>;
  }

  // One output reduced in the CUDA kernels' order (detail::
  // plan_device_reduction), so that a float sum rounds as it does there:
  // value(j) is the output's j-th element.
  template <class A, class Combine, class Value>
  static A fold_in_device_order(std::int64_t length, std::int64_t outputs, A identity, const Combine& combine,
                                const Value& value) {
    const detail::device_reduction_plan plan = detail::plan_device_reduction(outputs, length);
    // Arrays, not std::vector: A may be bool.
    auto halve = [&](A* partial, std::int64_t size) {
      for (std::int64_t half = size / 2; half > 0; half /= 2)
        for (std::int64_t t = 0; t < half; ++t) partial[t] = combine(partial[t], partial[t + half]);
      return partial[0];
    };
    std::unique_ptr<A[]> shares(new A[static_cast<std::size_t>(plan.combine_threads)]);
    std::unique_ptr<A[]> partial(new A[static_cast<std::size_t>(plan.threads)]);
    std::fill_n(shares.get(), plan.combine_threads, identity);
    for (std::int64_t s = 0; s < plan.splits; ++s) {
      std::fill_n(partial.get(), plan.threads, identity);
      for (std::int64_t j = s * plan.threads; j < length; j += plan.threads * plan.splits)
        for (std::int64_t t = 0; t < plan.threads && j + t < length; ++t) partial[t] = combine(partial[t], value(j + t));
      shares[s] = halve(partial.get(), plan.threads);
    }
    return plan.splits == 1 ? shares[0] : halve(shares.get(), plan.combine_threads);
  }

  template <class A, class R, class T, class Reducer>
  static void reduce_loop(const Reducer& reducer, int, const T* in, const shape& kept_shape,
                          const detail::dims& kept_strides, const shape& reduced_shape,
                          const detail::dims& reduced_strides, R* out, bool divide, const char*) {
    const std::int64_t length = numel(reduced_shape), outputs = numel(kept_shape);
    std::vector<std::int64_t> reduced_offsets;
    for_each_index(reduced_shape, [&](const std::vector<std::int64_t>& reduced) {
      reduced_offsets.push_back(offset_of(reduced, reduced_strides));
    });
    std::int64_t o = 0;
    for_each_index(kept_shape, [&](const std::vector<std::int64_t>& kept) {
      const T* base = in + offset_of(kept, kept_strides);
      const A total = fold_in_device_order<A>(length, outputs, Reducer::template identity<A>(), reducer,
                                              [&](std::int64_t j) {
                                                return static_cast<A>(base[reduced_offsets[static_cast<std::size_t>(j)]]);
                                              });
      out[o++] = static_cast<R>(divide ? total / static_cast<A>(length) : total);
    });
  }
  template <class A, class R, class T, class Reducer>
  static detail::cuda_reduce_kernel<A, R, T, Reducer> reduce() {
    return &reduce_loop<A, R, T, Reducer>;
  }

  // A fused summation's pass, in the CUDA kernel's order:
  // summand(op's result, kept, reduced) is what is summed at a position
  // (and where there are adjoints, it writes them).
  template <class R, class Op, class Summand, class... In>
  static void summing_loop(const Op& op, const shape& kept_shape, const shape& reduced_shape, R* out, bool divide,
                           const Summand& summand, const detail::split_operand<In>&... in) {
    const std::int64_t length = numel(reduced_shape), outputs = numel(kept_shape);
    std::vector<std::vector<std::int64_t>> positions;
    for_each_index(reduced_shape, [&](const std::vector<std::int64_t>& reduced) { positions.push_back(reduced); });
    std::int64_t o = 0;
    for_each_index(kept_shape, [&](const std::vector<std::int64_t>& kept) {
      auto value_at = [&](std::int64_t j) {
        const std::vector<std::int64_t>& reduced = positions[static_cast<std::size_t>(j)];
        auto read = [&](const auto& operand) {
          return operand.data ? operand.data[offset_of(kept, operand.kept_strides) +
                                             offset_of(reduced, operand.reduced_strides)]
                              : operand.scalar;
        };
        return summand(op(static_cast<R>(read(in))...), kept, reduced);
      };
      const R total = fold_in_device_order<R>(length, outputs, R(0), detail::sum_reducer{}, value_at);
      out[o++] = divide ? total / static_cast<R>(length) : total;
    });
  }
  template <class R, class Op, class... In>
  static void group_sum_loop(const Op& op, int, const shape& kept_shape, const shape& reduced_shape, R* out,
                             bool divide, const detail::split_operand<In>&... in) {
    auto value = [](const auto& v, const auto&, const auto&) { return static_cast<R>(v); };
    summing_loop(op, kept_shape, reduced_shape, out, divide, value, in...);
  }
  template <class R, class Op, std::size_t M, class... In>
  static void group_sum_adjoints_loop(const Op& op, int, const shape& kept_shape, const shape& reduced_shape, R* out,
                                      bool divide, const std::array<R*, M>& adjoints,
                                      const detail::dims& adjoint_kept_strides,
                                      const detail::dims& adjoint_reduced_strides,
                                      const detail::split_operand<In>&... in) {
    auto value_writing_adjoints = [&](const auto& values, const std::vector<std::int64_t>& kept,
                                      const std::vector<std::int64_t>& reduced) {
      const std::int64_t at = offset_of(kept, adjoint_kept_strides) + offset_of(reduced, adjoint_reduced_strides);
      for (std::size_t k = 0; k < M; ++k) adjoints[k][at] = static_cast<R>(values[k + 1]);
      return static_cast<R>(values[0]);
    };
    summing_loop(op, kept_shape, reduced_shape, out, divide, value_writing_adjoints, in...);
  }
  template <class R, class Op, std::size_t M, class... In>
  static detail::cuda_group_sum_adjoints_kernel<R, Op, M, In...> group_sum_adjoints() {
    return &group_sum_adjoints_loop<R, Op, M, In...>;
  }
  template <class R, class Op, class... In>
  static detail::cuda_group_sum_kernel<R, Op, In...> group_sum() {
    return &group_sum_loop<R, Op, In...>;
  }

  template <class T, bool Largest>
  static void arg_extreme_loop(int, const T* in, const shape& kept_shape, const detail::dims& kept_strides,
                               const shape& reduced_shape, const detail::dims& reduced_strides, std::int64_t* out,
                               const char*) {
    auto wins = [](T a, T b) {
      if constexpr (std::is_floating_point_v<T>) {
        if (b != b) return false;
        if (a != a) return true;
      }
      return Largest ? a > b : a < b;
    };
    std::int64_t o = 0;
    for_each_index(kept_shape, [&](const std::vector<std::int64_t>& kept) {
      const T* base = in + offset_of(kept, kept_strides);
      std::int64_t j = 0, best = 0;
      T best_value{};
      for_each_index(reduced_shape, [&](const std::vector<std::int64_t>& reduced) {
        const T v = base[offset_of(reduced, reduced_strides)];
        if (j == 0 || wins(v, best_value)) best = j, best_value = v;
        ++j;
      });
      out[o++] = best;
    });
  }
  template <class T, bool Largest>
  static detail::cuda_arg_extreme_kernel<T, Largest> arg_extreme() {
    return &arg_extreme_loop<T, Largest>;
  }

  template <class T>
  static void index_loop(int, const shape& space, std::int64_t axis, const std::int64_t* index,
                         const detail::dims& index_strides, const T* in, const detail::dims& in_strides, T* out,
                         const detail::dims& out_strides, bool scatter, const char*) {
    for_each_index(space, [&](const std::vector<std::int64_t>& p) {
      std::vector<std::int64_t> q = p;
      q[static_cast<std::size_t>(axis)] = index[offset_of(p, index_strides)];
      if (scatter) out[offset_of(q, out_strides)] += in[offset_of(p, in_strides)];
      else out[offset_of(p, out_strides)] = in[offset_of(q, in_strides)];
    });
  }
  template <class T>
  static detail::cuda_index_kernel<T> index() {
    return &index_loop<T>;
  }

  template <class T>
  static void gemm_loop(int, const detail::gemm_batch<T>& work) {
    for (std::size_t batch = 0; batch < work.a_offsets.size(); ++batch) {
      const T* a = work.a + work.a_offsets[batch];
      const T* b = work.b + work.b_offsets[batch];
      T* c = work.c + static_cast<std::int64_t>(batch) * work.m * work.n;
      for (std::int64_t i = 0; i < work.m; ++i)
        for (std::int64_t j = 0; j < work.n; ++j) {
          T total = 0;
          for (std::int64_t p = 0; p < work.k; ++p)
            total += a[i * work.a_row_step + p * work.a_column_step] * b[p * work.b_row_step + j * work.b_column_step];
          c[i * work.n + j] = total;
        }
    }
  }
  template <class T>
  static detail::cuda_gemm_kernel<T> gemm() {
    return &gemm_loop<T>;
  }

  template <class T, std::size_t S, class Op>
  static void update_loop(const Op& op, int, std::int64_t count, const std::array<T*, 1 + S>& out, const T* parameter,
                          const T* gradient, const std::array<const T*, S>& state) {
    for (std::int64_t i = 0; i < count; ++i) {
      const std::array<T, 1 + S> next = [&]<std::size_t... K>(std::index_sequence<K...>) {
        return op(parameter[i], gradient[i], state[K][i]...);
      }(std::make_index_sequence<S>{});
      for (std::size_t k = 0; k < 1 + S; ++k) out[k][i] = next[k];
    }
  }
  template <class T, std::size_t S, class Op>
  static detail::cuda_update_kernel<T, S, Op> update() {
    return &update_loop<T, S, Op>;
  }

  template <class T, class Law>
  static void random_loop(const Law& law, int, T* out, std::int64_t count, std::uint64_t seed, std::uint64_t first) {
    for (std::int64_t i = 0; i < count; ++i) out[i] = law(detail::philox(seed, first + static_cast<std::uint64_t>(i)));
  }
  template <class T, class Law>
  static detail::cuda_random_kernel<T, Law> random() {
    return &random_loop<T, Law>;
  }

  // The GPU's attention threads (kernels/cuda/attention_rows.hpp), one
  // loop iteration each, the backward's pass by queries before its pass by
  // keys as on the device's stream.
  template <class T>
  static void attention_forward_loop(int, const detail::device_attention<T>& p,
                                     const detail::device_attention_rows<T*>& out, T* logsumexp) {
    detail::with_device_attention_width(p.d, p.dv, [&](auto width) {
      for (std::int64_t n = 0; n < p.heads; ++n)
        for (std::int64_t i = 0; i < p.tq; ++i) detail::device_attention_forward_row<width()>(p, n, i, out, logsumexp);
    });
  }
  template <class T>
  static detail::cuda_attention_forward_kernel<T> attention_forward() {
    return &attention_forward_loop<T>;
  }
  template <class T>
  static void attention_backward_loop(int, const detail::device_attention<T>& p,
                                      const detail::device_attention_gradients<T>& a, const T* logsumexp) {
    detail::with_device_attention_width(p.d, p.dv, [&](auto width) {
      for (std::int64_t n = 0; n < p.heads; ++n)
        for (std::int64_t i = 0; i < p.tq; ++i)
          detail::device_attention_query_gradient_row<width()>(p, a, n, i, logsumexp);
      for (std::int64_t n = 0; n < p.heads; ++n)
        for (std::int64_t j = 0; j < p.tk; ++j) detail::device_attention_key_gradient_row<width()>(p, a, n, j, logsumexp);
    });
  }
  template <class T>
  static detail::cuda_attention_backward_kernel<T> attention_backward() {
    return &attention_backward_loop<T>;
  }

  static const detail::device_runtime& runtime() { return stand_in_runtime(); }
};

// tandem::cuda::compile's work for the emulated GPU: the host loops of a
// static graph's kernels in its slots.
template <class F, class... A>
void compile_graph(const static_graph<F>&, const A&...) {
  detail::device_kernels::install_graph<emulated_backend, F, A...>();
}
template <class Loss, class... A>
void compile_graph(const nn::train_step<Loss>& step, const A&... a) {
  compile_graph(step.graph(), a...);
}

}  // namespace tandem::test
