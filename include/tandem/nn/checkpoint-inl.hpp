#pragma once
// Checkpoints' definitions (declared in nn/checkpoint.hpp): inline in
// header-only builds, compiled once into tandem::compiled
// (TANDEM_LIBRARY_FUNCTION, core/config.hpp).

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "tandem/autograd/grad_mode.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/tensor.hpp"
#include "tandem/detail/crc32.hpp"
#include "tandem/io/atomic_file.hpp"
#include "tandem/nn/checkpoint.hpp"

namespace tandem::nn {

namespace detail {

inline constexpr char checkpoint_magic[8] = {'T', 'A', 'N', 'D', 'E', 'M', 'C', 'K'};
inline constexpr std::uint32_t checkpoint_version = 1;
// The header (names, types, shapes, offsets) may not exceed 64 MiB: a
// corrupted length cannot make the reader allocate more.
inline constexpr std::uint64_t checkpoint_max_header = std::uint64_t{64} << 20;

enum class stored_type : std::uint8_t { float32 = 1, float64 = 2 };

struct stored_entry {
  std::string name;
  stored_type type;
  shape extent;
  std::uint64_t offset, length;  // within the data section, in bytes
};

class byte_writer {
 public:
  std::vector<std::uint8_t> bytes;
  template <class T>
  void put(T value) {
    static_assert(std::is_trivially_copyable_v<T>);
    for (std::size_t b = 0; b < sizeof(T); ++b) bytes.push_back(static_cast<std::uint8_t>(as_bits(value) >> (8 * b)));
  }
  void put_bytes(const void* data, std::size_t n) {
    const auto* p = static_cast<const std::uint8_t*>(data);
    bytes.insert(bytes.end(), p, p + n);
  }

 private:
  template <class T>
  static std::uint64_t as_bits(T value) {
    std::uint64_t bits = 0;
    std::memcpy(&bits, &value, sizeof(T));
    return bits;
  }
};

class byte_reader {
 public:
  byte_reader(const std::uint8_t* data, std::size_t size, const std::string& path)
      : data_(data), size_(size), path_(path) {}
  template <class T>
  T get(const char* what) {
    need(sizeof(T), what);
    std::uint64_t bits = 0;
    for (std::size_t b = 0; b < sizeof(T); ++b) bits |= std::uint64_t{data_[at_ + b]} << (8 * b);
    at_ += sizeof(T);
    T value;
    std::memcpy(&value, &bits, sizeof(T));
    return value;
  }
  std::string get_string(std::size_t n, const char* what) {
    need(n, what);
    std::string s(reinterpret_cast<const char*>(data_ + at_), n);
    at_ += n;
    return s;
  }
  std::size_t position() const { return at_; }

 private:
  void need(std::size_t n, const char* what) {
    if (n > size_ - at_)
      throw io_error("tandem::nn::load: '" + path_ + "' is truncated or corrupt (it ends inside " + what + ")");
  }
  const std::uint8_t* data_;
  std::size_t size_, at_ = 0;
  std::string path_;
};

// What a checkpoint holds, by name: "model.<parameter or buffer>",
// "optimizer.<parameter>.<state>", and the optimizer's scalars.
using stored_tensor = std::variant<tensor<float>, tensor<double>>;

TANDEM_LIBRARY_FUNCTION std::vector<std::pair<std::string, stored_tensor>> checkpoint_contents(
    const module_base& model, const optimizer* opt) {
  std::vector<std::pair<std::string, stored_tensor>> out;
  for (const auto& p : model.named_parameters()) out.emplace_back("model." + p.name, p.value);
  for (const auto& b : model.named_buffers()) out.emplace_back("model." + b.name, b.value);
  if (opt)
    for (auto& [name, value] : opt->state()) out.emplace_back("optimizer." + name, value);
  return out;
}

}  // namespace detail

TANDEM_LIBRARY_FUNCTION void save(const std::filesystem::path& path, const module_base& model, const optimizer* opt) {
  auto contents = detail::checkpoint_contents(model, opt);
  detail::byte_writer header, data;
  header.put<std::uint32_t>(static_cast<std::uint32_t>(contents.size()));
  for (const auto& [name, value] : contents) {
    std::visit(
        [&, &name = name](const auto& t) {
          using T = typename std::decay_t<decltype(t)>::value_type;
          tensor<T> c = t.detach().cpu().contiguous();
          std::uint64_t offset = data.bytes.size(), length = static_cast<std::uint64_t>(c.numel()) * sizeof(T);
          for (std::int64_t i = 0; i < c.numel(); ++i) data.put<T>(c.data()[i]);
          header.put<std::uint16_t>(static_cast<std::uint16_t>(name.size()));
          header.put_bytes(name.data(), name.size());
          header.put<std::uint8_t>(static_cast<std::uint8_t>(std::is_same_v<T, float> ? detail::stored_type::float32
                                                                                       : detail::stored_type::float64));
          header.put<std::uint8_t>(static_cast<std::uint8_t>(c.dim()));
          for (std::int64_t e : c.shape()) header.put<std::int64_t>(e);
          header.put<std::uint64_t>(offset);
          header.put<std::uint64_t>(length);
        },
        value);
  }
  detail::byte_writer file;
  file.put_bytes(detail::checkpoint_magic, sizeof detail::checkpoint_magic);
  file.put<std::uint32_t>(detail::checkpoint_version);
  file.put<std::uint64_t>(header.bytes.size());
  file.put_bytes(header.bytes.data(), header.bytes.size());
  file.put<std::uint64_t>(data.bytes.size());
  file.put_bytes(data.bytes.data(), data.bytes.size());
  file.put<std::uint32_t>(tandem::detail::crc32(file.bytes.data(), file.bytes.size()));
  io::detail::write_file_atomically(path, file.bytes.data(), file.bytes.size(), "tandem::nn::save");
}

TANDEM_LIBRARY_FUNCTION void load(const std::filesystem::path& path, module_base& model, optimizer* opt) {
  const std::string where = path.string();
  std::vector<std::uint8_t> bytes;
  {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw io_error("tandem::nn::load: cannot open '" + where + "'");
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  auto fail = [&](const std::string& why) { return io_error("tandem::nn::load: '" + where + "' " + why); };
  if (bytes.size() < sizeof detail::checkpoint_magic + 4 + 8 + 8 + 4 ||
      std::memcmp(bytes.data(), detail::checkpoint_magic, sizeof detail::checkpoint_magic) != 0)
    throw fail("is not a tandem checkpoint");
  std::uint32_t stored_crc = 0;
  for (int b = 0; b < 4; ++b) stored_crc |= std::uint32_t{bytes[bytes.size() - 4 + static_cast<std::size_t>(b)]} << (8 * b);
  if (tandem::detail::crc32(bytes.data(), bytes.size() - 4) != stored_crc)
    throw fail("is corrupt or truncated (its checksum does not match)");

  detail::byte_reader in(bytes.data(), bytes.size() - 4, where);
  in.get_string(sizeof detail::checkpoint_magic, "the magic number");
  std::uint32_t version = in.get<std::uint32_t>("the version");
  if (version != detail::checkpoint_version)
    throw fail("has format version " + std::to_string(version) + "; this tandem reads version " +
               std::to_string(detail::checkpoint_version));
  std::uint64_t header_size = in.get<std::uint64_t>("the header size");
  if (header_size > detail::checkpoint_max_header) throw fail("declares a header larger than 64 MiB");
  std::size_t header_start = in.position();
  std::uint32_t count = in.get<std::uint32_t>("the entry count");
  std::vector<detail::stored_entry> entries;
  for (std::uint32_t k = 0; k < count; ++k) {
    detail::stored_entry e;
    e.name = in.get_string(in.get<std::uint16_t>("an entry name"), "an entry name");
    auto type = in.get<std::uint8_t>("an entry type");
    if (type != 1 && type != 2) throw fail("has an unknown element type for '" + e.name + "'");
    e.type = static_cast<detail::stored_type>(type);
    auto rank = in.get<std::uint8_t>("an entry rank");
    std::uint64_t elements = 1;
    for (int axis = 0; axis < rank; ++axis) {
      auto extent = in.get<std::int64_t>("an entry shape");
      if (extent < 0 || (extent > 0 && elements > (std::uint64_t{1} << 40) / static_cast<std::uint64_t>(extent)))
        throw fail("has an impossible shape for '" + e.name + "'");
      elements *= static_cast<std::uint64_t>(extent);
      e.extent.push_back(extent);
    }
    e.offset = in.get<std::uint64_t>("an entry offset");
    e.length = in.get<std::uint64_t>("an entry length");
    if (e.length != elements * (type == 1 ? 4 : 8)) throw fail("has a wrong data length for '" + e.name + "'");
    entries.push_back(std::move(e));
  }
  if (in.position() - header_start != header_size) throw fail("has a header whose size does not match its entries");
  std::uint64_t data_size = in.get<std::uint64_t>("the data size");
  std::size_t data_start = in.position();
  if (data_size != bytes.size() - 4 - data_start) throw fail("has a data section of the wrong size");
  for (const auto& e : entries)
    if (e.offset > data_size || e.length > data_size - e.offset)
      throw fail("has data for '" + e.name + "' outside the file");

  // Match every destination before writing any.
  auto wanted = detail::checkpoint_contents(model, opt);
  std::map<std::string, const detail::stored_entry*> by_name;
  for (const auto& e : entries)
    if (!by_name.emplace(e.name, &e).second) throw fail("holds '" + e.name + "' twice");
  for (const auto& [name, value] : wanted) {
    auto found = by_name.find(name);
    if (found == by_name.end()) throw value_error("tandem::nn::load: '" + where + "' has no '" + name + "'");
    const detail::stored_entry& e = *found->second;
    std::visit(
        [&, &name = name](const auto& t) {
          using T = typename std::decay_t<decltype(t)>::value_type;
          bool same_type = (e.type == detail::stored_type::float32) == std::is_same_v<T, float>;
          if (!same_type || e.extent != t.shape())
            throw shape_error("tandem::nn::load: '" + name + "' is " + (same_type ? "" : "of another type and ") +
                              "of shape " + to_string(e.extent) + " in '" + where + "', " + to_string(t.shape()) +
                              " in the model");
        },
        value);
  }
  if (wanted.size() != entries.size())
    throw value_error("tandem::nn::load: '" + where + "' holds " + std::to_string(entries.size()) +
                      " entries, the model and optimizer " + std::to_string(wanted.size()));

  // Read every value, and check the optimizer's scalars, before writing
  // any: a refused file leaves the model and the optimizer as they were.
  std::vector<detail::stored_tensor> staged;
  for (auto& [name, value] : wanted) {
    const detail::stored_entry& e = *by_name.at(name);
    detail::byte_reader values(bytes.data() + data_start + e.offset, e.length, where);
    std::visit(
        [&](auto& t) {
          using T = typename std::decay_t<decltype(t)>::value_type;
          tensor<T> read(t.shape());
          for (std::int64_t i = 0; i < read.numel(); ++i) read.data()[i] = values.get<T>("a value");
          staged.emplace_back(std::move(read));
        },
        value);
    if (opt && name == "optimizer.steps_and_learning_rate") {
      const auto* scalars = std::get_if<tensor<double>>(&staged.back());
      if (!scalars || scalars->numel() != 2) throw fail("has optimizer scalars of the wrong form");
      optimizer::check_restored_scalars(scalars->data()[0], scalars->data()[1]);
    }
  }
  no_grad writing;
  for (std::size_t k = 0; k < wanted.size(); ++k)
    std::visit([&](auto& t) { t.assign(std::get<std::decay_t<decltype(t)>>(staged[k])); }, wanted[k].second);
  if (opt) opt->restored_from_state();
}

}  // namespace tandem::nn
