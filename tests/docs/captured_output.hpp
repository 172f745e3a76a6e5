#pragma once
// What a docs snippet prints: std::cout's output while the snippet runs, to
// compare with the output its page shows.

#include <iostream>
#include <sstream>
#include <string>

#include "support/check.hpp"

namespace tandem::test::docs {

class captured_output {
 public:
  captured_output() : saved_(std::cout.rdbuf(text_.rdbuf())) {}
  ~captured_output() { std::cout.rdbuf(saved_); }
  captured_output(const captured_output&) = delete;
  captured_output& operator=(const captured_output&) = delete;

  std::string text() const { return text_.str(); }

 private:
  std::ostringstream text_;
  std::streambuf* saved_;
};

}  // namespace tandem::test::docs
