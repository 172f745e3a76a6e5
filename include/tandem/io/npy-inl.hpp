#pragma once
// The .npy reader and writer (io/npy.hpp).

#include <algorithm>
#include <bit>
#include <cstring>
#include <functional>
#include <string_view>
#include <utility>

#include "tandem/autograd/grad_mode.hpp"
#include "tandem/io/atomic_file.hpp"
#include "tandem/io/mapped_file.hpp"
#include "tandem/io/npy.hpp"

namespace tandem::io {

namespace detail {

static_assert(std::endian::native == std::endian::little, "tandem::io reads and writes little-endian hosts' memory");

inline constexpr char npy_magic[6] = {'\x93', 'N', 'U', 'M', 'P', 'Y'};
// NumPy itself refuses headers over 10,000 bytes unless told otherwise.
inline constexpr std::size_t npy_max_header = std::size_t{1} << 20;

inline const char* npy_descr(tandem::dtype type) {
  switch (type) {
    case tandem::dtype::boolean: return "|b1";
    case tandem::dtype::int32: return "<i4";
    case tandem::dtype::int64: return "<i8";
    case tandem::dtype::float32: return "<f4";
    case tandem::dtype::float64: return "<f8";
    case tandem::dtype::float16: return "<f2";
    case tandem::dtype::bfloat16: break;  // with_npy_parts refuses it
  }
  return "";
}

// The header: magic, version, length, and the dict, padded with spaces and
// ended by a newline so that the data starts at a multiple of 64 bytes.
TANDEM_LIBRARY_FUNCTION std::vector<std::uint8_t> npy_header(tandem::dtype type, const tandem::shape& extent) {
  std::string dict = std::string("{'descr': '") + npy_descr(type) + "', 'fortran_order': False, 'shape': (";
  for (std::size_t a = 0; a < extent.size(); ++a) dict += (a > 0 ? ", " : "") + std::to_string(extent[a]);
  dict += extent.size() == 1 ? ",), }" : "), }";
  std::size_t prefix = sizeof npy_magic + 2 + 2;
  bool wide = (prefix + dict.size() + 1 + 63) / 64 * 64 - prefix > 0xFFFF;
  if (wide) prefix += 2;
  std::size_t total = (prefix + dict.size() + 1 + 63) / 64 * 64;
  dict.append(total - prefix - dict.size() - 1, ' ');
  dict += '\n';
  std::vector<std::uint8_t> out(npy_magic, npy_magic + sizeof npy_magic);
  out.push_back(wide ? 2 : 1);
  out.push_back(0);
  std::size_t length = dict.size();
  for (int b = 0; b < (wide ? 4 : 2); ++b) out.push_back(static_cast<std::uint8_t>(length >> (8 * b)));
  out.insert(out.end(), dict.begin(), dict.end());
  return out;
}

// Calls `with(header, data, bytes)` for `array` in C order on the host.
template <class With>
void with_npy_parts(const any_tensor& array, With&& with) {
  no_grad reading;
  std::visit(
      [&](const auto& t) {
        using T = typename std::decay_t<decltype(t)>::value_type;
        if constexpr (std::is_same_v<T, bfloat16>)
          throw io_error("tandem::io: NumPy has no bfloat16 dtype, so a .npy or .npz file cannot hold a bfloat16 "
                         "tensor; save it with astype<float>(), or in a safetensors file");
        auto dense = t.detach().cpu().contiguous();
        with(npy_header(tandem::dtype_of<T>, dense.shape()), static_cast<const void*>(dense.data()),
             static_cast<std::size_t>(dense.numel()) * sizeof(T));
      },
      array);
}

TANDEM_LIBRARY_FUNCTION std::vector<std::uint8_t> npy_bytes(const any_tensor& array) {
  std::vector<std::uint8_t> out;
  with_npy_parts(array, [&](std::vector<std::uint8_t> header, const void* data, std::size_t n) {
    out = std::move(header);
    const auto* p = static_cast<const std::uint8_t*>(data);
    out.insert(out.end(), p, p + n);
  });
  return out;
}

// The header's dict, as NumPy writes it: Python literals, keys in quotes,
// a string, a boolean and a tuple of integers.
class npy_dict_reader {
 public:
  npy_dict_reader(std::string_view text, const std::function<io_error(const std::string&)>& fail)
      : text_(text), fail_(fail) {}

  std::string descr;
  bool fortran_order = false;
  tandem::shape extent;

  void read() {
    expect('{');
    bool seen_descr = false, seen_order = false, seen_shape = false;
    while (!peek('}')) {
      std::string key = quoted();
      expect(':');
      if (key == "descr" && !seen_descr) {
        seen_descr = true;
        if (!peek('\'') && !peek('"')) throw fail_("has a structured dtype, which tandem does not read");
        descr = quoted();
      } else if (key == "fortran_order" && !seen_order) {
        seen_order = true;
        fortran_order = boolean();
      } else if (key == "shape" && !seen_shape) {
        seen_shape = true;
        read_shape();
      } else {
        throw fail_("has an unexpected or repeated key '" + key + "' in its header");
      }
      if (!peek('}')) expect(',');
    }
    expect('}');
    skip_space();
    if (at_ != text_.size()) throw fail_("has text after its header's dict");
    if (!seen_descr || !seen_order || !seen_shape) throw fail_("has a header without descr, fortran_order or shape");
  }

 private:
  void skip_space() {
    while (at_ < text_.size() && (text_[at_] == ' ' || text_[at_] == '\t' || text_[at_] == '\n' || text_[at_] == '\r')) ++at_;
  }
  bool peek(char c) {
    skip_space();
    return at_ < text_.size() && text_[at_] == c;
  }
  void expect(char c) {
    if (!peek(c)) throw fail_(std::string("has a malformed header (expected '") + c + "')");
    ++at_;
  }
  std::string quoted() {
    skip_space();
    if (at_ >= text_.size() || (text_[at_] != '\'' && text_[at_] != '"')) throw fail_("has a malformed header (expected a string)");
    char quote = text_[at_++];
    std::size_t end = text_.find(quote, at_);
    if (end == std::string_view::npos) throw fail_("has a malformed header (an unterminated string)");
    std::string s(text_.substr(at_, end - at_));
    at_ = end + 1;
    return s;
  }
  bool boolean() {
    skip_space();
    if (text_.substr(at_, 4) == "True") return at_ += 4, true;
    if (text_.substr(at_, 5) == "False") return at_ += 5, false;
    throw fail_("has a malformed header (fortran_order is neither True nor False)");
  }
  void read_shape() {
    expect('(');
    std::uint64_t elements = 1;
    while (!peek(')')) {
      std::uint64_t length = 0;
      std::size_t digits = 0;
      while (at_ < text_.size() && text_[at_] >= '0' && text_[at_] <= '9') {
        if (length > (std::uint64_t{1} << 48)) throw fail_("has an impossible shape");
        length = length * 10 + static_cast<std::uint64_t>(text_[at_++] - '0');
        ++digits;
      }
      if (digits == 0) throw fail_("has a malformed shape in its header");
      if (at_ < text_.size() && text_[at_] == 'L') ++at_;
      // The product of the nonzero extents: an empty array's other axes
      // still make strides, which must not overflow.
      if (length > 0 && elements > (std::uint64_t{1} << 48) / length) throw fail_("has an impossible shape");
      if (length > 0) elements *= length;
      extent_.push_back(static_cast<std::int64_t>(length));
      if (extent_.size() > 64) throw fail_("has more than 64 axes");
      if (!peek(')')) expect(',');
    }
    expect(')');
    extent = extent_;
  }

  std::string_view text_;
  std::size_t at_ = 0;
  const std::function<io_error(const std::string&)>& fail_;
  tandem::shape extent_;
};

template <class T>
any_tensor npy_values(const std::uint8_t* data, const tandem::shape& extent, bool fortran_order, bool swap,
                      const std::function<io_error(const std::string&)>& fail) {
  tandem::shape stored = extent;
  if (fortran_order) std::reverse(stored.begin(), stored.end());
  tensor<T> out(stored);
  std::size_t n = static_cast<std::size_t>(out.numel());
  auto* bytes = reinterpret_cast<std::uint8_t*>(out.data());
  if (n > 0) std::memcpy(bytes, data, n * sizeof(T));
  // Checked in the copy: the mapped file may change under a check of its own.
  if constexpr (std::is_same_v<T, bool>) {
    for (std::size_t i = 0; i < n; ++i)
      if (bytes[i] > 1) throw fail("holds a bool that is neither 0 nor 1");
  }
  if (swap && sizeof(T) > 1)
    for (std::size_t i = 0; i < n; ++i) std::reverse(bytes + i * sizeof(T), bytes + (i + 1) * sizeof(T));
  if (!fortran_order || extent.size() < 2) return out;
  // Column-major data is the C-order array of the reversed shape, viewed
  // with its axes reversed.
  tandem::detail::dims strides(extent.size());
  std::int64_t step = 1;
  for (std::size_t a = 0; a < extent.size(); ++a) strides[a] = step, step *= extent[a];
  return tensor<T>(out.storage(), extent, strides, 0).contiguous();
}

TANDEM_LIBRARY_FUNCTION any_tensor parse_npy(const std::uint8_t* bytes, std::size_t size, const std::string& where,
                                            const char* op) {
  std::function<io_error(const std::string&)> fail = [&](const std::string& why) {
    return io_error(std::string(op) + ": " + where + " " + why);
  };
  if (size < sizeof npy_magic + 2 || std::memcmp(bytes, npy_magic, sizeof npy_magic) != 0)
    throw fail("is not a .npy file (no \\x93NUMPY magic)");
  std::uint8_t major = bytes[6];
  if (major < 1 || major > 3) throw fail("has .npy format version " + std::to_string(major) + ", not 1 to 3");
  std::size_t length_bytes = major == 1 ? 2 : 4, prefix = 8 + length_bytes;
  if (size < prefix) throw fail("is truncated (it ends inside its header length)");
  std::size_t header = 0;
  for (std::size_t b = 0; b < length_bytes; ++b) header |= std::size_t{bytes[8 + b]} << (8 * b);
  if (header > npy_max_header) throw fail("declares a header over 1 MiB");
  if (size - prefix < header) throw fail("is truncated (it ends inside its header)");
  npy_dict_reader dict(std::string_view(reinterpret_cast<const char*>(bytes + prefix), header), fail);
  dict.read();

  std::string_view descr = dict.descr;
  char order = descr.empty() ? '\0' : descr[0];
  if (order == '<' || order == '>' || order == '|' || order == '=') descr.remove_prefix(1);
  bool swap = order == '>';
  std::size_t element = 0;
  tandem::dtype type{};
  if (descr == "b1" || descr == "?") type = tandem::dtype::boolean, element = 1;
  else if (descr == "i4") type = tandem::dtype::int32, element = 4;
  else if (descr == "i8") type = tandem::dtype::int64, element = 8;
  else if (descr == "f4") type = tandem::dtype::float32, element = 4;
  else if (descr == "f8") type = tandem::dtype::float64, element = 8;
  else if (descr == "f2") type = tandem::dtype::float16, element = 2;
  else throw fail("holds dtype '" + dict.descr + "', which tandem has no element type for");

  std::uint64_t expected = static_cast<std::uint64_t>(tandem::numel(dict.extent)) * element;
  std::size_t data_size = size - prefix - header;
  if (data_size != expected)
    throw fail("has " + std::to_string(data_size) + " bytes of data; shape " + to_string(dict.extent) + " of " +
               dict.descr + " needs " + std::to_string(expected));
  const std::uint8_t* data = bytes + prefix + header;
  switch (type) {
    case tandem::dtype::boolean: return npy_values<bool>(data, dict.extent, dict.fortran_order, swap, fail);
    case tandem::dtype::int32: return npy_values<std::int32_t>(data, dict.extent, dict.fortran_order, swap, fail);
    case tandem::dtype::int64: return npy_values<std::int64_t>(data, dict.extent, dict.fortran_order, swap, fail);
    case tandem::dtype::float32: return npy_values<float>(data, dict.extent, dict.fortran_order, swap, fail);
    case tandem::dtype::float16: return npy_values<float16>(data, dict.extent, dict.fortran_order, swap, fail);
    case tandem::dtype::float64:
    case tandem::dtype::bfloat16: break;
  }
  return npy_values<double>(data, dict.extent, dict.fortran_order, swap, fail);
}

}  // namespace detail

TANDEM_LIBRARY_FUNCTION void save_npy(const std::filesystem::path& path, const any_tensor& array) {
  detail::with_npy_parts(array, [&](const std::vector<std::uint8_t>& header, const void* data, std::size_t n) {
    detail::atomic_file file(path, "tandem::io::save_npy");
    file.write(header.data(), header.size());
    file.write(data, n);
    file.commit();
  });
}

TANDEM_LIBRARY_FUNCTION any_tensor load_npy(const std::filesystem::path& path) {
  auto file = detail::mapped_file::open(path, "tandem::io::load_npy");
  return detail::parse_npy(file->data(), file->size(), "'" + path.string() + "'", "tandem::io::load_npy");
}

}  // namespace tandem::io
