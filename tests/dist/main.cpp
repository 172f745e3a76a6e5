// The distributed tests run as one program per rank under mpirun: each rank
// runs every test case, and the collectives inside them meet.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <tandem/dist.hpp>

int main(int argc, char** argv) {
  tandem::dist::environment environment(argc, argv);
  doctest::Context context(argc, argv);
  // Every rank reports its failures; rank 0 alone prints the summary.
  if (tandem::dist::rank() != 0) context.setOption("minimal", true);
  return context.run();
}
