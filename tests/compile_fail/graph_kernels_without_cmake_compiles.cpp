// The registering unit as tandem_graph_kernels() compiles it.
#define TANDEM_COMPILED_LIBRARY
#define TANDEM_GRAPH_KERNELS_ID graph_kernels_without_cmake
#define TANDEM_KERNEL_BUILD_AVX2
#include <tandem/tandem.hpp>
#include <tandem/graph/kernel_build.hpp>

inline constexpr auto square = [](const auto& x) { return x * x; };
TANDEM_GRAPH_KERNELS(tandem::graph_signature<decltype(square), tandem::tensor<float>>);

int main() {}
