#pragma once
// atomic_file's definitions (io/atomic_file.hpp).

#include <unistd.h>

#include <algorithm>
#include <random>
#include <system_error>

#include "tandem/core/error.hpp"
#include "tandem/io/atomic_file.hpp"

namespace tandem::io::detail {

TANDEM_LIBRARY_FUNCTION atomic_file::atomic_file(const std::filesystem::path& target, std::string op)
    : target_(target), op_(std::move(op)) {
  std::filesystem::path folder = target.has_parent_path() ? target.parent_path() : std::filesystem::path(".");
  std::random_device entropy;
  temporary_ = folder / ("." + target.filename().string() + ".tmp-" + std::to_string(entropy()) +
                         std::to_string(entropy()));
  file_ = std::fopen(temporary_.c_str(), "wb");
  if (!file_) throw io_error(op_ + ": cannot create '" + temporary_.string() + "'");
}

TANDEM_LIBRARY_FUNCTION atomic_file::~atomic_file() {
  if (!file_) return;
  std::fclose(file_);
  std::error_code ignored;
  std::filesystem::remove(temporary_, ignored);
}

TANDEM_LIBRARY_FUNCTION void atomic_file::fail(const std::string& why) {
  std::fclose(file_);
  file_ = nullptr;
  std::error_code ignored;
  std::filesystem::remove(temporary_, ignored);
  throw io_error(op_ + ": " + why);
}

TANDEM_LIBRARY_FUNCTION void atomic_file::write(const void* bytes, std::size_t n) {
  if (n == 0) return;
  if (std::fwrite(bytes, 1, n, file_) != n) fail("could not write '" + temporary_.string() + "' (disk full?)");
  written_ += n;
}

TANDEM_LIBRARY_FUNCTION void atomic_file::pad_to(std::size_t alignment) {
  static constexpr char zeros[64] = {};
  while (written_ % alignment != 0) write(zeros, std::min<std::size_t>(sizeof zeros, alignment - written_ % alignment));
}

TANDEM_LIBRARY_FUNCTION void atomic_file::commit() {
  // On disk before the rename: after a power loss the target is the old
  // file or the whole new one, never an empty one.
  bool flushed = std::fflush(file_) == 0 && ::fsync(::fileno(file_)) == 0;
  bool closed = std::fclose(file_) == 0;
  file_ = nullptr;
  std::error_code failure;
  if (!flushed || !closed) {
    std::filesystem::remove(temporary_, failure);
    throw io_error(op_ + ": could not write '" + temporary_.string() + "' (disk full?)");
  }
  std::filesystem::rename(temporary_, target_, failure);
  if (failure) {
    std::error_code ignored;
    std::filesystem::remove(temporary_, ignored);
    throw io_error(op_ + ": could not rename the new file onto '" + target_.string() + "': " + failure.message());
  }
}

TANDEM_LIBRARY_FUNCTION void write_file_atomically(const std::filesystem::path& path, const void* bytes, std::size_t n,
                                                   std::string op) {
  atomic_file file(path, std::move(op));
  file.write(bytes, n);
  file.commit();
}

}  // namespace tandem::io::detail
