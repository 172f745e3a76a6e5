#pragma once
// Every runtime mistake a user can make surfaces as one of these types, with a
// message that names the op and the operands' shapes.

#include <stdexcept>
#include <string>

namespace tandem {

class error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Operand shapes that do not fit the op (broadcasting, matmul, reshape...).
class shape_error : public error {
 public:
  using error::error;
};

// An axis or element index outside its range.
class index_error : public error {
 public:
  using error::error;
};

// An argument whose value the op cannot accept (a zero step, a negative count).
class value_error : public error {
 public:
  using error::error;
};

// A file that cannot be read or written, or whose content is invalid.
class io_error : public error {
 public:
  using error::error;
};

// Operands on different devices, or a device this build cannot reach.
class device_error : public error {
 public:
  using error::error;
};

}  // namespace tandem
