#pragma once
// Loading and saving modules' tensors by name (io/state_dict.hpp).

#include <optional>
#include <set>
#include <vector>

#include "tandem/autograd/grad_mode.hpp"
#include "tandem/io/state_dict.hpp"

namespace tandem::io {

namespace detail {

// Loads `model` from a source reached through `lookup` (its tensor for a
// name, or nothing) whose names are `available`; `where` names it in errors.
TANDEM_LIBRARY_FUNCTION void load_named(nn::module_base& model, const std::vector<std::string>& available,
                                        const std::function<std::optional<any_tensor>(const std::string&)>& lookup,
                                        const weight_mapping& mapping, const std::string& op, const std::string& where) {
  std::vector<nn::named_tensor> wanted = model.named_parameters();
  for (auto& b : model.named_buffers()) wanted.push_back(std::move(b));
  std::set<const void*> model_storages;
  for (const nn::named_tensor& target : wanted)
    std::visit([&](const auto& t) { model_storages.insert(t.storage().get()); }, target.value);
  std::vector<any_tensor> staged;
  std::set<std::string> used;
  for (const nn::named_tensor& target : wanted) {
    std::string name = mapping.file_name ? mapping.file_name(target.name) : target.name;
    std::optional<any_tensor> found = lookup(name);
    if (!found)
      throw value_error(op + ": " + where + " has no '" + name + "'" +
                        (name == target.name ? "" : " (the model's '" + target.name + "')"));
    used.insert(name);
    any_tensor value = mapping.convert ? mapping.convert(target.name, std::move(*found)) : std::move(*found);
    std::visit(
        [&](const auto& t) {
          using T = typename std::decay_t<decltype(t)>::value_type;
          if (type_of(value) != tandem::dtype_of<T>)
            throw value_error(op + ": '" + name + "' in " + where + " is " + std::string(dtype_name(type_of(value))) +
                              ", the model's '" + target.name + "' " + std::string(tandem::dtype_name(tandem::dtype_of<T>)));
          if (shape_of(value) != t.shape())
            throw shape_error(op + ": '" + name + "' in " + where + " has shape " + to_string(shape_of(value)) +
                              ", the model's '" + target.name + "' " + to_string(t.shape()));
          // Staged as the write will read it: on the parameter's device, and
          // a copy where it shares memory with any of the model's tensors
          // (a permuting mapping, a source taken from state_dict), so that
          // no write below changes a value another one reads.
          tensor<T> ready = std::get<tensor<T>>(value);
          if (ready.device() != t.device()) ready = ready.to(t.device());
          else if (model_storages.count(ready.storage().get())) ready = ready.clone();
          value = std::move(ready);
        },
        target.value);
    staged.push_back(std::move(value));
  }
  if (!mapping.allow_unused) {
    std::vector<std::string> unused;
    for (const std::string& name : available)
      if (!used.count(name)) unused.push_back(name);
    if (!unused.empty()) {
      std::string listed;
      for (std::size_t k = 0; k < unused.size() && k < 5; ++k) listed += (k ? ", '" : "'") + unused[k] + "'";
      throw value_error(op + ": " + where + " holds " + std::to_string(unused.size()) +
                        " tensor(s) the model does not ask for (" + listed + (unused.size() > 5 ? ", ..." : "") +
                        "); weight_mapping::allow_unused permits them");
    }
  }
  no_grad writing;
  for (std::size_t k = 0; k < wanted.size(); ++k)
    std::visit([&](auto& t) { t.assign(std::get<std::decay_t<decltype(t)>>(staged[k])); }, wanted[k].value);
}

}  // namespace detail

TANDEM_LIBRARY_FUNCTION named_tensors state_dict(const nn::module_base& model) {
  named_tensors out;
  for (const auto& p : model.named_parameters()) std::visit([&](const auto& t) { out.emplace(p.name, t); }, p.value);
  for (const auto& b : model.named_buffers()) std::visit([&](const auto& t) { out.emplace(b.name, t); }, b.value);
  return out;
}

TANDEM_LIBRARY_FUNCTION void load_state_dict(nn::module_base& model, const named_tensors& source, const weight_mapping& mapping) {
  std::vector<std::string> available;
  for (const auto& [name, t] : source) available.push_back(name);
  detail::load_named(
      model, available,
      [&](const std::string& name) -> std::optional<any_tensor> {
        auto found = source.find(name);
        if (found == source.end()) return std::nullopt;
        return found->second;
      },
      mapping, "tandem::io::load_state_dict", "the source");
}

TANDEM_LIBRARY_FUNCTION void save_safetensors(const std::filesystem::path& path, const nn::module_base& model,
                                              const safetensors_metadata& metadata) {
  save_safetensors(path, state_dict(model), metadata);
}

TANDEM_LIBRARY_FUNCTION void load_safetensors(const std::filesystem::path& path, nn::module_base& model,
                                              const weight_mapping& mapping) {
  safetensors_file file(path);
  detail::load_named(
      model, file.names(),
      [&](const std::string& name) -> std::optional<any_tensor> {
        if (!file.contains(name)) return std::nullopt;
        return file.get(name);
      },
      mapping, "tandem::io::load_safetensors", "'" + path.string() + "'");
}

}  // namespace tandem::io
