// The loops of kernel_build_graphs.hpp's graphs, built for each instruction
// set by tandem_graph_kernels() (tests/CMakeLists.txt).
#include "graph/kernel_build_graphs.hpp"
#include "tandem/graph/kernel_build.hpp"

TANDEM_GRAPH_KERNELS(tandem::graph_signature<decltype(kernel_build_test::chain), tandem::tensor<float>>,
                     tandem::graph_signature<decltype(kernel_build_test::chain), tandem::tensor<double>>,
                     tandem::graph_signature<decltype(kernel_build_test::loss), tandem::tensor<float>, tandem::tensor<float>>,
                     tandem::graph_signature<decltype(kernel_build_test::layer), tandem::tensor<float>, tandem::tensor<float>,
                                             tandem::tensor<float>>);
