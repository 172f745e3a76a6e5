// nn::save without <tandem/io.hpp>: the stand-in names the header.
#include <tandem/tandem.hpp>

int main() {
  tandem::generator gen(1);
  tandem::nn::linear<float> model(2, 2, gen);
  tandem::nn::save("model.ckpt", model);
}
