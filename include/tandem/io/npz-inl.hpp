#pragma once
// The .npz reader and writer (io/npz.hpp).

#include "tandem/io/atomic_file.hpp"
#include "tandem/io/mapped_file.hpp"
#include "tandem/io/npy.hpp"
#include "tandem/io/npz.hpp"
#include "tandem/io/zip.hpp"

namespace tandem::io {

TANDEM_LIBRARY_FUNCTION void save_npz(const std::filesystem::path& path, const named_tensors& arrays, bool compressed) {
  detail::atomic_file file(path, "tandem::io::save_npz");
  detail::zip_writer archive(file);
  for (const auto& [name, array] : arrays) {
    if (name.empty() || name.size() > 0xFFFF - 4)
      throw value_error("tandem::io::save_npz: an array name must have 1 to 65,531 bytes, not " +
                        std::to_string(name.size()));
    archive.add(name + ".npy", detail::npy_bytes(array), compressed);
  }
  archive.finish();
  file.commit();
}

TANDEM_LIBRARY_FUNCTION named_tensors load_npz(const std::filesystem::path& path) {
  constexpr const char* op = "tandem::io::load_npz";
  const std::string where = "'" + path.string() + "'";
  auto file = detail::mapped_file::open(path, op);
  named_tensors out;
  for (const detail::zip_entry& entry : detail::zip_entries(file->data(), file->size(), where, op)) {
    std::string_view name = entry.name;
    if (name.size() <= 4 || name.substr(name.size() - 4) != ".npy")
      throw io_error(std::string(op) + ": " + where + " holds '" + entry.name + "', which is not a .npy array");
    std::vector<std::uint8_t> npy = detail::zip_contents(file->data(), entry, where, op);
    out.emplace(std::string(name.substr(0, name.size() - 4)),
                detail::parse_npy(npy.data(), npy.size(), where + " entry '" + entry.name + "'", op));
  }
  return out;
}

}  // namespace tandem::io
