// The loops of bench_dispatch's static graph, built for each instruction set
// (tandem_graph_kernels in bench/CMakeLists.txt, graph/kernel_build.hpp).
#include "chain.hpp"
#include "tandem/graph/kernel_build.hpp"

TANDEM_GRAPH_KERNELS(tandem::graph_signature<decltype(bench::tanh_chain_graph), tandem::tensor<float>>);
