#include <tandem/tandem.hpp>
#include <tandem/graph/kernel_build.hpp>

inline constexpr auto header_only_square = [](const auto& x) { return x * x; };
using header_only_square_graph = tandem::detail::traced_root_t<decltype(header_only_square), tandem::tensor<float>>;

int main() { return sizeof(header_only_square_graph) > 0 ? 0 : 1; }
