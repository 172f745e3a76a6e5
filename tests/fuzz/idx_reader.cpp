// libFuzzer target: the IDX reader on arbitrary bytes, plain or gzip. Any
// input must either read as a whole, consistent file or throw
// tandem::io_error; a crash, a sanitizer report, another exception or an
// inconsistent result is a bug.
#include <cstdint>
#include <cstdlib>

#include "fuzz/fuzz_input.hpp"
#include "tandem/io.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto path = tandem::fuzz::write_input(data, size, ".idx");
  try {
    tandem::data::idx_file file = tandem::data::read_idx(path.string());
    std::size_t element = tandem::data::detail::idx_type_size(static_cast<std::uint8_t>(file.type));
    if (element == 0 || file.bytes.size() != static_cast<std::size_t>(tandem::numel(file.extent)) * element) std::abort();
    if (file.bytes.size() <= (std::size_t{1} << 20)) {
      tandem::tensor<double> values = file.as<double>();
      if (values.shape() != file.extent) std::abort();
    }
  } catch (const tandem::io_error&) {
  }
  return 0;
}
