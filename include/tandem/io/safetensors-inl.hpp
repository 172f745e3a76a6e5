#pragma once
// The safetensors reader and writer (io/safetensors.hpp).

#include <algorithm>
#include <cstring>

#include "tandem/autograd/grad_mode.hpp"
#include "tandem/io/atomic_file.hpp"
#include "tandem/io/json.hpp"
#include "tandem/io/mapped_file.hpp"
#include "tandem/io/safetensors.hpp"

namespace tandem::io {

namespace detail {

// The format's own limit on the header.
inline constexpr std::uint64_t safetensors_max_header = 100'000'000;

inline const char* safetensors_dtype(tandem::dtype type) {
  switch (type) {
    case tandem::dtype::boolean: return "BOOL";
    case tandem::dtype::int32: return "I32";
    case tandem::dtype::int64: return "I64";
    case tandem::dtype::float32: return "F32";
    case tandem::dtype::float64: return "F64";
    case tandem::dtype::bfloat16: return "BF16";
    case tandem::dtype::float16: return "F16";
  }
  return "";
}

// The byte size of a format dtype, tandem's or not (0: unknown).
inline std::uint64_t safetensors_dtype_size(std::string_view name) {
  if (name == "BOOL" || name == "U8" || name == "I8" || name == "F8_E5M2" || name == "F8_E4M3") return 1;
  if (name == "I16" || name == "U16" || name == "F16" || name == "BF16") return 2;
  if (name == "I32" || name == "U32" || name == "F32") return 4;
  if (name == "I64" || name == "U64" || name == "F64") return 8;
  return 0;
}

template <class T>
any_tensor mapped_tensor(const std::shared_ptr<mapped_file>& file, std::uint8_t* data, const tandem::shape& extent,
                         const std::function<io_error(const std::string&)>& fail) {
  std::size_t n = static_cast<std::size_t>(tandem::numel(extent));
  if (n == 0) return tensor<T>(extent);
  // Bools are copied and checked in the copy: a view of the mapping could
  // change with the file after the check.
  if (!std::is_same_v<T, bool> && reinterpret_cast<std::uintptr_t>(data) % alignof(T) == 0) {
    auto storage = std::make_shared<tandem::detail::storage>(static_cast<void*>(data), n * sizeof(T),
                                                             [keep = file](void*) {});
    return tensor<T>(std::move(storage), extent, tandem::detail::contiguous_strides(extent), 0);
  }
  tensor<T> copy(extent);
  std::memcpy(static_cast<void*>(copy.data()), data, n * sizeof(T));
  if constexpr (std::is_same_v<T, bool>) {
    const auto* copied = reinterpret_cast<const std::uint8_t*>(copy.data());
    for (std::size_t i = 0; i < n; ++i)
      if (copied[i] > 1) throw fail("holds a BOOL that is neither 0 nor 1");
  }
  return copy;
}

}  // namespace detail

TANDEM_LIBRARY_FUNCTION void save_safetensors(const std::filesystem::path& path, const named_tensors& tensors,
                                              const safetensors_metadata& metadata) {
  no_grad reading;
  struct part {
    const std::string* name;
    any_tensor dense;
    std::uint64_t element, bytes;
  };
  std::vector<part> parts;
  for (const auto& [name, value] : tensors) {
    if (name == "__metadata__") throw value_error("tandem::io::save_safetensors: '__metadata__' cannot name a tensor");
    std::visit(
        [&, &name = name](const auto& t) {
          using T = typename std::decay_t<decltype(t)>::value_type;
          auto dense = t.detach().cpu().contiguous();
          auto bytes = static_cast<std::uint64_t>(dense.numel()) * sizeof(T);
          parts.push_back({&name, any_tensor(std::move(dense)), sizeof(T), bytes});
        },
        value);
  }
  std::stable_sort(parts.begin(), parts.end(), [](const part& a, const part& b) { return a.element > b.element; });
  std::string header = "{";
  if (!metadata.empty()) {
    header += "\"__metadata__\":{";
    bool first = true;
    for (const auto& [key, text] : metadata) {
      header += (first ? "" : ",") + detail::json_quoted(key) + ":" + detail::json_quoted(text);
      first = false;
    }
    header += "}";
  }
  std::uint64_t offset = 0;
  for (const part& p : parts) {
    if (header.size() > 1) header += ",";
    header += detail::json_quoted(*p.name) + ":{\"dtype\":\"" + detail::safetensors_dtype(type_of(p.dense)) + "\",\"shape\":[";
    const tandem::shape& extent = shape_of(p.dense);
    for (std::size_t a = 0; a < extent.size(); ++a) header += (a ? "," : "") + std::to_string(extent[a]);
    header += "],\"data_offsets\":[" + std::to_string(offset) + "," + std::to_string(offset + p.bytes) + "]}";
    offset += p.bytes;
  }
  header += "}";
  header.append((8 - header.size() % 8) % 8, ' ');
  if (header.size() > detail::safetensors_max_header)
    throw value_error("tandem::io::save_safetensors: the header would exceed the format's 100 MB");
  std::uint8_t length[8];
  for (int b = 0; b < 8; ++b) length[b] = static_cast<std::uint8_t>(static_cast<std::uint64_t>(header.size()) >> (8 * b));
  detail::atomic_file file(path, "tandem::io::save_safetensors");
  file.write(length, sizeof length);
  file.write(header.data(), header.size());
  for (const part& p : parts)
    std::visit([&](const auto& t) { file.write(t.data(), p.bytes); }, p.dense);
  file.commit();
}

TANDEM_LIBRARY_FUNCTION safetensors_file::safetensors_file(const std::filesystem::path& path)
    : path_(path), file_(detail::mapped_file::open(path, "tandem::io::safetensors_file")) {
  detail::json_failure fail = [&](const std::string& why) {
    return io_error("tandem::io::safetensors_file: '" + path.string() + "' " + why);
  };
  const std::uint8_t* bytes = file_->data();
  std::uint64_t size = file_->size();
  if (size < 8) throw fail("is truncated (it ends inside its header length)");
  std::uint64_t header = 0;
  for (int b = 0; b < 8; ++b) header |= std::uint64_t{bytes[b]} << (8 * b);
  if (header > detail::safetensors_max_header) throw fail("declares a header over 100 MB");
  if (header > size - 8) throw fail("is truncated (it ends inside its header)");
  if (header == 0 || bytes[8] != '{') throw fail("has a header that is not a JSON object");
  data_start_ = 8 + header;
  std::uint64_t data_size = size - data_start_;

  detail::json_value root =
      detail::parse_json(std::string_view(reinterpret_cast<const char*>(bytes + 8), static_cast<std::size_t>(header)), fail);
  if (root.type != detail::json_value::kind::object) throw fail("has a header that is not a JSON object");
  using kind = detail::json_value::kind;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges;
  for (std::size_t k = 0; k < root.keys.size(); ++k) {
    const std::string& name = root.keys[k];
    const detail::json_value& info = root.items[k];
    if (name == "__metadata__") {
      if (info.type != kind::object) throw fail("has a __metadata__ that is not an object");
      for (std::size_t m = 0; m < info.keys.size(); ++m) {
        if (info.items[m].type != kind::string) throw fail("has __metadata__ '" + info.keys[m] + "' that is not a string");
        metadata_[info.keys[m]] = info.items[m].text;
      }
      continue;
    }
    std::string quoted = "'" + name + "'";
    if (info.type != kind::object) throw fail("describes " + quoted + " with something other than an object");
    const detail::json_value *dtype = nullptr, *extent = nullptr, *offsets = nullptr;
    for (std::size_t f = 0; f < info.keys.size(); ++f) {
      const std::string& key = info.keys[f];
      if (key == "dtype") dtype = &info.items[f];
      else if (key == "shape") extent = &info.items[f];
      else if (key == "data_offsets") offsets = &info.items[f];
      else throw fail("describes " + quoted + " with an unknown field '" + key + "'");
    }
    if (!dtype || !extent || !offsets) throw fail("describes " + quoted + " without dtype, shape or data_offsets");
    if (dtype->type != kind::string) throw fail("gives " + quoted + " a dtype that is not a string");
    std::uint64_t element = detail::safetensors_dtype_size(dtype->text);
    if (element == 0) throw fail("gives " + quoted + " the unknown dtype '" + dtype->text + "'");
    if (extent->type != kind::array || extent->items.size() > 64) throw fail("gives " + quoted + " a shape that is not a list of at most 64 extents");
    if (offsets->type != kind::array || offsets->items.size() != 2) throw fail("gives " + quoted + " data_offsets that are not [begin, end]");
    stored e{dtype->text, {}, 0, 0};
    // The product of the nonzero extents is bounded too: an empty tensor's
    // other axes still make strides, which must not overflow.
    std::uint64_t elements = 1, nonzero = 1;
    for (const auto& item : extent->items) {
      std::uint64_t n = detail::json_unsigned(item, fail, "an extent of " + quoted);
      if (n > 0 && nonzero > (std::uint64_t{1} << 48) / n) throw fail("gives " + quoted + " an impossible shape");
      if (n > 0) nonzero *= n;
      elements *= n;
      e.extent.push_back(static_cast<std::int64_t>(n));
    }
    e.begin = detail::json_unsigned(offsets->items[0], fail, "a data offset of " + quoted);
    e.end = detail::json_unsigned(offsets->items[1], fail, "a data offset of " + quoted);
    if (e.begin > e.end || e.end > data_size) throw fail("places " + quoted + " outside its data");
    if (e.end - e.begin != elements * element)
      throw fail("gives " + quoted + " " + std::to_string(e.end - e.begin) + " bytes; shape " + to_string(e.extent) + " of " +
                 e.dtype + " needs " + std::to_string(elements * element));
    ranges.emplace_back(e.begin, e.end);
    entries_.emplace(name, std::move(e));
  }
  std::sort(ranges.begin(), ranges.end());
  std::uint64_t covered = 0;
  for (const auto& [begin, end] : ranges) {
    if (begin != covered) throw fail(begin < covered ? "has tensors whose data overlap" : "has bytes that no tensor covers");
    covered = end;
  }
  if (covered != data_size) throw fail("has bytes that no tensor covers");
}

TANDEM_LIBRARY_FUNCTION std::vector<std::string> safetensors_file::names() const {
  std::vector<std::string> out;
  for (const auto& [name, e] : entries_) out.push_back(name);
  return out;
}

TANDEM_LIBRARY_FUNCTION const safetensors_file::stored& safetensors_file::entry(const std::string& name) const {
  auto found = entries_.find(name);
  if (found == entries_.end())
    throw value_error("tandem::io::safetensors_file: '" + path_.string() + "' holds no tensor '" + name + "'");
  return found->second;
}

TANDEM_LIBRARY_FUNCTION any_tensor safetensors_file::get(const std::string& name) const {
  const stored& e = entry(name);
  auto fail = [&](const std::string& why) {
    return io_error("tandem::io::safetensors_file: '" + path_.string() + "' entry '" + name + "' " + why);
  };
  std::function<io_error(const std::string&)> failure = fail;
  std::uint8_t* data = file_->data() + data_start_ + e.begin;
  if (e.dtype == "BOOL") return detail::mapped_tensor<bool>(file_, data, e.extent, failure);
  if (e.dtype == "I32") return detail::mapped_tensor<std::int32_t>(file_, data, e.extent, failure);
  if (e.dtype == "I64") return detail::mapped_tensor<std::int64_t>(file_, data, e.extent, failure);
  if (e.dtype == "F32") return detail::mapped_tensor<float>(file_, data, e.extent, failure);
  if (e.dtype == "F64") return detail::mapped_tensor<double>(file_, data, e.extent, failure);
  if (e.dtype == "BF16") return detail::mapped_tensor<bfloat16>(file_, data, e.extent, failure);
  if (e.dtype == "F16") return detail::mapped_tensor<float16>(file_, data, e.extent, failure);
  throw fail("has dtype " + e.dtype + ", which tandem has no element type for");
}

TANDEM_LIBRARY_FUNCTION named_tensors safetensors_file::all() const {
  named_tensors out;
  for (const auto& [name, e] : entries_) out.emplace(name, get(name));
  return out;
}

}  // namespace tandem::io
