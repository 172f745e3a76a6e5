#include <tandem/dist.hpp>
#include <tandem/tandem.hpp>

int main() {
  tandem::dist::environment mpi;
  tandem::tensor<bool> flags = tandem::full<bool>({3}, true);
  return static_cast<int>(tandem::dist::all_reduce(flags, tandem::dist::reduce_op::max).wait().numel());
}
