// Seed 5: a module run in graph mode (MindSpore's GRAPH_MODE): its forward,
// written once, runs as a static graph.
#include <iostream>

#include <tandem/tandem.hpp>

using namespace tandem;

struct net : nn::module<net> {
  auto forward(const auto& x, const auto& y) const { return mul(x, y); }
};

int main() {
  set_mode(mode::graph);
  tensor<float> x = {1.0f, 2.0f, 3.0f};
  tensor<float> y = {4.0f, 5.0f, 6.0f};
  net n;
  std::cout << n(x, y) << "\n";
}
