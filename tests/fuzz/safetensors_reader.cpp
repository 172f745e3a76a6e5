// libFuzzer target: the safetensors reader on arbitrary bytes: opening the
// file (the JSON header and the layout checks), then reading each tensor,
// zero-copy or copied. Any input must either give tensors of the shapes the
// header says or throw tandem::io_error; a crash, a sanitizer report or
// another exception is a bug.
#include <cstdint>
#include <cstdlib>

#include "fuzz/fuzz_input.hpp"
#include "tandem/io.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto path = tandem::fuzz::write_input(data, size, ".safetensors");
  try {
    tandem::io::safetensors_file file(path);
    for (const std::string& name : file.names()) {
      try {
        tandem::io::any_tensor t = file.get(name);
        if (tandem::io::shape_of(t) != file.shape(name)) std::abort();
      } catch (const tandem::io_error&) {
      }
    }
  } catch (const tandem::io_error&) {
  }
  return 0;
}
