#include <tandem/tandem.hpp>
#include <tandem/graph/kernel_build.hpp>

inline constexpr auto header_only_square = [](const auto& x) { return x * x; };
TANDEM_GRAPH_KERNELS(tandem::graph_signature<decltype(header_only_square), tandem::tensor<float>>);

int main() {}
