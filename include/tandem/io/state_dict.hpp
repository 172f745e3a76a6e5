#pragma once
// A module's parameters and buffers by name, to and from files: what
// PyTorch calls a state_dict. Loading matches every parameter and buffer of
// the model to a tensor of the source by name, through an optional mapping
// (another library's names and layouts: a PyTorch nn.Linear stores its
// weight as [out, in], tandem's linear as [in, out]), checks the dtype and
// the shape of each, and only then writes any: a refused source leaves the
// model as it was.
//
//   io::load_safetensors("gpt2.safetensors", model, {
//       .file_name = [](const std::string& name) { return "transformer." + name; },
//       .convert = [](const std::string& name, io::any_tensor t) -> io::any_tensor {
//         if (!name.ends_with("fc.weight")) return t;
//         return io::as<float>(t).transpose(0, 1).contiguous();
//       }});

#include <filesystem>
#include <functional>
#include <string>

#include "tandem/core/config.hpp"
#include "tandem/io/any_tensor.hpp"
#include "tandem/io/safetensors.hpp"
#include "tandem/nn/module.hpp"

namespace tandem::io {

struct weight_mapping {
  // The source's name for the model's parameter or buffer `name` (by
  // default the same name).
  std::function<std::string(const std::string& name)> file_name = nullptr;
  // The source's tensor for `name`, turned into the model's layout (by
  // default as it is).
  std::function<any_tensor(const std::string& name, any_tensor stored)> convert = nullptr;
  // Whether the source may hold tensors no parameter or buffer asks for
  // (by default that is an error, as in PyTorch's strict loading).
  bool allow_unused = false;
};

// The model's parameters and buffers, by their dotted names ("block0.fc.weight"),
// sharing the model's values.
named_tensors state_dict(const nn::module_base& model);

void load_state_dict(nn::module_base& model, const named_tensors& source, const weight_mapping& mapping = {});

void save_safetensors(const std::filesystem::path& path, const nn::module_base& model,
                      const safetensors_metadata& metadata = {});
void load_safetensors(const std::filesystem::path& path, nn::module_base& model, const weight_mapping& mapping = {});

}  // namespace tandem::io

#if TANDEM_HEADER_ONLY
#include "tandem/io/state_dict-inl.hpp"
#endif
