#pragma once
// dist::parameter_plan: how a module's parameters are cut over the ranks
// in a sharded graph (dist/shard.hpp), by name, as MindSpore's
// parameter_plan.

#include <algorithm>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "tandem/core/error.hpp"
#include "tandem/core/tensor.hpp"
#include "tandem/dist/layout.hpp"
#include "tandem/nn/module.hpp"

namespace tandem::dist {

// How a module's parameters are cut, by name (MindSpore's parameter_plan):
// a function that reads the parameters (a lambda calling the module) gets
// each rank's block of each one named here, and the others whole.
class parameter_plan {
 public:
  parameter_plan() = default;
  parameter_plan(const nn::module_base& model, const std::vector<std::pair<std::string, strategy>>& cuts) {
    const std::vector<nn::named_tensor> parameters = model.named_parameters();
    // Not a structured binding: clang 14 cannot capture one in a lambda.
    for (const auto& named_cut : cuts) {
      const std::string& name = named_cut.first;
      auto found = std::find_if(parameters.begin(), parameters.end(), [&](const auto& p) { return p.name == name; });
      if (found == parameters.end())
        throw error("tandem::dist::parameter_plan: the model has no parameter named '" + name + "'");
      std::visit([&](const auto& t) { entries_.push_back({t.data(), t.shape(), name, named_cut.second}); },
                 found->value);
    }
  }

  struct entry {
    const void* data;
    shape dims;
    std::string name;
    strategy cut;
  };
  // The entry for a tensor that is one of the planned parameters, if any.
  template <class T>
  const entry* find(const tensor<T>& t) const {
    for (const entry& e : entries_)
      if (e.data == static_cast<const void*>(t.data()) && e.dims == t.shape()) return &e;
    return nullptr;
  }

 private:
  std::vector<entry> entries_;
};

}  // namespace tandem::dist
