#pragma once
// The JSON reader and string writer (io/json.hpp).

#include <set>

#include "tandem/io/json.hpp"

namespace tandem::io::detail {

namespace json {

class parser {
 public:
  parser(std::string_view text, const json_failure& fail) : text_(text), fail_(fail) {}

  json_value document() {
    json_value v = value(0);
    space();
    if (at_ != text_.size()) throw fail_("has text after its JSON header");
    return v;
  }

 private:
  static constexpr int max_depth = 64;
  // Each value costs about 100 bytes parsed: a corrupt header of many tiny
  // values cannot take more than about 800 MB. A model of 100,000 tensors
  // has about a million.
  static constexpr std::size_t max_values = std::size_t{8} << 20;

  [[noreturn]] void malformed(const char* what) {
    throw fail_(std::string("has a malformed JSON header (") + what + " at byte " + std::to_string(at_) + ")");
  }
  void space() {
    while (at_ < text_.size() && (text_[at_] == ' ' || text_[at_] == '\t' || text_[at_] == '\n' || text_[at_] == '\r')) ++at_;
  }
  bool take(char c) {
    space();
    if (at_ < text_.size() && text_[at_] == c) return ++at_, true;
    return false;
  }
  void expect(char c, const char* what) {
    if (!take(c)) malformed(what);
  }
  bool word(std::string_view w) {
    if (text_.substr(at_, w.size()) != w) return false;
    at_ += w.size();
    return true;
  }

  json_value value(int depth) {
    if (depth > max_depth) malformed("values nested too deeply");
    if (++values_ > max_values) malformed("more than 8 million values");
    space();
    if (at_ >= text_.size()) malformed("a missing value");
    json_value v;
    char c = text_[at_];
    if (c == '{') {
      ++at_;
      v.type = json_value::kind::object;
      std::set<std::string_view> keys;
      if (take('}')) return v;
      do {
        space();
        v.keys.push_back(string());
        expect(':', "a missing ':'");
        v.items.push_back(value(depth + 1));
      } while (take(','));
      expect('}', "a missing '}'");
      for (const std::string& key : v.keys)
        if (!keys.insert(key).second) throw fail_("has the key '" + key + "' twice in its JSON header");
    } else if (c == '[') {
      ++at_;
      v.type = json_value::kind::array;
      if (take(']')) return v;
      do v.items.push_back(value(depth + 1));
      while (take(','));
      expect(']', "a missing ']'");
    } else if (c == '"') {
      v.type = json_value::kind::string;
      v.text = string();
    } else if (word("true")) {
      v.type = json_value::kind::boolean;
      v.truth = true;
    } else if (word("false")) {
      v.type = json_value::kind::boolean;
    } else if (word("null")) {
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      v.type = json_value::kind::number;
      v.text = number();
    } else {
      malformed("an unexpected character");
    }
    return v;
  }

  std::string number() {
    std::size_t begin = at_;
    auto digits = [&] {
      std::size_t first = at_;
      while (at_ < text_.size() && text_[at_] >= '0' && text_[at_] <= '9') ++at_;
      if (at_ == first) malformed("a number without digits");
    };
    if (text_[at_] == '-') ++at_;
    if (at_ < text_.size() && text_[at_] == '0') ++at_;
    else digits();
    if (at_ < text_.size() && text_[at_] == '.') ++at_, digits();
    if (at_ < text_.size() && (text_[at_] == 'e' || text_[at_] == 'E')) {
      ++at_;
      if (at_ < text_.size() && (text_[at_] == '+' || text_[at_] == '-')) ++at_;
      digits();
    }
    return std::string(text_.substr(begin, at_ - begin));
  }

  unsigned hex4() {
    if (text_.size() - at_ < 4) malformed("a short \\u escape");
    unsigned code = 0;
    for (int k = 0; k < 4; ++k) {
      char h = text_[at_++];
      code <<= 4;
      if (h >= '0' && h <= '9') code |= static_cast<unsigned>(h - '0');
      else if (h >= 'a' && h <= 'f') code |= static_cast<unsigned>(h - 'a' + 10);
      else if (h >= 'A' && h <= 'F') code |= static_cast<unsigned>(h - 'A' + 10);
      else malformed("a bad \\u escape");
    }
    return code;
  }

  static void append_utf8(std::string& out, unsigned code) {
    if (code < 0x80) {
      out += static_cast<char>(code);
    } else if (code < 0x800) {
      out += static_cast<char>(0xC0 | (code >> 6));
      out += static_cast<char>(0x80 | (code & 0x3F));
    } else if (code < 0x10000) {
      out += static_cast<char>(0xE0 | (code >> 12));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (code & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (code >> 18));
      out += static_cast<char>(0x80 | ((code >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (code & 0x3F));
    }
  }

  std::string string() {
    if (at_ >= text_.size() || text_[at_] != '"') malformed("a missing string");
    ++at_;
    std::string out;
    for (;;) {
      if (at_ >= text_.size()) malformed("an unterminated string");
      char c = text_[at_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) malformed("a control character in a string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (at_ >= text_.size()) malformed("an unterminated string");
      switch (char e = text_[at_++]) {
        case '"': case '\\': case '/': out += e; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          unsigned code = hex4();
          if (code >= 0xD800 && code < 0xDC00) {
            if (!word("\\u")) malformed("a lone surrogate");
            unsigned low = hex4();
            if (low < 0xDC00 || low >= 0xE000) malformed("a lone surrogate");
            code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
          } else if (code >= 0xDC00 && code < 0xE000) {
            malformed("a lone surrogate");
          }
          append_utf8(out, code);
          break;
        }
        default: malformed("a bad escape");
      }
    }
  }

  std::string_view text_;
  std::size_t at_ = 0, values_ = 0;
  const json_failure& fail_;
};

}  // namespace json

TANDEM_LIBRARY_FUNCTION json_value parse_json(std::string_view text, const json_failure& fail) {
  return json::parser(text, fail).document();
}

TANDEM_LIBRARY_FUNCTION std::uint64_t json_unsigned(const json_value& v, const json_failure& fail, const std::string& what) {
  bool digits_only = v.type == json_value::kind::number && !v.text.empty() && v.text.size() <= 19;
  for (char c : v.text) digits_only = digits_only && c >= '0' && c <= '9';
  std::uint64_t n = 0;
  if (digits_only)
    for (char c : v.text) n = n * 10 + static_cast<std::uint64_t>(c - '0');
  if (!digits_only || n >= (std::uint64_t{1} << 63)) throw fail("has " + what + " that is not an unsigned integer");
  return n;
}

TANDEM_LIBRARY_FUNCTION std::string json_quoted(std::string_view s) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string out = "\"";
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20) {
      out += "\\u00";
      out += hex[u >> 4];
      out += hex[u & 0xF];
    } else {
      out += c;
    }
  }
  return out + "\"";
}

}  // namespace tandem::io::detail
