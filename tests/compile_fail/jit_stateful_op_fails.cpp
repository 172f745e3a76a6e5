#include <tandem/tandem.hpp>

// A user op holding its factor: fine eagerly, but a static graph's type
// cannot carry the runtime factor.
struct scale_by_member {
  static constexpr const char* name = "scale_by_member";
  template <class... T>
  using compute = tandem::promote_t<T...>;
  template <class... T>
  using result = tandem::promote_t<T...>;
  double factor;
  template <class V>
  V operator()(const V& a) const {
    return a * V(factor);
  }
};

int main() {
  auto f = tandem::jit([](auto x) { return tandem::elementwise(scale_by_member{2.0}, x); });
  return static_cast<int>(f(tandem::tensor<float>{1, 2}).numel());
}
