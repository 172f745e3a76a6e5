// libFuzzer target: the .npz reader (zip, stored or deflated, and the .npy
// reader inside) on arbitrary bytes. Any input must either read as a set of
// arrays or throw tandem::io_error; a crash, a sanitizer report or another
// exception is a bug.
#include <cstdint>

#include "fuzz/fuzz_input.hpp"
#include "tandem/io.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto path = tandem::fuzz::write_input(data, size, ".npz");
  try {
    tandem::io::load_npz(path);
  } catch (const tandem::io_error&) {
  }
  return 0;
}
