#include <tandem/tandem.hpp>

// The same op with its factor passed as a scalar operand: a runtime value of
// the graph, read on every call.
struct scale_by_operand {
  static constexpr const char* name = "scale_by_operand";
  template <class... T>
  using compute = tandem::promote_t<T...>;
  template <class... T>
  using result = tandem::promote_t<T...>;
  template <class V>
  V operator()(const V& a, const V& factor) const {
    return a * factor;
  }
};

int main() {
  auto f = tandem::jit([](auto x) { return tandem::elementwise(scale_by_operand{}, x, 2.0); });
  return static_cast<int>(f(tandem::tensor<float>{1, 2}).numel());
}
