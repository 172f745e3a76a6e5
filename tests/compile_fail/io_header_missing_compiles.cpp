// With <tandem/io.hpp>, the real functions take every call the stand-ins
// could: a string literal or a std::string path, with and without an
// optimizer.
#include <tandem/io.hpp>
#include <tandem/tandem.hpp>

int main() {
  tandem::generator gen(1);
  tandem::nn::linear<float> model(2, 2, gen);
  tandem::nn::adam optimizer(model.named_parameters(), {.lr = 1e-3});
  tandem::nn::save("model.ckpt", model);
  tandem::nn::save(std::string("model.ckpt"), model, &optimizer);
  tandem::nn::load("model.ckpt", model, nullptr);
  tandem::nn::load("model.ckpt", model, &optimizer);
  const char* images = "images-idx3-ubyte";
  tandem::tensor<float> x = tandem::data::read_idx_images(images);
  tandem::tensor<std::int64_t> y = tandem::data::read_idx_labels(std::string("labels-idx1-ubyte"));
  return static_cast<int>(x.numel() + y.numel() + tandem::data::read_idx("file").bytes.size());
}
