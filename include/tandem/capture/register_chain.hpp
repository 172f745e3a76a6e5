#pragma once
// Consecutive ops of a captured region run batch by batch, each op's result
// handed to the next in SIMD registers. A region run op by op over tile
// buffers stores every result to the first-level cache and loads it back;
// on the 8-op chain those stores, not the arithmetic, were the
// cost (docs/benchmarks/capture.md). A compiled static graph keeps values
// in registers because its whole body is one inlined expression; a run-time
// interpreter cannot inline, but it can dispatch once per few batches and
// keep the running value in registers across the dispatch: each step of a
// chain is an op of `register_ops` chosen by a switch, applied to
// `chain_unroll` batches at once.
//
// The ops are the library's op structs (their operator() on batches, the
// one their eager row functions call), so a chain computes the same bits as
// the rows do; an op not in the list runs as a row over the tile.

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <tuple>
#include <utility>

#include "tandem/core/config.hpp"
#include "tandem/kernels/cpu/elementwise.hpp"
#include "tandem/kernels/cpu/simd.hpp"
#include "tandem/ops/elementwise/activation.hpp"
#include "tandem/ops/elementwise/arithmetic.hpp"
#include "tandem/ops/elementwise/math.hpp"

namespace tandem::detail {

// The ops a chain runs in registers: the arithmetic and the activations of
// training steps and their backward passes. Each costs code in the chain's
// one function, per element type; the rest run as rows.
using register_ops = std::tuple<add_op, sub_op, mul_op, div_op, maximum_op, minimum_op, neg_op, abs_op, square_op,
                                sqrt_op, exp_op, log_op, tanh_op, sigmoid_op, relu_op, relu_backward_op>;

// Batches per dispatch: the switch's cost is shared by four batches, and
// four independent batches hide a long op's latency (tanh). On the 8-op
// chain (a standalone prototype, Zen 4, one thread) one batch ran 1.7-1.9x
// and two 1.25-1.3x slower than four with AVX-512; eight spilled registers
// and ran 1.1-1.2x slower. Built for AVX2, four was also the fastest (two
// 1.9x, eight 1.3x slower).
inline constexpr std::int64_t chain_unroll = 4;

// A chain's op, where a row function is one: its index in register_ops
// plus one (0: not in the list), and the size of the element it computes.
struct register_code {
  std::uint8_t op = 0;
  std::uint8_t element_size = 0;
};

// One step of a chain over a tile. An operand is the previous step's
// result (bit k of `from_previous`), or memory: `in[k]` the element at the
// tile's start, stepping 1 along it or 0 (one value for the whole tile). A
// result is stored at `out` (same layout) where something else reads it.
struct chain_step {
  std::uint8_t op;
  std::uint8_t inputs;
  std::uint8_t from_previous;
  const void* op_object;
  std::array<const void*, 2> in;
  std::array<std::int64_t, 2> step;
  void* out;
};

inline namespace TANDEM_KERNEL_ISA {

#if !defined(__CUDA_ARCH__) && !XSIMD_NO_SUPPORTED_ARCHITECTURE

template <class Op, class T>
constexpr std::size_t arity_on() {
  if constexpr (requires(const Op& op, T a) { op(a); }) return 1;
  else return 2;
}

template <class T, class Op>
constexpr row_function register_row() {
  if constexpr (arity_on<Op, T>() == 1) return native_row_function<T, T, Op, T*, T>();
  else return native_row_function<T, T, Op, T*, T, T>();
}

// The chain op a row function runs, if any: the row functions of the ops
// in the list over float and double, the types a batch holds the result of.
template <class Ops>
register_code register_code_of(row_function row) {
  static const auto table = []<std::size_t... K>(std::index_sequence<K...>) {
    return std::array<std::pair<row_function, register_code>, 2 * sizeof...(K)>{
        std::pair{register_row<float, std::tuple_element_t<K, Ops>>(),
                  register_code{static_cast<std::uint8_t>(K + 1), sizeof(float)}}...,
        std::pair{register_row<double, std::tuple_element_t<K, Ops>>(),
                  register_code{static_cast<std::uint8_t>(K + 1), sizeof(double)}}...};
  }(std::make_index_sequence<std::tuple_size_v<Ops>>{});
  for (const auto& [known, code] : table)
    if (known == row) return code;
  return {};
}

template <class T>
using chain_batches = std::array<simd::batch<T>, chain_unroll>;

// Every loop over the unrolled batches is spelled out by a pack, so that
// the batches stay in registers (a loop the compiler does not unroll
// indexes them, which puts them in memory). The helpers are plain inline:
// run_chain's flatten inlines them; with always_inline on them, GCC 12 left
// the ops' math (tanh) as calls, each spilling every live batch.
template <class F, std::size_t... U>
inline void for_each_unrolled(F&& f, std::index_sequence<U...>) {
  (f(std::integral_constant<std::size_t, U>{}), ...);
}
template <class F>
inline void for_each_unrolled(F&& f) {
  for_each_unrolled(f, std::make_index_sequence<chain_unroll>{});
}

template <class T, std::size_t K>
inline void chain_operand(const chain_step& step, std::int64_t i, const chain_batches<T>& value,
                          chain_batches<T>& x) {
  constexpr std::int64_t w = static_cast<std::int64_t>(simd::batch<T>::size);
  if (step.from_previous >> K & 1) {
    x = value;
    return;
  }
  const T* in = static_cast<const T*>(step.in[K]);
  if (step.step[K]) for_each_unrolled([&](auto u) { x[u] = simd::load(in + i + static_cast<std::int64_t>(u) * w); });
  else for_each_unrolled([&](auto u) { x[u] = simd::batch<T>(*in); });
}

template <class T, class Op, std::size_t... U>
inline void apply_unrolled(const Op& op, const chain_batches<T>& a, chain_batches<T>& value,
                           std::index_sequence<U...>) {
  ((value[U] = op(a[U])), ...);
}
template <class T, class Op, std::size_t... U>
inline void apply_unrolled(const Op& op, const chain_batches<T>& a, const chain_batches<T>& b,
                           chain_batches<T>& value, std::index_sequence<U...>) {
  ((value[U] = op(a[U], b[U])), ...);
}

template <class T, class Ops, std::size_t K>
inline void apply_register_op(const chain_step& step, std::int64_t i, chain_batches<T>& value) {
  using Op = std::tuple_element_t<K, Ops>;
  const Op& op = *static_cast<const Op*>(step.op_object);
  constexpr auto unrolled = std::make_index_sequence<chain_unroll>{};
  chain_batches<T> a;
  chain_operand<T, 0>(step, i, value, a);
  if constexpr (arity_on<Op, T>() == 1) {
    apply_unrolled<T>(op, a, value, unrolled);
  } else {
    chain_batches<T> b;
    chain_operand<T, 1>(step, i, value, b);
    apply_unrolled<T>(op, a, b, value, unrolled);
  }
}

// The switch over the op: a fold of comparisons, which GCC compiles to a
// jump table.
template <class T, class Ops, std::size_t... K>
inline void apply_chain_step(const chain_step& step, std::int64_t i, chain_batches<T>& value,
                             std::index_sequence<K...>) {
  (void)((step.op == K + 1 && (apply_register_op<T, Ops, K>(step, i, value), true)) || ...);
}

// Runs `steps` over the first `n` elements of a tile (n a multiple of
// chain_unroll batches), each batch through every step before the next.
template <class T, class Ops>
TANDEM_FLATTEN void run_chain(const chain_step* steps, std::size_t count, std::int64_t n) {
  constexpr std::int64_t w = static_cast<std::int64_t>(simd::batch<T>::size);
  for (std::int64_t i = 0; i < n; i += chain_unroll * w) {
    chain_batches<T> value;
    for (std::size_t s = 0; s < count; ++s) {
      const chain_step& step = steps[s];
      apply_chain_step<T, Ops>(step, i, value, std::make_index_sequence<std::tuple_size_v<Ops>>{});
      if (step.out)
        for_each_unrolled(
            [&](auto u) { simd::store(static_cast<T*>(step.out) + i + static_cast<std::int64_t>(u) * w, value[u]); });
    }
  }
}

// Elements per dispatch of a chain over elements of `element_size` bytes.
inline std::int64_t chain_block(std::size_t element_size) {
  const std::size_t lanes = element_size == sizeof(float) ? simd::batch<float>::size : simd::batch<double>::size;
  return chain_unroll * static_cast<std::int64_t>(lanes);
}

template <class Ops>
void run_chain_of(std::size_t element_size, const chain_step* steps, std::size_t count, std::int64_t n) {
  if (element_size == sizeof(float)) run_chain<float, Ops>(steps, count, n);
  else run_chain<double, Ops>(steps, count, n);
}

#else

template <class Ops>
register_code register_code_of(row_function) {
  return {};
}
inline std::int64_t chain_block(std::size_t) { return 1; }
template <class Ops>
void run_chain_of(std::size_t, const chain_step*, std::size_t, std::int64_t) {}

#endif

}  // inline namespace TANDEM_KERNEL_ISA

// The chain's entries. Its kernels (every op of the list, unrolled, per
// element type) are heavy to compile: a region reaches them through these
// pointers, which capture() installs (capture/capture.hpp), so that only
// translation units that capture instantiate them. Until then regions run
// their ops as rows. `block` is the kernels' own chain_block: a region
// built for SSE runs the AVX-512 chain where the library's builds are
// dispatched, and must split its tiles by that chain's width, not its own
// (by its own, the chain ran past the tile).
struct chain_kernels {
  register_code (*code_of)(row_function);
  void (*run)(std::size_t element_size, const chain_step* steps, std::size_t count, std::int64_t n);
  std::int64_t (*block)(std::size_t element_size);
};

inline namespace TANDEM_KERNEL_ISA {

template <class Ops = register_ops>
const chain_kernels* chain_kernels_for() {
  static constexpr chain_kernels kernels{&register_code_of<Ops>, &run_chain_of<Ops>, &chain_block};
  return &kernels;
}

}  // inline namespace TANDEM_KERNEL_ISA

inline std::atomic<const chain_kernels*>& installed_chain_kernels() {
  static std::atomic<const chain_kernels*> kernels{nullptr};
  return kernels;
}

// The chain kernels of the instruction set whose rows are dispatched
// (kernels/cpu/dispatch.hpp): a chain recognizes its ops by their row
// functions, so chains and rows must come from one build.
inline constinit std::atomic<const chain_kernels*> dispatched_chain_kernels{nullptr};

// The chain kernels a region runs, once capture() has installed its own.
inline const chain_kernels* chain_kernels_in_use() {
  const chain_kernels* installed = installed_chain_kernels().load(std::memory_order_acquire);
  if (!installed) return nullptr;
  const chain_kernels* dispatched = dispatched_chain_kernels.load(std::memory_order_acquire);
  return dispatched ? dispatched : installed;
}

#if TANDEM_HEADER_ONLY
inline namespace TANDEM_KERNEL_ISA {
template <class Ops = register_ops>
void install_chain_kernels() {
  installed_chain_kernels().store(chain_kernels_for<Ops>(), std::memory_order_release);
}
}  // inline namespace TANDEM_KERNEL_ISA
#else
// Compiled once into tandem::compiled (capture/session-inl.hpp), so that a
// translation unit that captures and links the library compiles none of it.
void install_chain_kernels();
#endif

}  // namespace tandem::detail
