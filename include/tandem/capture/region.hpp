#pragma once
// A captured region: a run of elementwise ops over one number of elements,
// recorded by a capture session (capture/session.hpp). Its key is what a
// plan depends on (the ops, how each reads its operands, which results are
// kept), never the runtime values (scalars, op parameters, the tensors'
// contents): those are read on every call, so changing one replans
// nothing. The plan gives each value that is not kept a tile buffer, and
// drops the ops whose results nobody reads.

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tandem/capture/deferred_op.hpp"
#include "tandem/capture/register_chain.hpp"
#include "tandem/core/config.hpp"
#include "tandem/core/shape.hpp"
#include "tandem/kernels/cpu/elementwise.hpp"

namespace tandem::detail {

// How an op reads one operand: the result of an earlier op of the region
// (`index` is that op), a tensor read along the region's flat order
// (contiguous, or one element for all), a tensor gathered tile by tile
// through its strides (broadcast or strided), or a scalar of the op.
enum class operand_kind : std::uint8_t { value, flat, gathered, scalar };

struct region_operand {
  operand_kind kind = operand_kind::scalar;
  std::uint32_t index = 0;
  friend bool operator==(const region_operand&, const region_operand&) = default;
};

inline constexpr std::size_t max_region_operands = 4;

struct op_signature {
  const char* name = "";
  row_function row = nullptr;
  std::uint8_t result_size = 0;
  std::uint8_t operand_count = 0;
  std::array<region_operand, max_region_operands> operands{};
  friend bool operator==(const op_signature&, const op_signature&) = default;
};

// A tensor the region reads from memory. A flat one steps by `flat_stride`
// (1, or 0 for a single element); a gathered one walks `sizes` with strides
// `out_strides` (its tile) and `in_strides` (itself), axes merged.
struct external_signature {
  std::uint8_t element_size = 0;
  bool gathered = false;
  std::int64_t flat_stride = 1;
  dims sizes, out_strides, in_strides;
  friend bool operator==(const external_signature&, const external_signature&) = default;
};

// The reduction ending a region, if any (`run` null: none): over `rows`
// rows of `length` elements of the result of op `value`.
struct reduction_signature {
  const char* name = "";
  decltype(deferred_reduction::run) run = nullptr;
  std::int64_t rows = 0, length = 0;
  std::uint32_t value = 0;
  friend bool operator==(const reduction_signature&, const reduction_signature&) = default;
};

struct region_key {
  std::int64_t numel = 0;
  std::vector<op_signature> ops;
  std::vector<external_signature> externals;
  // Per op: whether its result is kept in memory (something outside the
  // region holds it).
  std::vector<bool> kept;
  reduction_signature reduction;
  friend bool operator==(const region_key&, const region_key&) = default;
};

std::size_t hash_of(const region_key& key);

// Running ops [first, last) (counted among the ops that run, in order)
// that a register chain takes, over elements of `element_size` bytes; or
// (element_size 0) ops run one by one as rows over the tile.
struct chain_segment {
  std::uint32_t first = 0, last = 0;
  std::uint8_t element_size = 0;
};

// Where each value lives while a tile runs.
struct region_plan {
  static constexpr std::int32_t in_memory = -1;
  // Per op: its tile buffer, or in_memory for a kept or reduced result.
  std::vector<std::int32_t> value_slot;
  // Per external: the tile buffer it is gathered into, or in_memory.
  std::vector<std::int32_t> external_slot;
  // Per op: whether it runs (its result is kept or read by an op that runs).
  std::vector<bool> runs;
  // Per op: the op a register chain runs it as, if any.
  std::vector<register_code> chain_code;
  std::vector<chain_segment> segments;
  // Per op in a chain: which operands are the previous step's result, and
  // whether its own result must reach its buffer or memory (something
  // besides the next step reads it).
  std::vector<std::uint8_t> from_previous;
  std::vector<bool> stored;
  std::size_t slots = 0;
  // Bytes per element of the widest value a buffer holds.
  std::size_t widest = 1;
};

// Bytes of one buffer for tiles of `tile` elements. Buffers a whole number
// of pages apart would alias in the store buffer's 4 KB address check
// (every load of one waits on stores to another): an odd number of cache
// lines between them spreads them over the page.
inline std::size_t buffer_bytes(const region_plan& plan, std::int64_t tile) {
  return (static_cast<std::size_t>(tile) * plan.widest + 63) / 64 * 64 + 5 * 64;
}

// Elements per tile where some op runs as a row (each op over the whole
// tile in turn): a region's buffers and the tiles of what it reads and
// writes stay in the first-level cache. On the 8-op chain (16M
// floats, Zen 4) run that way, 512 ran 1.1-1.2x faster than 1024 and 1.5x
// faster than 2048; 256 was as fast as 1024 (bench/capture.cpp,
// docs/benchmarks/capture.md).
inline constexpr std::int64_t capture_tile = 512;
// Elements per tile where every op runs in a register chain
// (capture/register_chain.hpp) and no operand is gathered: buffers are
// touched only by results read out of turn, so a tile is as long as a
// tile's setup needs to be cheap.
// On the same chain, one thread, 16384 ran 1.1x faster than 4096 and 1.25x
// faster than 1024; 65536 was no faster.
inline constexpr std::int64_t chain_tile = 16384;

region_plan plan_region(const region_key& key);

// "16 elements: add, mul, tanh; keeps 1 result, 2 in tiles".
std::string describe(const region_key& key);
// The first way `now` differs from `before`, as a sentence.
std::string difference(const region_key& now, const region_key& before);

}  // namespace tandem::detail

#if TANDEM_HEADER_ONLY
#include "tandem/capture/region-inl.hpp"
#endif
