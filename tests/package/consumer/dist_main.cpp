// tandem::dist from the package: one process, its own MPI world.
#include <tandem/dist.hpp>
#include <tandem/tandem.hpp>

int main(int argc, char** argv) {
  tandem::dist::environment mpi(argc, argv);
  tandem::tensor<float> x = tandem::full<float>({3}, 2.0f);
  tandem::dist::all_reduce(x).wait();
  return x.data()[0] == 2.0f * tandem::dist::world_size() ? 0 : 1;
}
