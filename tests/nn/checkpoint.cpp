// Checkpoints: a round trip of a model and its optimizer that resumes
// training exactly; atomic replacement; and every bad file (truncated at
// each position, bytes flipped, an oversized header, another version, a
// model that does not match) refused with the model left untouched.
#include <doctest/doctest.h>
#include <zlib.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include "support/check.hpp"
#include "support/stand_in_device.hpp"
#include "tandem/detail/crc32.hpp"
#include "tandem/io.hpp"
#include "tandem/tandem.hpp"

using namespace tandem;

namespace {

struct small_net : nn::module<small_net> {
  nn::linear<float> a;
  nn::linear<double> b;
  tensor<float> running = zeros<float>({3});
  small_net(generator& gen, std::int64_t width = 3) : a(2, width, gen), b(3, 1, gen) {
    register_module("a", a);
    register_module("b", b);
    register_buffer("running", running);
  }
  // b (double) is only stored: checkpoints hold both element types.
  auto forward(const auto& x) const { return tanh(a(x)); }
};

std::filesystem::path scratch(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / "tandem_checkpoint_tests";
  std::filesystem::create_directories(dir);
  return dir / name;
}

std::vector<std::uint8_t> read_bytes(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}
void write_bytes(const std::filesystem::path& p, const std::vector<std::uint8_t>& bytes) {
  std::ofstream(p, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}
// Rewrites the trailing CRC-32 so that a deliberate edit is seen by the
// checks after the checksum.
void reseal(std::vector<std::uint8_t>& bytes) {
  auto crc = static_cast<std::uint32_t>(crc32(crc32(0L, Z_NULL, 0), bytes.data(), static_cast<uInt>(bytes.size() - 4)));
  for (int b = 0; b < 4; ++b) bytes[bytes.size() - 4 + static_cast<std::size_t>(b)] = static_cast<std::uint8_t>(crc >> (8 * b));
}

}  // namespace

// The checksum is zlib's CRC-32 (the format says so), here without zlib.
TEST_CASE("checkpoint checksum: CRC-32 as zlib computes it, on lengths around the 8-byte steps") {
  const char* check = "123456789";
  CHECK(tandem::detail::crc32(reinterpret_cast<const std::uint8_t*>(check), 9) == 0xCBF43926u);
  std::vector<std::uint8_t> bytes(100003);
  std::uint32_t state = 1;
  for (auto& b : bytes) b = static_cast<std::uint8_t>((state = state * 1664525u + 1013904223u) >> 24);
  for (std::size_t n : {0, 1, 7, 8, 9, 17, 1000, 100003}) {
    auto expected = static_cast<std::uint32_t>(crc32(crc32(0L, Z_NULL, 0), bytes.data(), static_cast<uInt>(n)));
    CHECK(tandem::detail::crc32(bytes.data(), n) == expected);
    // Continued over two pieces, as over one.
    CHECK(tandem::detail::crc32(bytes.data() + n / 3, n - n / 3, tandem::detail::crc32(bytes.data(), n / 3)) == expected);
  }
}

namespace {

void train_steps(small_net& net, nn::optimizer& opt, int steps) {
  tensor<float> x = test::random_tensor<float>({4, 2}, -1, 1, 9);
  for (int i = 0; i < steps; ++i) {
    opt.zero_grad();
    sum(square(net(x))).backward();
    opt.step();
  }
}

std::vector<double> snapshot(const small_net& net) {
  std::vector<double> all;
  for (const auto& p : net.named_parameters())
    std::visit([&](const auto& t) { for (double v : test::values_of(t)) all.push_back(v); }, p.value);
  for (double v : test::values_of(net.running)) all.push_back(v);
  return all;
}

// A saved checkpoint's bytes, and a second model (from another seed) to
// load bad copies of it into.
struct saved_and_target {
  std::vector<std::uint8_t> bytes;
  small_net target;
  std::vector<double> before;
};
saved_and_target save_one(const std::string& name, std::uint64_t seed) {
  generator gen(seed), other(seed + 1);
  small_net net(gen);
  nn::save(scratch(name), net);
  small_net target(other);
  auto before = snapshot(target);
  return {read_bytes(scratch(name)), target, before};
}

}  // namespace

TEST_CASE("a checkpoint restores a model and its optimizer; training resumes exactly") {
  generator gen(1);
  small_net net(gen);
  nn::adam opt(net.named_parameters(), {.lr = 0.05});
  train_steps(net, opt, 3);
  net.running.assign(tensor<float>{1.5f, -2.0f, 0.25f});
  auto path = scratch("model.ckpt");
  nn::save(path, net, &opt);

  generator other(2);
  small_net restored(other);
  nn::adam restored_opt(restored.named_parameters(), {.lr = 0.9});
  nn::load(path, restored, &restored_opt);
  CHECK(snapshot(restored) == snapshot(net));
  CHECK(restored_opt.steps() == 3);
  CHECK(restored_opt.learning_rate() == 0.05);

  train_steps(net, opt, 2);
  train_steps(restored, restored_opt, 2);
  CHECK(snapshot(restored) == snapshot(net));

  small_net bare(other);
  nn::save(scratch("bare.ckpt"), net);
  nn::load(scratch("bare.ckpt"), bare);
  CHECK(snapshot(bare) == snapshot(net));
}

TEST_CASE("a checkpoint saved from a GPU loads on the host, and the reverse") {
  test::with_stand_in_device runtime;
  generator gen(3);
  small_net net(gen);
  net.running.assign(tensor<float>{1.5f, -2.0f, 0.25f});
  auto expected = snapshot(net);
  net.to(device::cuda(0));
  nn::save(scratch("from_device.ckpt"), net);
  generator other(4);
  small_net host(other);
  nn::load(scratch("from_device.ckpt"), host);
  CHECK(host.a.weight.device() == device::cpu);
  CHECK(snapshot(host) == expected);

  small_net on_device(other);
  on_device.to(device::cuda(0));
  nn::load(scratch("from_device.ckpt"), on_device);
  CHECK(on_device.a.weight.device() == device::cuda(0));
  CHECK(on_device.running.device() == device::cuda(0));
  CHECK(snapshot(on_device) == expected);
}

TEST_CASE("saving replaces a checkpoint atomically and leaves no temporary file") {
  generator gen(3);
  small_net net(gen);
  auto dir = scratch("atomic").parent_path() / "atomic_dir";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  nn::save(dir / "m.ckpt", net);
  auto first = read_bytes(dir / "m.ckpt");
  net.running.assign(full<float>({3}, 7.0f));
  nn::save(dir / "m.ckpt", net);
  CHECK(read_bytes(dir / "m.ckpt") != first);
  CHECK(std::distance(std::filesystem::directory_iterator(dir), std::filesystem::directory_iterator()) == 1);
  CHECK_THROWS_AS(nn::save(dir / "no_such_folder" / "m.ckpt", net), io_error);
}

TEST_CASE("a truncated or corrupted checkpoint is refused and the model is untouched") {
  auto [saved, target, before] = save_one("good.ckpt", 4);
  // A named reference: clang 14 cannot capture a structured binding (INFO does).
  const auto& bytes = saved;
  auto bad = scratch("bad.ckpt");
  for (std::size_t length = 0; length < bytes.size(); ++length) {
    INFO("truncated to " << length << " of " << bytes.size() << " bytes");
    write_bytes(bad, std::vector<std::uint8_t>(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(length)));
    CHECK_THROWS_AS(nn::load(bad, target), io_error);
  }
  generator flips(6);
  tensor<std::int64_t> where = integers<std::int64_t>({300}, 0, static_cast<std::int64_t>(bytes.size()), flips);
  tensor<std::int64_t> mask = integers<std::int64_t>({300}, 1, 256, flips);
  for (std::int64_t k = 0; k < 300; ++k) {
    auto copy = bytes;
    copy[static_cast<std::size_t>(where.data()[k])] ^= static_cast<std::uint8_t>(mask.data()[k]);
    write_bytes(bad, copy);
    INFO("byte " << where.data()[k] << " flipped");
    CHECK_THROWS_AS(nn::load(bad, target), io_error);
  }
  CHECK(snapshot(target) == before);
  CHECK_THROWS_WITH_AS(nn::load(scratch("absent.ckpt"), target), doctest::Contains("cannot open"), io_error);
  write_bytes(bad, {'n', 'o', 't'});
  CHECK_THROWS_WITH_AS(nn::load(bad, target), doctest::Contains("is not a tandem checkpoint"), io_error);
}

TEST_CASE("a well-sealed checkpoint with a bad header or version is refused") {
  auto [bytes, target, before] = save_one("sealed.ckpt", 7);
  auto bad = scratch("resealed.ckpt");

  auto version = bytes;
  version[8] = 2;
  reseal(version);
  write_bytes(bad, version);
  CHECK_THROWS_WITH_AS(nn::load(bad, target), doctest::Contains("has format version 2"), io_error);

  auto oversized = bytes;
  oversized[12 + 7] = 0x10;  // the header size's top byte
  reseal(oversized);
  write_bytes(bad, oversized);
  CHECK_THROWS_WITH_AS(nn::load(bad, target), doctest::Contains("header larger than 64 MiB"), io_error);

  auto shifted = bytes;
  shifted[12] = static_cast<std::uint8_t>(shifted[12] + 1);  // the header size, one byte off
  reseal(shifted);
  write_bytes(bad, shifted);
  CHECK_THROWS_AS(nn::load(bad, target), io_error);
  CHECK(snapshot(target) == before);
}

TEST_CASE("a checkpoint of another model is refused, naming what differs") {
  generator gen(8);
  small_net net(gen);
  nn::sgd opt(net.named_parameters(), {.lr = 0.1, .momentum = 0.9});
  auto path = scratch("other.ckpt");
  nn::save(path, net, &opt);

  small_net wider(gen, 4);
  const auto before = snapshot(wider);
  CHECK_THROWS_WITH_AS(nn::load(path, wider), doctest::Contains("'model.a.weight' is of shape [2, 3]"), shape_error);
  CHECK(snapshot(wider) == before);

  small_net same(gen);
  CHECK_THROWS_WITH_AS(nn::load(path, same), doctest::Contains("holds 10 entries, the model and optimizer 5"),
                       value_error);
  nn::adam adam(same.named_parameters(), {});
  CHECK_THROWS_WITH_AS(nn::load(path, same, &adam), doctest::Contains("has no 'optimizer.a.weight.exp_avg'"),
                       value_error);
}

TEST_CASE("a sealed checkpoint whose optimizer scalars are impossible is refused before anything is written") {
  // Found by the checkpoint fuzzer (tests/fuzz/corpus/checkpoint/found_negative_learning_rate):
  // the model was written before the learning rate was refused.
  generator gen(8);
  small_net net(gen);
  nn::adam opt(net.named_parameters(), {.lr = 0.05});
  auto path = scratch("scalars.ckpt");
  nn::save(path, net, &opt);
  auto good = read_bytes(path);
  generator other(9);
  small_net target(other);
  nn::adam target_opt(target.named_parameters(), {.lr = 0.5});
  auto before = snapshot(target);
  // The optimizer's scalars (steps, learning rate) are the file's last
  // data, just before the checksum: `value` written `from_end` bytes before
  // the end, and the file resealed.
  auto write_sealed_with = [](std::vector<std::uint8_t> bytes, std::size_t from_end, double value) {
    std::memcpy(bytes.data() + bytes.size() - from_end, &value, sizeof value);
    std::uint32_t crc = detail::crc32(bytes.data(), bytes.size() - 4);
    for (int b = 0; b < 4; ++b) bytes[bytes.size() - 4 + static_cast<std::size_t>(b)] = static_cast<std::uint8_t>(crc >> (8 * b));
    write_bytes(scratch("bad_scalars.ckpt"), bytes);
  };
  for (double lr : {-1.0, std::numeric_limits<double>::infinity(), std::numeric_limits<double>::quiet_NaN()}) {
    write_sealed_with(good, 12, lr);
    CHECK_THROWS_AS(nn::load(scratch("bad_scalars.ckpt"), target, &target_opt), value_error);
    CHECK(snapshot(target) == before);
    CHECK(target_opt.learning_rate() == 0.5);
  }
  for (double steps : {-3.0, 1.5, 1e300}) {
    write_sealed_with(good, 20, steps);
    CHECK_THROWS_AS(nn::load(scratch("bad_scalars.ckpt"), target, &target_opt), value_error);
    CHECK(snapshot(target) == before);
    CHECK(target_opt.steps() == 0);
  }
}
