// libFuzzer target: the .npy reader on arbitrary bytes. Any input must
// either read as an array whose shape and element type fit the file's size,
// or throw tandem::io_error; a crash, a sanitizer report or another
// exception is a bug.
#include <cstdint>
#include <cstdlib>

#include "fuzz/fuzz_input.hpp"
#include "tandem/io.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto path = tandem::fuzz::write_input(data, size, ".npy");
  try {
    tandem::io::any_tensor array = tandem::io::load_npy(path);
    std::size_t element = std::visit([](const auto& t) { return sizeof(*t.data()); }, array);
    if (static_cast<std::size_t>(tandem::numel(tandem::io::shape_of(array))) * element > size) std::abort();
  } catch (const tandem::io_error&) {
  }
  return 0;
}
