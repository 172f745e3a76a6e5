// As a program linking tandem::compiled sees the headers, but not compiled
// through tandem_graph_kernels() (which defines TANDEM_GRAPH_KERNELS_ID).
#define TANDEM_COMPILED_LIBRARY
#include <tandem/tandem.hpp>
#include <tandem/graph/kernel_build.hpp>

inline constexpr auto square = [](const auto& x) { return x * x; };
TANDEM_GRAPH_KERNELS(tandem::graph_signature<decltype(square), tandem::tensor<float>>);

int main() {}
