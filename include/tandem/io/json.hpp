#pragma once
// A strict JSON reader and string writer for file headers (safetensors'):
// RFC 8259 values, nested at most 64 deep, at most 8 million of them,
// strings' escapes decoded to UTF-8. Numbers keep their text; what a format needs of them (an unsigned
// integer) it asks for, and anything else is refused there. A malformed
// text throws io_error through the reader's `fail`.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tandem/core/config.hpp"
#include "tandem/core/error.hpp"

namespace tandem::io::detail {

struct json_value {
  enum class kind { null, boolean, number, string, array, object };
  kind type = kind::null;
  bool truth = false;
  std::string text;  // a string's value, or a number's digits
  // An array's elements, or an object's values, in order; an object's
  // keys[k] names items[k] (no key twice).
  std::vector<json_value> items;
  std::vector<std::string> keys;
};

using json_failure = std::function<io_error(const std::string&)>;

// Parses the whole of `text` (surrounding whitespace allowed) as one value.
json_value parse_json(std::string_view text, const json_failure& fail);

// A number that is an unsigned integer below 2^63, or the failure `what`.
std::uint64_t json_unsigned(const json_value& v, const json_failure& fail, const std::string& what);

// `s` as a JSON string literal, quotes included.
std::string json_quoted(std::string_view s);

}  // namespace tandem::io::detail

#if TANDEM_HEADER_ONLY
#include "tandem/io/json-inl.hpp"
#endif
