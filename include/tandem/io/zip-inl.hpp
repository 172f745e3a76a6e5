#pragma once
// The ZIP reader and writer (io/zip.hpp).

#include <algorithm>
#include <cstring>
#include <functional>
#include <set>

#include "tandem/core/error.hpp"
#include "tandem/detail/crc32.hpp"
#include "tandem/io/zip.hpp"

#ifndef TANDEM_NO_ZLIB
#include <zlib.h>
#endif

namespace tandem::io::detail {

inline constexpr std::uint32_t zip_local_signature = 0x04034b50, zip_central_signature = 0x02014b50,
                               zip_end_signature = 0x06054b50, zip64_end_signature = 0x06064b50,
                               zip64_locator_signature = 0x07064b50;
inline constexpr std::uint32_t zip_no_32 = 0xFFFFFFFF;
// DEFLATE cannot expand data by more than this factor (its longest
// back-references: 258 bytes from 2 bits, i.e. 1,032 bytes per byte).
inline constexpr std::uint64_t deflate_max_ratio = 1032;

#ifndef TANDEM_NO_ZLIB
// Ends a zlib stream however its scope is left.
struct zlib_stream_end {
  z_stream* stream;
  int (*end)(z_stream*);
  zlib_stream_end(z_stream* s, int (*e)(z_stream*)) : stream(s), end(e) {}
  zlib_stream_end(const zlib_stream_end&) = delete;
  zlib_stream_end& operator=(const zlib_stream_end&) = delete;
  ~zlib_stream_end() { end(stream); }
};
#endif

// Little-endian fields of a byte range, each read checked against its end.
class zip_fields {
 public:
  zip_fields(const std::uint8_t* bytes, std::uint64_t begin, std::uint64_t end, std::function<io_error(const std::string&)> fail)
      : bytes_(bytes), at_(begin), end_(end), fail_(std::move(fail)) {}
  template <class T>
  T get(const char* what) {
    need(sizeof(T), what);
    std::uint64_t value = 0;
    for (std::size_t b = 0; b < sizeof(T); ++b) value |= std::uint64_t{bytes_[at_ + b]} << (8 * b);
    at_ += sizeof(T);
    return static_cast<T>(value);
  }
  std::string text(std::size_t n, const char* what) {
    need(n, what);
    std::string s(reinterpret_cast<const char*>(bytes_ + at_), n);
    at_ += n;
    return s;
  }
  void skip(std::uint64_t n, const char* what) {
    need(n, what);
    at_ += n;
  }
  std::uint64_t position() const { return at_; }

 private:
  void need(std::uint64_t n, const char* what) {
    if (n > end_ - at_) throw fail_(std::string("is truncated or corrupt (it ends inside ") + what + ")");
  }
  const std::uint8_t* bytes_;
  std::uint64_t at_, end_;
  std::function<io_error(const std::string&)> fail_;
};

TANDEM_LIBRARY_FUNCTION std::vector<zip_entry> zip_entries(const std::uint8_t* bytes, std::size_t size,
                                                          const std::string& where, const char* op) {
  std::function<io_error(const std::string&)> fail = [&](const std::string& why) {
    return io_error(std::string(op) + ": " + where + " " + why);
  };
  auto u32_at = [&](std::uint64_t at) {
    std::uint32_t v = 0;
    for (int b = 0; b < 4; ++b) v |= std::uint32_t{bytes[at + static_cast<std::uint64_t>(b)]} << (8 * b);
    return v;
  };
  // The end record: the last 22 bytes, or earlier by the length of the
  // archive comment it ends with.
  std::uint64_t end = size;
  bool found = false;
  if (size >= 22) {
    std::uint64_t lowest = size - 22 > 0xFFFF ? size - 22 - 0xFFFF : 0;
    for (std::uint64_t at = size - 22 + 1; at-- > lowest;) {
      if (u32_at(at) == zip_end_signature &&
          at + 22 + (std::uint64_t{bytes[at + 20]} | std::uint64_t{bytes[at + 21]} << 8) == size) {
        end = at;
        found = true;
        break;
      }
    }
  }
  if (!found) throw fail("is not a zip archive (no end of central directory record)");
  zip_fields record(bytes, end + 4, size, fail);
  auto disk = record.get<std::uint16_t>("the end record"), directory_disk = record.get<std::uint16_t>("the end record");
  std::uint64_t entries_on_disk = record.get<std::uint16_t>("the end record"), count = record.get<std::uint16_t>("the end record");
  std::uint64_t directory_size = record.get<std::uint32_t>("the end record"), directory_offset = record.get<std::uint32_t>("the end record");
  if (disk != 0 || directory_disk != 0 || entries_on_disk != count) throw fail("is a multi-disk archive");
  std::uint64_t directory_end = end;
  if (end >= 20 && u32_at(end - 20) == zip64_locator_signature) {
    zip_fields locator(bytes, end - 16, end, fail);
    locator.get<std::uint32_t>("the ZIP64 locator");
    std::uint64_t record64 = locator.get<std::uint64_t>("the ZIP64 locator");
    if (record64 > end - 20 || end - 20 - record64 < 56 || u32_at(record64) != zip64_end_signature)
      throw fail("has a ZIP64 locator that points outside the file");
    zip_fields z(bytes, record64 + 4, end - 20, fail);
    z.skip(8 + 2 + 2, "the ZIP64 end record");
    if (z.get<std::uint32_t>("the ZIP64 end record") != 0 || z.get<std::uint32_t>("the ZIP64 end record") != 0)
      throw fail("is a multi-disk archive");
    entries_on_disk = z.get<std::uint64_t>("the ZIP64 end record");
    count = z.get<std::uint64_t>("the ZIP64 end record");
    directory_size = z.get<std::uint64_t>("the ZIP64 end record");
    directory_offset = z.get<std::uint64_t>("the ZIP64 end record");
    if (entries_on_disk != count) throw fail("is a multi-disk archive");
    directory_end = record64;
  }
  if (directory_offset > directory_end || directory_size != directory_end - directory_offset)
    throw fail("has a central directory that does not end where the end record begins");
  // Every entry takes 46 bytes of the directory at least.
  if (count > directory_size / 46) throw fail("declares more entries than its central directory holds");

  std::vector<zip_entry> entries;
  std::set<std::string> names;
  zip_fields directory(bytes, directory_offset, directory_end, fail);
  for (std::uint64_t k = 0; k < count; ++k) {
    if (directory.get<std::uint32_t>("a directory entry") != zip_central_signature)
      throw fail("has a corrupt central directory entry");
    directory.skip(4, "a directory entry");
    auto flags = directory.get<std::uint16_t>("a directory entry");
    zip_entry e;
    e.method = directory.get<std::uint16_t>("a directory entry");
    directory.skip(4, "a directory entry");
    e.crc = directory.get<std::uint32_t>("a directory entry");
    e.compressed_size = directory.get<std::uint32_t>("a directory entry");
    e.size = directory.get<std::uint32_t>("a directory entry");
    auto name_length = directory.get<std::uint16_t>("a directory entry");
    auto extra_length = directory.get<std::uint16_t>("a directory entry");
    auto comment_length = directory.get<std::uint16_t>("a directory entry");
    auto start_disk = directory.get<std::uint16_t>("a directory entry");
    directory.skip(6, "a directory entry");
    std::uint64_t header_offset = directory.get<std::uint32_t>("a directory entry");
    e.name = directory.text(name_length, "an entry name");
    std::uint64_t extra_begin = directory.position();
    directory.skip(extra_length, "an entry's extra fields");
    directory.skip(comment_length, "an entry comment");
    zip_fields extra(bytes, extra_begin, extra_begin + extra_length, fail);
    while (extra.position() + 4 <= extra_begin + extra_length) {
      auto id = extra.get<std::uint16_t>("an extra field");
      auto length = extra.get<std::uint16_t>("an extra field");
      std::uint64_t field = extra.position();
      extra.skip(length, "an extra field");
      if (id != 0x0001) continue;
      zip_fields z64(bytes, field, field + length, fail);
      if (e.size == zip_no_32) e.size = z64.get<std::uint64_t>("a ZIP64 field");
      if (e.compressed_size == zip_no_32) e.compressed_size = z64.get<std::uint64_t>("a ZIP64 field");
      if (header_offset == zip_no_32) header_offset = z64.get<std::uint64_t>("a ZIP64 field");
      if (start_disk == 0xFFFF) start_disk = static_cast<std::uint16_t>(z64.get<std::uint32_t>("a ZIP64 field"));
    }
    std::string quoted = "entry '" + e.name + "'";
    if (start_disk != 0) throw fail("is a multi-disk archive");
    if (flags & 0x0001) throw fail("has an encrypted " + quoted + ", which tandem does not read");
    if (e.method != 0 && e.method != 8)
      throw fail("has " + quoted + " compressed by method " + std::to_string(e.method) +
                 "; tandem reads stored (0) and deflated (8) entries");
    if (!names.insert(e.name).second) throw fail("holds " + quoted + " twice");
    if (header_offset > directory_offset || directory_offset - header_offset < 30 || u32_at(header_offset) != zip_local_signature)
      throw fail("has " + quoted + " whose local header is missing or outside the file");
    zip_fields local(bytes, header_offset + 26, directory_offset, fail);
    std::uint64_t local_name = local.get<std::uint16_t>("a local header"), local_extra = local.get<std::uint16_t>("a local header");
    local.skip(local_name + local_extra, "a local header");
    e.data_offset = local.position();
    if (e.compressed_size > directory_offset - e.data_offset) throw fail("has " + quoted + " whose data runs past its end");
    if ((e.method == 0 && e.size != e.compressed_size) ||
        (e.method == 8 && e.size > e.compressed_size * deflate_max_ratio + 16))
      throw fail("declares a size for " + quoted + " that its compressed size cannot hold");
    entries.push_back(std::move(e));
  }
  return entries;
}

TANDEM_LIBRARY_FUNCTION std::vector<std::uint8_t> zip_contents(const std::uint8_t* bytes, const zip_entry& entry,
                                                              const std::string& where, const char* op) {
  auto fail = [&](const std::string& why) {
    return io_error(std::string(op) + ": " + where + " entry '" + entry.name + "' " + why);
  };
  const std::uint8_t* data = bytes + entry.data_offset;
  std::vector<std::uint8_t> out;
  if (entry.method == 0) {
    out.assign(data, data + entry.size);
  } else {
#ifdef TANDEM_NO_ZLIB
    throw fail("is deflated, and this tandem was built without zlib (TANDEM_NO_ZLIB)");
#else
    z_stream stream{};
    if (inflateInit2(&stream, -MAX_WBITS) != Z_OK) throw fail("could not be inflated (zlib would not start)");
    zlib_stream_end ending{&stream, inflateEnd};
    // zlib counts in 32-bit units: feed and drain at most 1 GiB at a time.
    // The output grows as inflate fills it, up to the declared size, so
    // that a corrupt size costs memory only as far as the data goes.
    constexpr std::uint64_t step = std::uint64_t{1} << 30;
    std::uint64_t consumed = 0, produced = 0;
    std::uint8_t spare = 0;
    stream.next_out = &spare;
    int status = Z_OK;
    while (status == Z_OK) {
      if (stream.avail_in == 0 && consumed < entry.compressed_size) {
        std::uint64_t n = std::min(step, entry.compressed_size - consumed);
        stream.next_in = const_cast<Bytef*>(data + consumed);
        stream.avail_in = static_cast<uInt>(n);
        consumed += n;
      }
      if (stream.avail_out == 0 && produced < entry.size) {
        std::uint64_t grown = std::min<std::uint64_t>(entry.size, std::max<std::uint64_t>(2 * out.size(), 1 << 20));
        out.resize(static_cast<std::size_t>(grown));
        std::uint64_t n = std::min(step, grown - produced);
        stream.next_out = out.data() + produced;
        stream.avail_out = static_cast<uInt>(n);
        produced += n;
      }
      // Z_BUF_ERROR: no progress, with the input spent or the output full.
      status = inflate(&stream, Z_NO_FLUSH);
    }
    bool ended = status == Z_STREAM_END && produced - stream.avail_out == entry.size &&
                 consumed - stream.avail_in == entry.compressed_size;
    if (!ended) throw fail("is corrupt (its deflated data does not inflate to its declared size)");
#endif
  }
  if (tandem::detail::crc32(out.data(), out.size()) != entry.crc) throw fail("is corrupt (its CRC-32 does not match)");
  return out;
}

namespace zip_write {

template <class T>
void put(std::vector<std::uint8_t>& out, T value) {
  for (std::size_t b = 0; b < sizeof(T); ++b) out.push_back(static_cast<std::uint8_t>(static_cast<std::uint64_t>(value) >> (8 * b)));
}

// Bit 11: the name is UTF-8 (without it, readers take it as code page 437).
inline std::uint16_t utf8_name_flag(const std::string& name) {
  for (char c : name)
    if (static_cast<unsigned char>(c) >= 0x80) return 0x0800;
  return 0;
}

// 1980-01-01 00:00, the earliest DOS date: archives are reproducible.
inline constexpr std::uint16_t dos_time = 0, dos_date = (1 << 5) | 1;

}  // namespace zip_write

TANDEM_LIBRARY_FUNCTION void zip_writer::add(const std::string& name, const std::vector<std::uint8_t>& contents, bool deflate) {
  using zip_write::put;
  zip_entry e{name, static_cast<std::uint16_t>(deflate ? 8 : 0), tandem::detail::crc32(contents.data(), contents.size()),
              contents.size(), contents.size(), 0};
  std::vector<std::uint8_t> packed;
  if (deflate) {
#ifdef TANDEM_NO_ZLIB
    throw io_error("tandem::io::save_npz: compression needs zlib, and this tandem was built without it (TANDEM_NO_ZLIB)");
#else
    z_stream stream{};
    if (deflateInit2(&stream, Z_DEFAULT_COMPRESSION, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK)
      throw io_error("tandem::io::save_npz: zlib would not start");
    zlib_stream_end ending{&stream, deflateEnd};
    packed.resize(deflateBound(&stream, static_cast<uLong>(contents.size())) + 64);
    constexpr std::uint64_t step = std::uint64_t{1} << 30;
    std::uint64_t consumed = 0, produced = 0;
    int status = Z_OK;
    while (status != Z_STREAM_END) {
      if (stream.avail_in == 0 && consumed < contents.size()) {
        std::uint64_t n = std::min<std::uint64_t>(step, contents.size() - consumed);
        stream.next_in = const_cast<Bytef*>(contents.data() + consumed);
        stream.avail_in = static_cast<uInt>(n);
        consumed += n;
      }
      if (stream.avail_out == 0) {
        if (produced == packed.size()) packed.resize(packed.size() * 2);
        std::uint64_t n = std::min<std::uint64_t>(step, packed.size() - produced);
        stream.next_out = packed.data() + produced;
        stream.avail_out = static_cast<uInt>(n);
        produced += n;
      }
      status = ::deflate(&stream, consumed == contents.size() ? Z_FINISH : Z_NO_FLUSH);
      if (status == Z_STREAM_ERROR) throw io_error("tandem::io::save_npz: zlib failed to compress '" + name + "'");
    }
    packed.resize(produced - stream.avail_out);
    e.compressed_size = packed.size();
#endif
  }
  const std::vector<std::uint8_t>& data = deflate ? packed : contents;
  std::uint64_t offset = out_.written();
  bool wide = e.size >= zip_no_32 || e.compressed_size >= zip_no_32;
  std::uint16_t flags = zip_write::utf8_name_flag(name);
  std::vector<std::uint8_t> header;
  put<std::uint32_t>(header, zip_local_signature);
  put<std::uint16_t>(header, wide ? 45 : 20);
  put<std::uint16_t>(header, flags);
  put<std::uint16_t>(header, e.method);
  put<std::uint16_t>(header, zip_write::dos_time);
  put<std::uint16_t>(header, zip_write::dos_date);
  put<std::uint32_t>(header, e.crc);
  put<std::uint32_t>(header, wide ? zip_no_32 : static_cast<std::uint32_t>(e.compressed_size));
  put<std::uint32_t>(header, wide ? zip_no_32 : static_cast<std::uint32_t>(e.size));
  put<std::uint16_t>(header, static_cast<std::uint16_t>(name.size()));
  put<std::uint16_t>(header, wide ? 20 : 0);
  header.insert(header.end(), name.begin(), name.end());
  if (wide) {
    put<std::uint16_t>(header, 0x0001);
    put<std::uint16_t>(header, 16);
    put<std::uint64_t>(header, e.size);
    put<std::uint64_t>(header, e.compressed_size);
  }
  out_.write(header.data(), header.size());
  out_.write(data.data(), data.size());
  written_.push_back(std::move(e));
  header_offsets_.push_back(offset);
}

TANDEM_LIBRARY_FUNCTION void zip_writer::finish() {
  using zip_write::put;
  std::uint64_t directory_offset = out_.written();
  std::vector<std::uint8_t> directory;
  for (std::size_t k = 0; k < written_.size(); ++k) {
    const zip_entry& e = written_[k];
    std::uint64_t offset = header_offsets_[k];
    std::vector<std::uint8_t> extra;
    if (e.size >= zip_no_32) put<std::uint64_t>(extra, e.size);
    if (e.compressed_size >= zip_no_32) put<std::uint64_t>(extra, e.compressed_size);
    if (offset >= zip_no_32) put<std::uint64_t>(extra, offset);
    bool wide = !extra.empty();
    put<std::uint32_t>(directory, zip_central_signature);
    put<std::uint16_t>(directory, wide ? 45 : 20);
    put<std::uint16_t>(directory, wide ? 45 : 20);
    put<std::uint16_t>(directory, zip_write::utf8_name_flag(e.name));
    put<std::uint16_t>(directory, e.method);
    put<std::uint16_t>(directory, zip_write::dos_time);
    put<std::uint16_t>(directory, zip_write::dos_date);
    put<std::uint32_t>(directory, e.crc);
    put<std::uint32_t>(directory, e.compressed_size >= zip_no_32 ? zip_no_32 : static_cast<std::uint32_t>(e.compressed_size));
    put<std::uint32_t>(directory, e.size >= zip_no_32 ? zip_no_32 : static_cast<std::uint32_t>(e.size));
    put<std::uint16_t>(directory, static_cast<std::uint16_t>(e.name.size()));
    put<std::uint16_t>(directory, static_cast<std::uint16_t>(wide ? extra.size() + 4 : 0));
    put<std::uint16_t>(directory, 0);
    put<std::uint16_t>(directory, 0);
    put<std::uint16_t>(directory, 0);
    put<std::uint32_t>(directory, 0);
    put<std::uint32_t>(directory, offset >= zip_no_32 ? zip_no_32 : static_cast<std::uint32_t>(offset));
    directory.insert(directory.end(), e.name.begin(), e.name.end());
    if (wide) {
      put<std::uint16_t>(directory, 0x0001);
      put<std::uint16_t>(directory, static_cast<std::uint16_t>(extra.size()));
      directory.insert(directory.end(), extra.begin(), extra.end());
    }
  }
  std::uint64_t directory_size = directory.size(), count = written_.size();
  bool wide = count >= 0xFFFF || directory_offset >= zip_no_32 || directory_size >= zip_no_32;
  if (wide) {
    std::uint64_t record_offset = directory_offset + directory_size;
    put<std::uint32_t>(directory, zip64_end_signature);
    put<std::uint64_t>(directory, 44);
    put<std::uint16_t>(directory, 45);
    put<std::uint16_t>(directory, 45);
    put<std::uint32_t>(directory, 0);
    put<std::uint32_t>(directory, 0);
    put<std::uint64_t>(directory, count);
    put<std::uint64_t>(directory, count);
    put<std::uint64_t>(directory, directory_size);
    put<std::uint64_t>(directory, directory_offset);
    put<std::uint32_t>(directory, zip64_locator_signature);
    put<std::uint32_t>(directory, 0);
    put<std::uint64_t>(directory, record_offset);
    put<std::uint32_t>(directory, 1);
  }
  put<std::uint32_t>(directory, zip_end_signature);
  put<std::uint16_t>(directory, 0);
  put<std::uint16_t>(directory, 0);
  put<std::uint16_t>(directory, static_cast<std::uint16_t>(wide ? 0xFFFF : count));
  put<std::uint16_t>(directory, static_cast<std::uint16_t>(wide ? 0xFFFF : count));
  put<std::uint32_t>(directory, wide ? zip_no_32 : static_cast<std::uint32_t>(directory_size));
  put<std::uint32_t>(directory, wide ? zip_no_32 : static_cast<std::uint32_t>(directory_offset));
  put<std::uint16_t>(directory, 0);
  out_.write(directory.data(), directory.size());
}

}  // namespace tandem::io::detail
