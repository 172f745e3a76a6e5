// nn::gpt and nn::generate: the loss and every parameter's gradient
// against PyTorch's on fixed weights (tests/nn/data, written by
// bench/gpt_reference.py), eagerly and as a static graph; generation with
// the key-value cache against full forwards, one plan for every position,
// past the context, reproducible from the seed; its errors; a PyTorch
// model's weights (nanoGPT's names and nn.Linear's layout, as safetensors)
// loaded through a mapping, giving PyTorch's logits.

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

#include "support/check.hpp"
#include "tandem/io.hpp"

using namespace tandem;

namespace {

// tests/nn/data/gpt_reference.txt (bench/gpt_reference.py): per line a
// name, a rank, the extents, ':' and the values.
struct reference_entry {
  shape extents;
  std::vector<double> values;
};
std::map<std::string, reference_entry> read_reference() {
  const char* folder = std::getenv("TANDEM_TEST_DATA");
  REQUIRE_MESSAGE(folder, "TANDEM_TEST_DATA names the folder of gpt_reference.txt (ctest sets it)");
  std::ifstream in(std::string(folder) + "/gpt_reference.txt");
  REQUIRE_MESSAGE(in.good(), "cannot read gpt_reference.txt in " << folder);
  std::map<std::string, reference_entry> out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream words(line);
    std::string name, colon;
    std::int64_t rank = 0;
    words >> name >> rank;
    reference_entry e;
    for (std::int64_t a = 0; a < rank; ++a) e.extents.push_back(0), words >> e.extents.back();
    words >> colon;
    for (double v; words >> v;) e.values.push_back(v);
    REQUIRE(static_cast<std::int64_t>(e.values.size()) == numel(e.extents));
    out[name] = e;
  }
  return out;
}
template <class T>
tensor<T> tensor_of(const reference_entry& e) {
  tensor<T> t(e.extents);
  for (std::size_t i = 0; i < e.values.size(); ++i) t.data()[i] = static_cast<T>(e.values[i]);
  return t;
}

}  // namespace

TEST_CASE("generate with the key-value cache picks what full forwards pick, with one plan for every position") {
  generator gen(6);
  nn::gpt<float, 2> model({.vocabulary = 13, .context = 10, .width = 8, .heads = 2}, gen);
  const tensor<std::int64_t> prompt{{3, 1, 4}, {1, 5, 9}};
  const tensor<std::int64_t> cached = nn::generate(model, prompt, 7, {.temperature = 0});
  REQUIRE(cached.shape() == shape{2, 10});
  // Greedy by full forwards of the whole sequence so far.
  std::vector<std::vector<std::int64_t>> rows{{3, 1, 4}, {1, 5, 9}};
  for (int n = 0; n < 7; ++n) {
    tensor<std::int64_t> idx(shape{2, static_cast<std::int64_t>(rows[0].size())});
    for (std::int64_t b = 0; b < 2; ++b)
      for (std::size_t i = 0; i < rows[b].size(); ++i) idx.at(b, static_cast<std::int64_t>(i)) = rows[b][i];
    tensor<float> logits = model(idx);
    tensor<std::int64_t> next = argmax(logits.take(1, logits.shape(1) - 1, 1).reshape({2, 13}), 1);
    for (std::int64_t b = 0; b < 2; ++b) rows[b].push_back(next.at(b));
  }
  for (std::int64_t b = 0; b < 2; ++b)
    for (std::int64_t i = 0; i < 10; ++i) CHECK(cached.at(b, i) == rows[b][static_cast<std::size_t>(i)]);
  // A block's heads and the block, for the 3-token prompt at once and for
  // one token at a time.
  CHECK(model.decode_statistics().misses == 4);

  // Past the context (the cache rebuilt from its last half), sampled:
  // reproducible from the seed, every token in the vocabulary.
  const auto long_run = nn::generate(model, tensor<std::int64_t>{2}, 25, {.temperature = 0.8, .top_k = 5, .seed = 3});
  CHECK(long_run.shape() == shape{26});
  CHECK(long_run.to_vector() == nn::generate(model, tensor<std::int64_t>{2}, 25, {.temperature = 0.8, .top_k = 5, .seed = 3}).to_vector());
  for (auto t : long_run.to_vector()) CHECK((t >= 0 && t < 13));
  // Batch 1 besides batch 2: one token at a time (the 1-token prompt
  // too), and the rebuilt cache's 5 tokens at once.
  CHECK(model.decode_statistics().misses == 8);
  CHECK_THROWS_AS(nn::generate(model, tensor<std::int64_t>{13}, 1), index_error);
  CHECK_THROWS_AS(nn::generate(model, prompt, 1, {.temperature = -1}), value_error);
}

TEST_CASE("the GPT's loss and every gradient equal PyTorch's on fixed weights, eagerly and as a static graph") {
  const auto reference = read_reference();
  generator gen(0);
  nn::gpt<float, 2> model({.vocabulary = 11, .context = 8, .width = 8, .heads = 2}, gen);
  std::vector<tensor<float>> parameters;
  std::vector<std::string> names;
  for (const auto& p : model.named_parameters()) {
    tensor<float> value = std::get<tensor<float>>(p.value);
    INFO(p.name);
    REQUIRE(reference.count("value." + p.name) == 1);
    no_grad writing;
    value.assign(tensor_of<float>(reference.at("value." + p.name)));
    parameters.push_back(value);
    names.push_back(p.name);
  }
  REQUIRE(parameters.size() * 2 + 3 == reference.size());
  const auto inputs = tensor_of<std::int64_t>(reference.at("inputs")), targets = tensor_of<std::int64_t>(reference.at("targets"));
  auto loss_of = [&](const auto& x, const auto& y) { return nn::cross_entropy(model(x).reshape({-1, 11}), y.reshape({-1})); };
  const double want = reference.at("loss").values[0];
  for (bool graph : {false, true}) {
    INFO((graph ? "jit" : "eager"));
    auto [loss, gradients] =
        graph ? value_and_grad(jit(loss_of), parameters)(inputs, targets) : value_and_grad(loss_of, parameters)(inputs, targets);
    CHECK(loss.item() == doctest::Approx(want).epsilon(1e-5));
    for (std::size_t k = 0; k < parameters.size(); ++k) {
      const auto& r = reference.at("grad." + names[k]);
      double largest = 0;
      for (double v : r.values) largest = std::max(largest, std::abs(v));
      test::check_values(gradients[k], r.extents, r.values, names[k], 2e-3, 2e-3 * largest);
    }
  }
}

TEST_CASE("the GPT loads a PyTorch model's safetensors weights and gives its logits") {
  const std::string folder = std::getenv("TANDEM_TEST_DATA");
  generator gen(1);
  nn::gpt<float, 2> model({.vocabulary = 11, .context = 8, .width = 8, .heads = 2}, gen);
  model.eval();
  // nanoGPT's names for nn::gpt's, and nn.Linear's [out, in] weights.
  const std::pair<const char*, const char*> renamed[] = {
      {"tokens", "wte"}, {"positions", "wpe"}, {"norm1", "ln_1"}, {"attention.qkv", "attn.c_attn"},
      {"attention.proj", "attn.c_proj"}, {"norm2", "ln_2"}, {"fc", "mlp.c_fc"}, {"out", "mlp.c_proj"},
      {"norm", "ln_f"}, {"head", "lm_head"}};
  auto torch_name = [&](std::string name) {
    if (name.starts_with("block")) name = "h." + name.substr(5);
    for (const auto& [ours, theirs] : renamed) {
      std::string part = std::string(".") + ours + ".";
      if (auto at = ("." + name).find(part); at != std::string::npos) return name.replace(at, std::strlen(ours), theirs);
    }
    return name;
  };
  io::load_safetensors(folder + "/gpt_pytorch.safetensors", model,
                       {.file_name = torch_name, .convert = [](const std::string& name, io::any_tensor t) -> io::any_tensor {
                          bool linear = name.ends_with(".weight") && io::shape_of(t).size() == 2 &&
                                        !name.starts_with("tokens") && !name.starts_with("positions");
                          return linear ? io::any_tensor(io::as<float>(t).transpose(0, 1).contiguous()) : t;
                        }});
  io::named_tensors expected = io::load_npz(folder + "/gpt_pytorch_logits.npz");
  tensor<float> logits = model(io::as<std::int64_t>(expected.at("tokens")));
  tensor<double> want = io::as<double>(expected.at("logits"));
  REQUIRE(logits.shape() == want.shape());
  for (std::int64_t i = 0; i < want.numel(); ++i)
    CHECK(logits.data()[i] == doctest::Approx(want.data()[i]).epsilon(1e-4).scale(1));
}
