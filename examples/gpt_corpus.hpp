#pragma once
// The King James Bible as a character-level corpus: the text `bible -f
// "Gen1:1-Rev22:21"` prints (Debian's bible-kjv), one verse a line, each
// line's reference ("Ge1:1 ") stripped. The last tenth is held out for
// validation. A missing, truncated or foreign file is refused with what to
// do about it.

#include <tandem/tandem.hpp>

#include <array>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace kjv {

struct corpus {
  std::string characters;               // the vocabulary, sorted
  std::array<std::int16_t, 256> index;  // byte -> token, -1 outside the vocabulary
  std::vector<std::int64_t> train, validation;

  std::int64_t vocabulary() const { return static_cast<std::int64_t>(characters.size()); }
  std::vector<std::int64_t> encode(const std::string& text) const {
    std::vector<std::int64_t> out;
    for (unsigned char c : text)
      if (index[c] >= 0) out.push_back(index[c]);
    return out;
  }
  std::string decode(const std::vector<std::int64_t>& tokens) const {
    std::string out;
    for (auto t : tokens) out += characters.at(static_cast<std::size_t>(t));
    return out;
  }
};

// "Ge1:1 In the beginning..." -> "In the beginning...", or false where the
// line does not start with a reference.
inline bool strip_reference(const std::string& line, std::string& verse) {
  std::size_t i = 0;
  while (i < line.size() && std::isdigit(static_cast<unsigned char>(line[i]))) ++i;  // 1Co, 2Ki
  std::size_t letters = i;
  while (i < line.size() && std::isalpha(static_cast<unsigned char>(line[i]))) ++i;
  if (i == letters) return false;
  std::size_t digits = i;
  while (i < line.size() && std::isdigit(static_cast<unsigned char>(line[i]))) ++i;
  if (i == digits || i >= line.size() || line[i] != ':') return false;
  std::size_t verse_digits = ++i;
  while (i < line.size() && std::isdigit(static_cast<unsigned char>(line[i]))) ++i;
  if (i == verse_digits || i >= line.size() || line[i] != ' ') return false;
  verse = line.substr(i + 1);
  return true;
}

inline corpus load(const std::string& path) {
  std::ifstream in(path);
  if (!in)
    throw std::runtime_error("cannot read the corpus " + path +
                             " (./tandem.sh demo --model gpt writes it with `bible -f \"Gen1:1-Rev22:21\"` from the "
                             "Debian packages bible-kjv and bible-kjv-text)");
  std::string line, verse, text;
  std::int64_t verses = 0, line_number = 0;
  while (std::getline(in, line)) {
    ++line_number;
    if (line.empty()) continue;
    if (!strip_reference(line, verse))
      throw std::runtime_error(path + ":" + std::to_string(line_number) +
                               ": not a verse of `bible -f` output (a reference such as \"Ge1:1 \" then the text)");
    text += verse;
    text += '\n';
    ++verses;
  }
  // The whole Bible has 31,102 verses and 4.1 million characters.
  if (verses < 31000 || text.size() < 4000000)
    throw std::runtime_error(path + " holds " + std::to_string(verses) + " verses (" + std::to_string(text.size()) +
                             " characters): not the whole King James Bible (31,102 verses); write it again");
  corpus c;
  std::array<bool, 256> seen{};
  for (unsigned char ch : text) seen[ch] = true;
  c.index.fill(-1);
  for (int b = 0; b < 256; ++b)
    if (seen[b]) {
      c.index[b] = static_cast<std::int16_t>(c.characters.size());
      c.characters += static_cast<char>(b);
    }
  const std::vector<std::int64_t> all = c.encode(text);
  const std::size_t split = all.size() * 9 / 10;
  c.train.assign(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(split));
  c.validation.assign(all.begin() + static_cast<std::ptrdiff_t>(split), all.end());
  return c;
}

// `batch` windows of `length` + 1 tokens at random places of `tokens`:
// inputs [batch, length] and the next tokens [batch, length].
struct batch_pair {
  tandem::tensor<std::int64_t> inputs, targets;
};
inline batch_pair windows(const std::vector<std::int64_t>& tokens, std::int64_t batch, std::int64_t length,
                          tandem::generator& gen) {
  const tandem::tensor<std::int64_t> starts =
      tandem::integers<std::int64_t>({batch}, 0, static_cast<std::int64_t>(tokens.size()) - length - 1, gen);
  batch_pair out{tandem::tensor<std::int64_t>(tandem::shape{batch, length}),
                 tandem::tensor<std::int64_t>(tandem::shape{batch, length})};
  for (std::int64_t b = 0; b < batch; ++b)
    for (std::int64_t i = 0; i < length; ++i) {
      const auto at = static_cast<std::size_t>(starts.at(b) + i);
      out.inputs.at(b, i) = tokens[at];
      out.targets.at(b, i) = tokens[at + 1];
    }
  return out;
}

}  // namespace kjv
