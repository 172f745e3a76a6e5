#pragma once
// What a program's GPU kernels put in the host's slots, as one list over a
// backend that provides the kernels: the CUDA kernels (<tandem/cuda.hpp>),
// or, in the tests, an emulation on the host (tests/support/
// emulated_device.hpp) with which every machine runs the GPU suite's
// host-side logic. Host code: no CUDA headers.
//
// A backend is a class with static function templates
//   elementwise<R, C, Op, In...>()  returning a cuda_elementwise_kernel<R, C, Op, In...>
//   reduce<A, R, T, Reducer>()      returning a cuda_reduce_kernel<A, R, T, Reducer>
//   arg_extreme<T, Largest>()       returning a cuda_arg_extreme_kernel<T, Largest>
//   index<T>()                      returning a cuda_index_kernel<T>
//   gemm<T>()                       returning a cuda_gemm_kernel<T>
//   update<T, S, Op>()              returning a cuda_update_kernel<T, S, Op>
//   elementwise_outputs<R, C, Op, M, In...>()
//                                   returning a cuda_elementwise_outputs_kernel<R, C, Op, M, In...>
//   group_sum<R, Op, In...>()       returning a cuda_group_sum_kernel<R, Op, In...>
//   group_sum_adjoints<R, Op, M, In...>()
//                                   returning a cuda_group_sum_adjoints_kernel<R, Op, M, In...>
//   random<T, Law>()                returning a cuda_random_kernel<T, Law>
//   attention_forward<T>()          returning a cuda_attention_forward_kernel<T>
//   attention_backward<T>()         returning a cuda_attention_backward_kernel<T>
// and a static runtime() returning the device_runtime.

#include <atomic>
#include <cstdint>
#include <tuple>
#include <type_traits>

#include "tandem/kernels/cuda/dispatch.hpp"
#include "tandem/ops/composed/conv.hpp"
#include "tandem/ops/composed/normalization.hpp"
#include "tandem/ops/composed/pool.hpp"
#include "tandem/ops/composed/softmax.hpp"
#include "tandem/ops/elementwise/builtin.hpp"
#include "tandem/tandem.hpp"

namespace tandem::detail::device_kernels {

template <class Slot, class Kernel>
void put(Slot& slot, Kernel kernel) {
  slot.store(kernel, std::memory_order_release);
}

template <class Backend, class R, class C, class Op, class... In>
void install_elementwise() {
  put(cuda_elementwise_slot<R, C, Op, In...>, Backend::template elementwise<R, C, Op, In...>());
}

// A user's (or the library's) elementwise op on operands of types In.
template <class Backend, class Op, class... In>
void install_op() {
  install_elementwise<Backend, typename Op::template result<In...>, typename Op::template compute<In...>, Op, In...>();
}

using element_types = std::tuple<float, double, std::int32_t, std::int64_t, bool>;

template <class Backend, class T>
void install_builtin_rows() {
  [&]<class... Op>(std::tuple<Op...>*) { (install_op<Backend, Op, T>(), ...); }(static_cast<builtin_unary_ops*>(nullptr));
  [&]<class... Op>(std::tuple<Op...>*) { (install_op<Backend, Op, T, T>(), ...); }(
      static_cast<builtin_binary_ops*>(nullptr));
  install_op<Backend, where_op, bool, T, T>();
  install_op<Backend, clamp_op, T, T, T>();
}

// What every element type has, bool included: the logical ops (clamp's
// and relu's gradients combine masks with them), equality, and where.
template <class Backend, class T>
void install_logical_rows() {
  [&]<class... Op>(std::tuple<Op...>*) { (install_op<Backend, Op, T, T>(), ...); }(
      static_cast<builtin_logical_ops*>(nullptr));
  install_op<Backend, logical_not_op, T>();
  if constexpr (std::is_same_v<T, bool>) {
    install_op<Backend, eq_op, bool, bool>();
    install_op<Backend, ne_op, bool, bool>();
    install_op<Backend, where_op, bool, bool, bool>();
  }
}

// Copies and conversions: astype (To from From) and assign (into To, read as
// To).
template <class Backend, class To, class From>
void install_conversion() {
  install_elementwise<Backend, To, From, identity_op, From>();
  install_elementwise<Backend, To, To, identity_op, From>();
}

// The reducers as sum, mean, prod, max and min call them on T; argmax,
// argmin and the index ops on T.
template <class Backend, class T>
void install_reductions() {
  using total = accumulate_t<T>;
  using average = floating_t<T>;
  put(cuda_reduce_slot<total, total, T, sum_reducer>, Backend::template reduce<total, total, T, sum_reducer>());
  put(cuda_reduce_slot<average, average, T, sum_reducer>, Backend::template reduce<average, average, T, sum_reducer>());
  put(cuda_reduce_slot<total, total, T, prod_reducer>, Backend::template reduce<total, total, T, prod_reducer>());
  put(cuda_reduce_slot<T, T, T, max_reducer>, Backend::template reduce<T, T, T, max_reducer>());
  put(cuda_reduce_slot<T, T, T, min_reducer>, Backend::template reduce<T, T, T, min_reducer>());
  put(cuda_arg_extreme_slot<T, true>, Backend::template arg_extreme<T, true>());
  put(cuda_arg_extreme_slot<T, false>, Backend::template arg_extreme<T, false>());
  put(cuda_index_slot<T>, Backend::template index<T>());
}

// The optimizers' fused updates (nn/optimizer.hpp).
template <class Backend, class T>
void install_updates() {
  put(cuda_update_slot<T, 0, nn::detail::sgd_plain_op<T>>, Backend::template update<T, 0, nn::detail::sgd_plain_op<T>>());
  put(cuda_update_slot<T, 1, nn::detail::sgd_momentum_op<T>>,
      Backend::template update<T, 1, nn::detail::sgd_momentum_op<T>>());
  put(cuda_update_slot<T, 2, nn::detail::adam_op<T>>, Backend::template update<T, 2, nn::detail::adam_op<T>>());
}

// Random draws on the device (core/random.hpp): every law for floating T,
// integers for the others.
template <class Backend, class T>
void install_random() {
  if constexpr (std::is_floating_point_v<T>) {
    put(cuda_random_slot<T, uniform_law<T>>, Backend::template random<T, uniform_law<T>>());
    put(cuda_random_slot<T, normal_law<T>>, Backend::template random<T, normal_law<T>>());
  }
  put(cuda_random_slot<T, integer_law<T>>, Backend::template random<T, integer_law<T>>());
}

// The ops a GPU runs as compositions of the kernels above (ops/composed/).
template <class Backend, class F>
void install_compositions() {
  put(cuda_softmax_slot<F, false>, &composed_softmax<false, F>);
  put(cuda_softmax_slot<F, true>, &composed_softmax<true, F>);
  put(cuda_cross_entropy_slot<F, std::int32_t>, &composed_cross_entropy_losses<F, std::int32_t>);
  put(cuda_cross_entropy_slot<F, std::int64_t>, &composed_cross_entropy_losses<F, std::int64_t>);
  put(cuda_conv2d_slot<F>, &composed_conv2d<F>);
  put(cuda_conv2d_input_gradient_slot<F>, &composed_conv2d_input_gradient<F>);
  put(cuda_conv2d_kernel_gradient_slot<F>, &composed_conv2d_kernel_gradient<F>);
  put(cuda_max_pool2d_slot<F>, &composed_max_pool2d<F>);
  put(cuda_max_pool2d_gradient_slot<F>, &composed_max_pool2d_gradient<F>);
  put(cuda_avg_pool2d_slot<F>, &composed_avg_pool2d<F>);
  put(cuda_avg_pool2d_gradient_slot<F>, &composed_avg_pool2d_gradient<F>);
  put(cuda_batch_moments_slot<F>, &composed_batch_moments<F>);
  put(cuda_batch_normalize_slot<F>, &composed_batch_normalize<F>);
  install_op<Backend, scaled_deviation_op, F, F, F>();
}

template <class T>
void install_one_hot() {
  put(cuda_one_hot_slot<T, std::int32_t>, &composed_one_hot<T, std::int32_t>);
  put(cuda_one_hot_slot<T, std::int64_t>, &composed_one_hot<T, std::int64_t>);
}

// Every slot, and the runtime.
template <class Backend>
bool install_all() {
  cuda_runtime_slot().store(&Backend::runtime(), std::memory_order_release);
  install_builtin_rows<Backend, float>();
  install_builtin_rows<Backend, double>();
  install_builtin_rows<Backend, std::int32_t>();
  install_builtin_rows<Backend, std::int64_t>();
  put(cuda_gemm_slot<float>, Backend::template gemm<float>());
  put(cuda_gemm_slot<double>, Backend::template gemm<double>());
  put(cuda_attention_forward_slot<float>, Backend::template attention_forward<float>());
  put(cuda_attention_forward_slot<double>, Backend::template attention_forward<double>());
  put(cuda_attention_backward_slot<float>, Backend::template attention_backward<float>());
  put(cuda_attention_backward_slot<double>, Backend::template attention_backward<double>());
  install_updates<Backend, float>();
  install_updates<Backend, double>();
  install_random<Backend, float>();
  install_random<Backend, double>();
  install_random<Backend, std::int32_t>();
  install_random<Backend, std::int64_t>();
  install_compositions<Backend, float>();
  install_compositions<Backend, double>();
  [&]<class... T>(std::tuple<T...>*) {
    ((install_reductions<Backend, T>(), install_one_hot<T>(), install_logical_rows<Backend, T>()), ...);
  }(
      static_cast<element_types*>(nullptr));
  [&]<class... To>(std::tuple<To...>*) {
    [&]<class... From>(std::tuple<From...>*) {
      auto for_target = [&]<class Target>(Target*) { (install_conversion<Backend, Target, From>(), ...); };
      (for_target(static_cast<To*>(nullptr)), ...);
    }(static_cast<element_types*>(nullptr));
  }(static_cast<element_types*>(nullptr));
  return true;
}

template <class Out>
struct output_count;
template <class T, std::size_t M>
struct output_count<output_set<T, M>> : std::integral_constant<std::size_t, M> {};

template <class Op>
inline constexpr bool is_one_pass_row = false;
template <class Kernel, std::size_t... I>
inline constexpr bool is_one_pass_row<value_then_adjoints<Kernel, I...>> = true;

// Whether Op is the group of a fused summation: on a GPU it runs inside
// the summation's kernel (group_sum), never as an elementwise row.
template <class Root, class Op>
constexpr bool is_summed_group() {
  bool any = false;
  for_each_type<all_classes<Root>>([&]<class N>(std::type_identity<N>) {
    if constexpr (fused_summation<Root, N>())
      any = any || std::is_same_v<Op, group_kernel<Root, std::tuple_element_t<0, children_of<N>>>>;
  });
  return any;
}

template <class Root>
constexpr bool has_control_flow() {
  bool any = false;
  for_each_type<all_classes<Root>>([&]<class N>(std::type_identity<N>) { any = any || is_control_node<N>; });
  return any;
}

}  // namespace tandem::detail::device_kernels

namespace tandem::detail {

// A static graph's runs on the GPU that holds its arguments, as
// cuda_graph_slot, cuda_training_slot and cuda_into_slot call them
// (graph/static_graph.hpp).
template <class F, class... A>
struct gpu_graph_entry {
  static eager_result_t<F, A...> run(const static_graph<F>& graph, bool unit_seed, bool unit_seed_value_read,
                                     const A&... a) {
    const device where = common_device("jit", {place_of(a)...});
    return graph.template run<true>(std::index_sequence_for<A...>{}, unit_seed, unit_seed_value_read, where, a...);
  }
  static std::pair<eager_result_t<F, A...>, captured_gradients> train(const static_graph<F>& graph, const A&... a) {
    const device where = common_device("jit", {place_of(a)...});
    return graph.template train<true>(where, a...);
  }
  template <class T>
  static void into(const static_graph<F>& graph, const tensor<T>& out, const A&... a) {
    const device where = common_device("jit", {place_of(a)...});
    graph.template run_into<true>(where, out, a...);
  }
};

}  // namespace tandem::detail

namespace tandem::detail::device_kernels {

// The kernels of every row the graph of F on arguments of types A runs
// (graph/execute/rows.hpp), and its GPU runs in the graph's slots. A fused
// summation's forward is one kernel that sums its group as it computes it
// (group_sum); its backward is its group's adjoint row, as on the host. At
// an output seeded with ones, a grad that does not read the value runs that
// row alone, and one that does (value_and_grad, a training step's loss)
// runs both in one kernel (group_sum_adjoints), as the host's one-pass
// loop does.
template <class Backend, class F, class... A>
void install_graph() {
  using root = decltype(std::declval<const static_graph<F>&>().trace(std::declval<const A&>()...));
  static_assert(!has_control_flow<root>(),
                "tandem::cuda::compile: a graph with cond, while_loop or scan runs eagerly on the GPU; its kernels "
                "cannot be compiled yet");
  for_each_type<all_classes<root>>([]<class N>(std::type_identity<N>) {
    if constexpr (fused_summation<root, N>()) {
      using R = std::tuple_element_t<0, children_of<N>>;
      using S = value_of_t<N>;
      [&]<class... Operand>(std::type_identity<std::tuple<Operand...>>) {
        put(cuda_group_sum_slot<S, group_kernel<root, R>, typename Operand::value_type...>,
            Backend::template group_sum<S, group_kernel<root, R>, typename Operand::value_type...>());
      }(std::type_identity<group_operand_tensors_t<root, R>>{});
      if constexpr (summation_may_run_one_pass<root, N>) {
        [&]<class C, class Op, class Out, class... In>(std::type_identity<row_signature<S, C, Op, Out, In...>>) {
          constexpr std::size_t m = output_count<Out>::value - 1;
          put(cuda_group_sum_adjoints_slot<S, Op, m, In...>, Backend::template group_sum_adjoints<S, Op, m, In...>());
        }(std::type_identity<typename group_rows<root, R>::template summed_with_adjoints<S>>{});
      }
    }
  });
  for_each_graph_row<root>([]<class R, class C, class Op, class Out, class... In>(
                               std::type_identity<row_signature<R, C, Op, Out, In...>>) {
    if constexpr (std::is_same_v<Out, R*>) {
      if constexpr (!is_summed_group<root, Op>()) install_elementwise<Backend, R, C, Op, In...>();
    } else if constexpr (!is_one_pass_row<Op>) {
      constexpr std::size_t m = output_count<Out>::value;
      put(cuda_elementwise_outputs_slot<R, C, Op, m, In...>,
          Backend::template elementwise_outputs<R, C, Op, m, In...>());
    }
  });
  put(cuda_graph_slot<F, A...>, &gpu_graph_entry<F, A...>::run);
  put(cuda_training_slot<F, A...>, &gpu_graph_entry<F, A...>::train);
  using result = eager_result_t<F, A...>;
  if constexpr (is_tensor_v<result>) {
    using T = typename result::value_type;
    put(cuda_into_slot<F, T, A...>, &gpu_graph_entry<F, A...>::template into<T>);
  }
}

}  // namespace tandem::detail::device_kernels
