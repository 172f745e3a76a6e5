// Modules' tensors by name: state_dict shares the model's values; saving a
// module to safetensors and loading it into another restores every
// parameter and buffer; a mapping loads another library's names and
// layouts; a missing, misshapen, mistyped or unused tensor is refused with
// the model untouched.

#include "io/files.hpp"
#include "support/check.hpp"

using namespace tandem;

namespace {

struct stored_model : nn::module<stored_model> {
  nn::linear<float> fc;
  tensor<double> scale = ones<double>({2});
  tensor<float> running = zeros<float>({2});
  explicit stored_model(generator& gen) : fc(3, 2, gen) {
    register_module("fc", fc);
    register_parameter("scale", scale);
    register_buffer("running", running);
  }
};

template <class T>
bool same_values(const tensor<T>& a, const tensor<T>& b) {
  return a.shape() == b.shape() && a.to_vector() == b.to_vector();
}

void check_same(const stored_model& a, const stored_model& b) {
  CHECK(same_values(a.fc.weight, b.fc.weight));
  CHECK(same_values(a.fc.bias, b.fc.bias));
  CHECK(same_values(a.scale, b.scale));
  CHECK(same_values(a.running, b.running));
}

}  // namespace

TEST_CASE("state_dict: names every parameter and buffer and shares their values") {
  generator gen(1);
  stored_model model(gen);
  io::named_tensors dict = io::state_dict(model);
  std::vector<std::string> names;
  for (const auto& [name, t] : dict) names.push_back(name);
  CHECK(names == std::vector<std::string>{"fc.bias", "fc.weight", "running", "scale"});
  CHECK(std::get<tensor<float>>(dict.at("fc.weight")).data() == model.fc.weight.data());
}

TEST_CASE("state_dict: a module saved to safetensors loads into another, values and all") {
  generator gen(2), other(3);
  stored_model saved(gen), loaded(other);
  saved.running.fill(0.5f);
  auto path = test::scratch_file("module.safetensors");
  io::save_safetensors(path, saved, {{"epoch", "3"}});
  io::load_safetensors(path, loaded);
  check_same(saved, loaded);
  CHECK(io::safetensors_file(path).metadata().at("epoch") == "3");
}

TEST_CASE("state_dict: a mapping loads another library's names and layouts") {
  generator gen(4), other(5);
  stored_model source(gen), target(other);
  // PyTorch's names under "model." and its nn.Linear layout, [out, in].
  io::named_tensors theirs;
  for (const auto& [name, t] : io::state_dict(source)) {
    io::any_tensor value = t;
    if (name == "fc.weight") value = source.fc.weight.transpose(0, 1).contiguous();
    theirs.emplace("model." + name, value);
  }
  io::weight_mapping mapping{
      .file_name = [](const std::string& name) { return "model." + name; },
      .convert = [](const std::string& name, io::any_tensor t) -> io::any_tensor {
        if (name != "fc.weight") return t;
        return io::as<float>(t).transpose(0, 1).contiguous();
      }};
  io::load_state_dict(target, theirs, mapping);
  check_same(source, target);
}

TEST_CASE("state_dict: a missing, misshapen, mistyped or unused tensor is refused and the model left as it was") {
  generator gen(6), other(7);
  stored_model source(gen), target(other);
  auto before = target.fc.weight.to_vector();
  auto refused = [&](io::named_tensors dict, const char* why, const io::weight_mapping& mapping = {}) {
    CHECK_THROWS_WITH(io::load_state_dict(target, dict, mapping), doctest::Contains(why));
    CHECK(target.fc.weight.to_vector() == before);
  };
  io::named_tensors good = io::state_dict(source);
  auto without = good;
  without.erase("scale");
  refused(without, "has no 'scale'");
  auto misshapen = good;
  misshapen["fc.weight"] = tensor<float>(shape{2, 3});
  refused(misshapen, "has shape [2, 3]");
  auto mistyped = good;
  mistyped["scale"] = ones<float>({2});
  refused(mistyped, "is float32");
  auto extra = good;
  extra["stray"] = ones<float>({1});
  refused(extra, "does not ask for ('stray')");
  CHECK_THROWS_AS(io::load_state_dict(target, misshapen), shape_error);
  io::load_state_dict(target, extra, {.allow_unused = true});
  check_same(source, target);
}

TEST_CASE("state_dict: a truncated or corrupted module file is refused and the model left as it was") {
  generator gen(8), other(9);
  stored_model saved(gen), target(other);
  auto path = test::scratch_file("module_cut.safetensors");
  io::save_safetensors(path, saved);
  const auto bytes = test::file_bytes(path);
  const auto before = target.fc.weight.to_vector();
  for (std::size_t n = 0; n < bytes.size(); n += 7) {
    test::put_file_bytes(path, std::vector<std::uint8_t>(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(n)));
    CHECK_THROWS_AS(io::load_safetensors(path, target), io_error);
    CHECK(target.fc.weight.to_vector() == before);
  }
}

TEST_CASE("state_dict: a source that shares the model's own memory loads as if copied first") {
  generator gen(10);
  stored_model model(gen);
  model.running.fill(0.25f);
  const auto bias = model.fc.bias.to_vector(), running = model.running.to_vector();
  io::named_tensors swapped = io::state_dict(model);
  std::swap(swapped.at("fc.bias"), swapped.at("running"));
  io::load_state_dict(model, swapped);
  CHECK(model.fc.bias.to_vector() == running);
  CHECK(model.running.to_vector() == bias);
}
