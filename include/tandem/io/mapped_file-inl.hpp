#pragma once
// mapped_file's definitions (io/mapped_file.hpp): POSIX mmap.

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "tandem/core/error.hpp"
#include "tandem/io/mapped_file.hpp"

namespace tandem::io::detail {

TANDEM_LIBRARY_FUNCTION std::shared_ptr<mapped_file> mapped_file::open(const std::filesystem::path& path,
                                                                      const char* op) {
  auto fail = [&](const std::string& why) {
    return io_error(std::string(op) + ": cannot read '" + path.string() + "': " + why);
  };
  // Non-blocking: opening a FIFO must not wait for a writer before the
  // check below refuses it.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) throw fail(std::strerror(errno));
  struct stat status {};
  if (::fstat(fd, &status) != 0) {
    int saved = errno;
    ::close(fd);
    throw fail(std::strerror(saved));
  }
  if (!S_ISREG(status.st_mode)) {
    ::close(fd);
    throw fail("it is not a regular file");
  }
  auto size = static_cast<std::size_t>(status.st_size);
  void* at = nullptr;
  if (size > 0) {
    at = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    if (at == MAP_FAILED) {
      int saved = errno;
      ::close(fd);
      throw fail(std::strerror(saved));
    }
  }
  ::close(fd);
  return std::shared_ptr<mapped_file>(new mapped_file(static_cast<std::uint8_t*>(at), size));
}

TANDEM_LIBRARY_FUNCTION mapped_file::~mapped_file() {
  if (size_ > 0) ::munmap(data_, size_);
}

}  // namespace tandem::io::detail
