#pragma once
// Writing a file so that a reader sees the old file or the whole new one,
// never half of one: the bytes go to a temporary file in the target's
// folder, which commit() flushes, closes and renames over the target. A
// writer destroyed before commit() (an exception on the way) removes its
// temporary file and leaves the target as it was.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>

#include "tandem/core/config.hpp"

namespace tandem::io::detail {

class atomic_file {
 public:
  // `op` names the caller in the io_error thrown by any step.
  atomic_file(const std::filesystem::path& target, std::string op);
  atomic_file(const atomic_file&) = delete;
  atomic_file& operator=(const atomic_file&) = delete;
  ~atomic_file();

  void write(const void* bytes, std::size_t n);
  // Zero bytes up to the next multiple of `alignment` from the start.
  void pad_to(std::size_t alignment);
  std::uint64_t written() const { return written_; }
  void commit();

 private:
  [[noreturn]] void fail(const std::string& why);
  std::filesystem::path target_, temporary_;
  std::string op_;
  std::FILE* file_ = nullptr;
  std::uint64_t written_ = 0;
};

// The whole of `bytes` to `path`, atomically.
void write_file_atomically(const std::filesystem::path& path, const void* bytes, std::size_t n, std::string op);

}  // namespace tandem::io::detail

#if TANDEM_HEADER_ONLY
#include "tandem/io/atomic_file-inl.hpp"
#endif
