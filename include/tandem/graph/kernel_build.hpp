#pragma once
// A program's static graphs' fused kernels built for SSE4.2, AVX2 and
// AVX-512 and chosen at run time, as tandem::compiled's own kernels are
// (kernels/cpu/dispatch.hpp): a binary compiled for plain x86-64 runs its
// graphs' loops in AVX2 or AVX-512 where the CPU has them.
//
// A graph's loops are instantiated from its function's type, in the
// program's own translation units, at the program's flags. A build for
// another level is one more translation unit that names the graphs, by
// their function's type and argument types, and instantiates every loop a
// run of each may ask for (graph/execute/rows.hpp) without running anything.
// So the function must be a type every unit can name: a lambda or function
// object defined in a header, not inside a function.
//
//   // model.hpp
//   inline constexpr auto chain = [](const auto& x) { auto h = x * 2.0f - 0.25f; return h * h; };
//
//   // graphs.cpp
//   #include "model.hpp"
//   #include <tandem/graph/kernel_build.hpp>
//   TANDEM_GRAPH_KERNELS(tandem::graph_signature<decltype(chain), tandem::tensor<float>>);
//
//   # CMakeLists.txt: the program links tandem::compiled
//   tandem_graph_kernels(my_program graphs.cpp)
//
// tandem_graph_kernels compiles the file once at the program's flags (where
// the macro registers the builds) and once per level (where it defines each
// level's installer); `jit(chain)` anywhere in the program then runs that
// level's loops. A signature names the function (or the static_graph type
// made of it) and the types of the graph's arguments: tensors by their
// tensor type, scalars by theirs. Graphs, argument types or loops a build
// does not hold run the program's own loops, as do the sub-graphs of
// control-flow constructs.
//
// A level's unit must define nothing but its loops: its header must not
// give code to run at load (a variable with a dynamic initializer: `jit(f)`
// itself belongs in the program's units, not in a header the build
// includes), since that code would be compiled for AVX-512 and run on every
// machine. tandem_graph_kernels checks every build's object file for that,
// and for functions another unit could define too, and fails the build.

#include <type_traits>

#if defined(TANDEM_GRAPH_KERNEL_LEVEL)
#include "tandem/kernels/cpu/kernel_build_unit.hpp"
#endif

#include "tandem/graph/execute/rows.hpp"
#include "tandem/graph/static_graph.hpp"
#include "tandem/kernels/cpu/dispatch.hpp"
#include "tandem/kernels/cpu/elementwise.hpp"

namespace tandem {

// A graph whose loops a build holds: the graph's function (or its
// static_graph type) and its arguments' types.
template <class Function, class... Arguments>
struct graph_signature {};

namespace detail {

template <class G>
struct graph_function {
  using type = std::remove_cvref_t<G>;
};
template <class F>
struct graph_function<static_graph<F>> {
  using type = F;
};

// The type a call of jit(F) on these arguments traces.
template <class G, class... A>
using traced_root_t = decltype(std::declval<const static_graph<typename graph_function<std::remove_cvref_t<G>>::type>&>()
                                   .trace(std::declval<const A&>()...));

inline namespace TANDEM_KERNEL_ISA {

// Points the slot of one row at this unit's own row function, or clears it.
template <class R, class C, class Op, class Out, class... In>
void install_graph_row(std::type_identity<row_signature<R, C, Op, Out, In...>>, bool clear) {
  dispatched_row<R, C, Op, Out, In...>.store(clear ? nullptr : native_row_function<R, C, Op, Out, In...>(),
                                             std::memory_order_release);
}

template <class G, class... A>
void install_graph(graph_signature<G, A...>, bool clear) {
  for_each_graph_row<traced_root_t<G, A...>>([&](auto row) { install_graph_row(row, clear); });
}

template <class... Signature>
void install_graphs(bool clear) {
  (install_graph(Signature{}, clear), ...);
}

}  // inline namespace TANDEM_KERNEL_ISA

}  // namespace detail
}  // namespace tandem

#define TANDEM_GRAPH_KERNELS_PASTE_EXPANDED(a, b) a##b
#define TANDEM_GRAPH_KERNELS_PASTE(a, b) TANDEM_GRAPH_KERNELS_PASTE_EXPANDED(a, b)
// Each level's installer: <id>_isa_avx2 and so on.
#define TANDEM_GRAPH_KERNELS_INSTALLER(isa) TANDEM_GRAPH_KERNELS_PASTE(TANDEM_GRAPH_KERNELS_ID, TANDEM_GRAPH_KERNELS_PASTE(_, isa))

#if TANDEM_HEADER_ONLY
#define TANDEM_GRAPH_KERNELS(...)                                                                                  \
  static_assert(sizeof(::tandem::graph_signature<__VA_ARGS__>) == 0,                                            \
                "TANDEM_GRAPH_KERNELS: builds of graph kernels are chosen by tandem::compiled; link the program " \
                "with tandem::compiled")
#elif !defined(TANDEM_GRAPH_KERNELS_ID)
#define TANDEM_GRAPH_KERNELS(...)                                                                           \
  static_assert(sizeof(::tandem::graph_signature<__VA_ARGS__>) == 0,                                     \
                "TANDEM_GRAPH_KERNELS: compile this file through tandem_graph_kernels() in CMake, which " \
                "builds it for each instruction set")
#elif defined(TANDEM_GRAPH_KERNEL_LEVEL)
// A level's unit: its installer.
#define TANDEM_GRAPH_KERNELS(...)                                 \
  void TANDEM_GRAPH_KERNELS_INSTALLER(TANDEM_KERNEL_ISA)(bool clear) { \
    ::tandem::detail::install_graphs<__VA_ARGS__>(clear);         \
  }                                                               \
  static_assert(true)
#else
// The program's own unit: registers the levels CMake built, the library's
// (TANDEM_KERNEL_BUILD_*).
#if defined(TANDEM_KERNEL_BUILD_SSE4_2)
#define TANDEM_GRAPH_KERNELS_SSE4_2(apply) apply(sse4_2)
#else
#define TANDEM_GRAPH_KERNELS_SSE4_2(apply)
#endif
#if defined(TANDEM_KERNEL_BUILD_AVX2)
#define TANDEM_GRAPH_KERNELS_AVX2(apply) apply(avx2)
#else
#define TANDEM_GRAPH_KERNELS_AVX2(apply)
#endif
#if defined(TANDEM_KERNEL_BUILD_AVX512)
#define TANDEM_GRAPH_KERNELS_AVX512(apply) apply(avx512)
#else
#define TANDEM_GRAPH_KERNELS_AVX512(apply)
#endif
#define TANDEM_GRAPH_KERNELS_EACH_LEVEL(apply) \
  TANDEM_GRAPH_KERNELS_SSE4_2(apply) TANDEM_GRAPH_KERNELS_AVX2(apply) TANDEM_GRAPH_KERNELS_AVX512(apply)
#define TANDEM_GRAPH_KERNELS_DECLARE(level) void TANDEM_GRAPH_KERNELS_INSTALLER(isa_##level)(bool clear);
#define TANDEM_GRAPH_KERNELS_ENTRY(level) {::tandem::instruction_set::level, &TANDEM_GRAPH_KERNELS_INSTALLER(isa_##level)},
#define TANDEM_GRAPH_KERNELS(...)                                                                           \
  TANDEM_GRAPH_KERNELS_EACH_LEVEL(TANDEM_GRAPH_KERNELS_DECLARE)                                              \
  namespace {                                                                                               \
  [[maybe_unused]] const bool tandem_graph_kernels_registered =                                             \
      ::tandem::detail::add_graph_kernel_builds({TANDEM_GRAPH_KERNELS_EACH_LEVEL(TANDEM_GRAPH_KERNELS_ENTRY)}); \
  }                                                                                                         \
  static_assert(sizeof(::tandem::graph_signature<__VA_ARGS__>) > 0)
#endif
