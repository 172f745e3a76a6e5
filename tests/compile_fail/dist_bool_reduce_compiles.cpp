#include <tandem/dist.hpp>
#include <tandem/tandem.hpp>

int main() {
  tandem::dist::environment mpi;
  tandem::tensor<bool> flags = tandem::full<bool>({3}, true);
  auto as_ints = flags.astype<std::int32_t>();
  return static_cast<int>(tandem::dist::all_reduce(as_ints, tandem::dist::reduce_op::max).wait().numel());
}
