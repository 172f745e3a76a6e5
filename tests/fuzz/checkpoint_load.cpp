// libFuzzer target: nn::load on arbitrary bytes, into a model and its
// optimizer. Any input must either load or throw a tandem::error, and a
// refused one must leave the model and the optimizer as they were. The
// checksum would stop almost every mutation at the door, so an input whose
// first byte is odd is resealed first (the rest of it, its last four bytes
// replaced by the CRC-32 of the others): the parser behind the checksum
// gets fuzzed too.
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "fuzz/fuzz_input.hpp"
#include "tandem/detail/crc32.hpp"
#include "tandem/io.hpp"
#include "tandem/tandem.hpp"

namespace {

struct small_net : tandem::nn::module<small_net> {
  tandem::nn::linear<float> a;
  tandem::nn::linear<double> b;
  explicit small_net(tandem::generator& gen) : a(2, 3, gen), b(3, 1, gen) {
    register_module("a", a);
    register_module("b", b);
  }
  auto forward(const auto& x) const { return a(x); }
};

std::vector<double> snapshot(const small_net& net, const tandem::nn::adam& opt) {
  std::vector<double> out;
  for (const auto& p : net.named_parameters())
    std::visit([&](const auto& t) { for (auto v : t.contiguous().to_vector()) out.push_back(static_cast<double>(v)); },
               p.value);
  for (auto& [name, value] : opt.state())
    std::visit([&](const auto& t) { for (auto v : t.contiguous().to_vector()) out.push_back(static_cast<double>(v)); },
               value);
  out.push_back(static_cast<double>(opt.steps()));
  out.push_back(opt.learning_rate());
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  std::vector<std::uint8_t> bytes(data + 1, data + size);
  if ((data[0] & 1) && bytes.size() >= 4) {
    std::uint32_t crc = tandem::detail::crc32(bytes.data(), bytes.size() - 4);
    for (int b = 0; b < 4; ++b) bytes[bytes.size() - 4 + static_cast<std::size_t>(b)] = static_cast<std::uint8_t>(crc >> (8 * b));
  }
  auto path = tandem::fuzz::write_input(bytes.data(), bytes.size(), ".ckpt");
  tandem::generator gen(1);
  small_net net(gen);
  tandem::nn::adam opt(net.named_parameters(), {.lr = 0.05});
  auto before = snapshot(net, opt);
  try {
    tandem::nn::load(path, net, &opt);
  } catch (const tandem::error&) {
    if (snapshot(net, opt) != before) std::abort();
  }
  return 0;
}
