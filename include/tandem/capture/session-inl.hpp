#pragma once
// A capture session's definitions (declared in capture/session.hpp): inline
// in header-only builds, compiled once into tandem::compiled.

#include <algorithm>
#include <array>
#include <chrono>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "tandem/capture/session.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/profiling.hpp"
#include "tandem/core/tensor.hpp"
#include "tandem/detail/small_vector.hpp"
#include "tandem/kernels/cpu/elementwise-inl.hpp"
#include "tandem/kernels/cpu/thread_pool.hpp"

namespace tandem::detail {

// The producer of values whose region failed: reading one throws.
class failed_capture final : public deferred_work {
 public:
  std::shared_ptr<storage> defer(const deferred_op&, std::span<deferred_operand>, const shape&) override {
    return nullptr;
  }
  std::shared_ptr<storage> defer_reduction(const deferred_reduction&, const std::shared_ptr<storage>&) override {
    return nullptr;
  }
  void run_pending(const char*) override {
    throw error(
        "tandem::capture: this value was never computed: the captured ops that make it failed (see the error they "
        "threw)");
  }
  void before_write(const storage&) override {}
};

inline failed_capture& failed_capture_work() {
  static failed_capture work;
  return work;
}

#if !TANDEM_HEADER_ONLY
void install_chain_kernels() {
  installed_chain_kernels().store(chain_kernels_for(), std::memory_order_release);
}
#endif

TANDEM_LIBRARY_FUNCTION capture_session::capture_session(variant_cache& cache)
    : cache_(cache), outer_(active_deferred_work()), owner_(&active_deferred_work()) {
  active_deferred_work() = this;
  cache_.count_call();
  // Room for a small region up front: growing the vectors op by op cost
  // 0.1 us of a 10-op call's 1.8-1.9 us (bench_capture's call_capture).
  constexpr std::size_t small_region = 16;
  key_.ops.reserve(small_region);
  key_.kept.reserve(small_region);
  key_.externals.reserve(small_region);
  records_.reserve(small_region);
  values_.reserve(small_region);
  externals_.reserve(small_region);
}

TANDEM_LIBRARY_FUNCTION capture_session::~capture_session() {
  try {
    run_region("the function threw");
  } catch (...) {
    // The values of the region are marked failed (execute): reading one throws.
  }
  active_deferred_work() = outer_;
}

TANDEM_LIBRARY_FUNCTION void capture_session::finish() { run_region("the call returned"); }

TANDEM_LIBRARY_FUNCTION void capture_session::run_pending(const char* why) {
  if (&active_deferred_work() != owner_)
    throw error(
        "tandem::capture: a pending value of a captured call was read on another thread while the call ran; hand "
        "tensors to other threads after the call returns");
  run_region(why);
}

TANDEM_LIBRARY_FUNCTION void capture_session::before_write(const storage& written) {
  if (running_) return;
  // What this session still has to compute is the open region's: its
  // values and its reduction's result.
  if (written.producer() == this)
    return run_region("a pending value was accessed through a non-const tensor (data(), at())");
  for (const external& e : externals_)
    if (e.memory.get() == &written) return run_region("a tensor the region reads is accessed for writing");
}

TANDEM_LIBRARY_FUNCTION std::shared_ptr<storage> capture_session::defer(const deferred_op& op,
                                                                        std::span<deferred_operand> operands,
                                                                        const shape& out_shape) {
  const std::int64_t n = numel(out_shape);
  if (running_ || n == 0 || operands.size() > max_region_operands) return nullptr;
  if (key_.reduction.run) run_region("a reduction ends the region");
  for (deferred_operand& o : operands) {
    if (!o.memory) continue;
    deferred_work* producer = o.memory->producer();
    if (!producer) continue;
    if (producer != this) o.memory->data();
    else if (!(o.contiguous && o.offset == 0 && o.numel == n))
      run_region("an op reads a pending value through a view or a broadcast");
  }
  if (!key_.ops.empty() && n != key_.numel) run_region("the next op runs over another number of elements");
  if (key_.ops.size() >= max_region_ops) run_region("the region holds the most ops a region may");
  key_.numel = n;

  op_signature signature{op.name, op.row, op.result_size, static_cast<std::uint8_t>(operands.size())};
  recorded_op record{op.op};
  for (std::size_t k = 0; k < operands.size(); ++k)
    signature.operands[k] = operand_of(operands[k], record, k, out_shape, n);
  auto result = make_cached<storage>(static_cast<std::size_t>(n) * op.result_size, this);
  key_.ops.push_back(signature);
  records_.push_back(std::move(record));
  values_.push_back(result);
  return result;
}

TANDEM_LIBRARY_FUNCTION std::shared_ptr<storage> capture_session::defer_reduction(
    const deferred_reduction& reduction, const std::shared_ptr<storage>& input) {
  if (running_ || key_.reduction.run || reduction.rows * reduction.length != key_.numel) return nullptr;
  std::size_t value = values_.size();
  while (value-- > 0)
    if (values_[value] == input) break;
  if (value >= values_.size()) return nullptr;
  key_.reduction = {reduction.name, reduction.run, reduction.rows, reduction.length, static_cast<std::uint32_t>(value)};
  reduction_state_ = reduction.state;
  reduction_result_ = make_cached<storage>(static_cast<std::size_t>(reduction.rows) * reduction.result_size, this);
  return reduction_result_;
}

TANDEM_LIBRARY_FUNCTION region_operand capture_session::operand_of(deferred_operand& o, recorded_op& record,
                                                                   std::size_t k, const shape& out_shape,
                                                                   std::int64_t n) {
  if (!o.memory) {
    record.scalars[k] = o.scalar_bits;
    return {operand_kind::scalar, static_cast<std::uint32_t>(k)};
  }
  if (o.memory->producer() == this)
    for (std::size_t i = values_.size(); i-- > 0;)
      if (values_[i] == o.memory) return {operand_kind::value, static_cast<std::uint32_t>(i)};

  external_signature signature;
  signature.element_size = o.element_size;
  const bool flat = o.contiguous && o.numel == n;
  // One element for all: a one-element tensor, or a view broadcasting one
  // (the gradient a sum hands back is such a view).
  const bool single = o.numel == 1 || std::all_of(o.strides.begin(), o.strides.end(), [](std::int64_t s) { return s == 0; });
  signature.gathered = !flat && !single;
  signature.flat_stride = flat ? 1 : 0;
  if (signature.gathered) {
    dims out_strides = contiguous_strides(out_shape);
    const std::array<const dims*, 2> strides{&out_strides, &o.strides};
    std::array<dims, 2> merged;
    merge_axes_into(out_shape, strides.data(), 2, signature.sizes, merged.data());
    signature.out_strides = merged[0];
    signature.in_strides = merged[1];
  }
  const operand_kind kind = signature.gathered ? operand_kind::gathered : operand_kind::flat;
  for (std::size_t e = 0; e < externals_.size(); ++e)
    if (externals_[e].memory == o.memory && externals_[e].offset == o.offset && key_.externals[e] == signature)
      return {kind, static_cast<std::uint32_t>(e)};
  externals_.push_back({o.memory, o.offset, o.memory->version(), o.copy});
  key_.externals.push_back(std::move(signature));
  return {kind, static_cast<std::uint32_t>(externals_.size() - 1)};
}

TANDEM_LIBRARY_FUNCTION void capture_session::run_region(const char* why) {
  if (running_ || key_.ops.empty()) return;
  running_ = true;
  struct done {
    capture_session& session;
    ~done() {
      session.clear_region();
      session.running_ = false;
    }
  } reset{*this};
  key_.kept.assign(values_.size(), false);
  for (std::size_t i = 0; i < values_.size(); ++i) key_.kept[i] = values_[i].use_count() > 1;
  planned_region planned = cache_.plan_for(key_, regions_run_++, why);
  profile_range range(profile_category::capture, planned.first ? "captured region (recorded)" : "captured region");
  range.names_tasks("captured region");
  if (range.recording()) {
    std::string ops;
    for (const auto& op : key_.ops) ops += (ops.empty() ? "" : ", ") + profile_name(op.name);
    ops += std::string(" (run ") + why + ")";
    range.describe([&](profile_event& e) {
      e.detail = std::move(ops);
      e.shapes = "[" + std::to_string(key_.numel) + "]";
    });
  }
  const auto start = std::chrono::steady_clock::now();
  execute(key_, *planned.plan, planned.first);
  cache_.count_time(*planned.key, std::chrono::duration_cast<std::chrono::nanoseconds>(
                                      std::chrono::steady_clock::now() - start).count(), planned.first);
}

TANDEM_LIBRARY_FUNCTION void capture_session::clear_region() {
  key_.numel = 0;
  key_.ops.clear();
  key_.externals.clear();
  key_.kept.clear();
  key_.reduction = {};
  records_.clear();
  values_.clear();
  externals_.clear();
  reduction_state_.reset();
  reduction_result_.reset();
}

namespace capture_detail {
// One op of a region as a tile runs it: where its result goes (a tile
// buffer, or the kept value's memory at the tile's position) and, per
// operand, a tile buffer or a base address stepping `moves` per element of
// the tile's position (1 along the region, 0 for a scalar or one element).
struct step {
  row_function row;
  const void* op;
  std::int32_t out_slot;
  void* out_memory;
  std::size_t inputs;
  std::array<const void*, max_region_operands> base{};
  std::array<std::int32_t, max_region_operands> slot{};
  std::array<std::int64_t, max_region_operands> stride{};
  std::array<std::int64_t, max_region_operands> moves{};
  // The gather an operand reads, or -1.
  std::array<std::int32_t, max_region_operands> gathered{-1, -1, -1, -1};
  // The op of the region it runs, and how a register chain runs it
  // (region_plan's chain_code, from_previous, stored).
  std::uint32_t value = 0;
  register_code code{};
  std::uint8_t from_previous = 0;
  bool stored = true;
  // Which operands read the value the region's reduction reduces.
  std::uint8_t reads_reduced = 0;
};

// Where a step reads and writes over a tile, from the tile's element `from` on.
struct step_operands {
  void* out;
  std::int64_t out_at;
  std::array<const void*, max_region_operands> in{};
  std::array<std::int64_t, max_region_operands> in_at{};
  std::array<std::int64_t, max_region_operands> stride{};
};

// A tensor read through its strides. Where a tile lies within one row of
// the innermost axis and the tensor steps by 0 or 1 along it (a bias beside
// a batch's rows, a channel's scale over its pixels), the tile reads it in
// place; otherwise it is copied into a buffer for the tile.
struct gather {
  row_function copy;
  const std::byte* base;
  std::int64_t element_size;
  std::int32_t slot;
  const dims* sizes;
  std::array<dims, 2> strides;

  // Where the tile [at, at + length) reads it in place, with its stride; null if it must be copied.
  std::pair<const void*, std::int64_t> in_place(std::int64_t at, std::int64_t length) const {
    const std::int64_t inner = sizes->back();
    const std::int64_t step = strides[1].back();
    if ((step != 0 && step != 1) || at / inner != (at + length - 1) / inner) return {nullptr, 0};
    dims index;
    loop_offsets offset(2);
    locate(*sizes, strides.data(), at, index, offset);
    return {base + offset[1] * element_size, step};
  }
};

inline constexpr identity_op copy_op{};

}  // namespace capture_detail

// A variant's first run goes op by op, each over the whole range as eager
// ops do (through buffers of the range's size, not tiles): its time is what
// fusion saves against on the later runs (explain()).
TANDEM_LIBRARY_FUNCTION void capture_session::execute(const region_key& key, const region_plan& plan, bool op_by_op) {
  using capture_detail::gather;
  using capture_detail::step;
  using capture_detail::step_operands;
  const std::size_t count = key.ops.size();
  small_vector<void*, 16> memory(count, nullptr);
  std::int64_t dropped = 0;
  std::int64_t in_tiles = 0;
  std::int64_t chained = 0;
  void* result = nullptr;
  try {
    for (const external& e : externals_)
      if (e.memory->version() != e.version)
        throw error(
            "tandem::capture: a tensor read by captured ops was written in place before they ran, without asking "
            "for writing access first (through a pointer kept from data()); write it through the tensor, or "
            "before the ops that read it");
    for (std::size_t i = 0; i < count; ++i)
      if (plan.runs[i] && key.kept[i]) memory[i] = caching_allocator::allocate(values_[i]->bytes());
    // A reduced value nothing else holds goes, fused, into the reduction's
    // tiles; run op by op, it is written whole and reduced after.
    const bool reduces = key.reduction.run != nullptr;
    const std::uint32_t reduced = key.reduction.value;
    const bool reduced_in_tiles = reduces && !key.kept[reduced] && !op_by_op;
    if (reduces && !key.kept[reduced] && op_by_op)
      memory[reduced] = caching_allocator::allocate(values_[reduced]->bytes());

    std::vector<gather> gathers;
    small_vector<std::int32_t, 8> gathered_at(externals_.size(), -1);
    for (std::size_t e = 0; e < externals_.size(); ++e) {
      const external_signature& signature = key.externals[e];
      if (!signature.gathered) continue;
      const auto* base = static_cast<const std::byte*>(externals_[e].memory->data()) +
                         externals_[e].offset * signature.element_size;
      gathered_at[e] = static_cast<std::int32_t>(gathers.size());
      gathers.push_back({externals_[e].copy, base, signature.element_size, plan.external_slot[e], &signature.sizes,
                         {signature.out_strides, signature.in_strides}});
    }
    std::vector<step> steps;
    steps.reserve(count);
    for (std::size_t i = 0; i < count; ++i) {
      if (!plan.runs[i]) {
        ++dropped;
        continue;
      }
      const op_signature& op = key.ops[i];
      if (!key.kept[i]) in_tiles += key.numel * op.result_size;
      // Built in place: a step assembled aside and copied in stalled on
      // its own stores (a tenth of a small call's time).
      steps.push_back({op.row, records_[i].op.get(), plan.value_slot[i], memory[i], op.operand_count});
      step& s = steps.back();
      for (std::size_t k = 0; k < op.operand_count; ++k) {
        const region_operand& o = op.operands[k];
        s.slot[k] = region_plan::in_memory;
        switch (o.kind) {
          case operand_kind::value:
            s.slot[k] = plan.value_slot[o.index];
            s.base[k] = memory[o.index];
            s.stride[k] = s.moves[k] = 1;
            if (reduced_in_tiles && o.index == reduced) s.reads_reduced |= static_cast<std::uint8_t>(1u << k);
            break;
          case operand_kind::flat: {
            const external_signature& signature = key.externals[o.index];
            s.base[k] = static_cast<const std::byte*>(externals_[o.index].memory->data()) +
                        externals_[o.index].offset * signature.element_size;
            s.stride[k] = s.moves[k] = signature.flat_stride;
            break;
          }
          case operand_kind::gathered:
            s.slot[k] = plan.external_slot[o.index];
            s.gathered[k] = gathered_at[o.index];
            s.stride[k] = 1;
            break;
          case operand_kind::scalar:
            s.base[k] = &records_[i].scalars[o.index];
            break;
        }
      }
      s.value = static_cast<std::uint32_t>(i);
      s.code = plan.chain_code[i];
      s.from_previous = plan.from_previous[i];
      s.stored = plan.stored[i];
    }

    // A plan has chain ops only where the chain's kernels are installed;
    // a first run goes op by op.
    const chain_kernels* chains = chain_kernels_in_use();
    const chain_segment each_alone{0, static_cast<std::uint32_t>(steps.size()), 0};
    const std::span<const chain_segment> segments =
        op_by_op || !chains ? std::span<const chain_segment>(&each_alone, 1) : std::span<const chain_segment>(plan.segments);

    // Tiles end where the innermost rows of the tensors read in place end
    // (a batch norm's channel over its pixels), so that no tile gathers;
    // rows shorter than this are gathered instead of cut into short tiles.
    constexpr std::int64_t shortest_row = 64;
    std::int64_t row_length = 0;
    for (std::size_t g = 0; g < gathers.size() && !op_by_op; ++g) {
      const std::int64_t inner = gathers[g].sizes->back();
      const std::int64_t step = gathers[g].strides[1].back();
      if ((step != 0 && step != 1) || inner < shortest_row || (row_length != 0 && row_length != inner)) {
        row_length = 0;
        break;
      }
      row_length = inner;
    }
    bool all_chained = true;
    for (const chain_segment& g : segments) {
      all_chained = all_chained && g.element_size != 0;
      if (g.element_size && key.numel >= chains->block(g.element_size))
        chained += static_cast<std::int64_t>(g.last - g.first);
    }
    // Runs the region over [begin, end); the reduced value, where it lives
    // in the reduction's tiles, goes to `reduced_tile` from `reduced_from` on.
    auto run_range = [&](std::int64_t begin, std::int64_t end, void* reduced_tile, std::int64_t reduced_from) {
      // Broadcast and strided operands keep tiles short: a gathered one's
      // buffer must stay in the first-level cache.
      const std::int64_t tile = op_by_op ? end - begin : all_chained && gathers.empty() ? chain_tile : capture_tile;
      const std::size_t slot_bytes = buffer_bytes(plan, tile);
      const std::size_t scratch_bytes = plan.slots * slot_bytes;
      auto* scratch =
          scratch_bytes ? static_cast<std::byte*>(caching_allocator::allocate_uncounted(scratch_bytes)) : nullptr;
      auto buffer = [&](std::int32_t slot) { return scratch + static_cast<std::size_t>(slot) * slot_bytes; };
      std::vector<std::pair<const void*, std::int64_t>> read_in_place(gathers.size());
      std::vector<chain_step> chain(steps.size());
      for (std::int64_t at = begin, length = 0; at < end; at += length) {
        length = std::min(tile, end - at);
        if (row_length) length = std::min(length, (at / row_length + 1) * row_length - at);
        for (std::size_t g = 0; g < gathers.size(); ++g) {
          read_in_place[g] = gathers[g].in_place(at, length);
          if (read_in_place[g].first) continue;
          void* out = buffer(gathers[g].slot);
          const void* in = gathers[g].base;
          run_span({gathers[g].copy, &capture_detail::copy_op, &out, &in, 1}, *gathers[g].sizes,
                   gathers[g].strides.data(), 0, at, at + length);
        }
        auto operands_of = [&](const step& s, std::int64_t from) {
          step_operands o{s.out_slot >= 0 ? buffer(s.out_slot) : s.out_memory, (s.out_slot >= 0 ? 0 : at) + from};
          if (reduced_tile && s.value == reduced) {
            o.out = reduced_tile;
            o.out_at = at - reduced_from + from;
          }
          o.stride = s.stride;
          for (std::size_t k = 0; k < s.inputs; ++k) {
            if (reduced_tile && (s.reads_reduced >> k & 1)) {
              o.in[k] = reduced_tile;
              o.in_at[k] = at - reduced_from;
            } else if (s.gathered[k] >= 0 && read_in_place[static_cast<std::size_t>(s.gathered[k])].first) {
              std::tie(o.in[k], o.stride[k]) = read_in_place[static_cast<std::size_t>(s.gathered[k])];
            } else if (s.slot[k] >= 0) {
              o.in[k] = buffer(s.slot[k]);
            } else {
              o.in[k] = s.base[k];
              o.in_at[k] = at * s.moves[k];
            }
            o.in_at[k] += from * o.stride[k];
          }
          return o;
        };
        for (const chain_segment& g : segments) {
          std::int64_t done = 0;
          if (g.element_size) {
            const std::int64_t block = chains->block(g.element_size);
            done = length / block * block;
            // A short tile with a tail (a batch norm's rows of 14x14 pixels)
            // runs as rows: the tail would cost each step a row call of its
            // own, more than the chain saves on the rest (the CNN step ran
            // 5-10% slower captured than eager).
            if (done != length && length < 16 * block) done = 0;
            const auto size = static_cast<std::int64_t>(g.element_size);
            for (std::size_t j = g.first; j < g.last && done; ++j) {
              const step& s = steps[j];
              const step_operands o = operands_of(s, 0);
              chain_step& c = chain[j - g.first];
              c = {s.code.op, static_cast<std::uint8_t>(s.inputs), s.from_previous, s.op, {}, {}, nullptr};
              for (std::size_t k = 0; k < s.inputs; ++k) {
                c.in[k] = static_cast<const std::byte*>(o.in[k]) + o.in_at[k] * size;
                c.step[k] = o.stride[k];
              }
              if (s.stored) c.out = static_cast<std::byte*>(o.out) + o.out_at * size;
            }
            if (done) chains->run(g.element_size, chain.data(), g.last - g.first, done);
          }
          for (std::size_t j = g.first; j < g.last && done < length; ++j) {
            const step_operands o = operands_of(steps[j], done);
            steps[j].row(steps[j].op, length - done, &o.out, o.out_at, 1, o.in.data(), o.in_at.data(),
                         o.stride.data(), output_writes::cached);
          }
        }
      }
      if (scratch) caching_allocator::deallocate_uncounted(scratch, scratch_bytes);
    };
    if (!reduces || op_by_op)
      parallel_for(key.numel, std::max(elementwise_grain, capture_tile),
                   [&](std::int64_t begin, std::int64_t end) { run_range(begin, end, nullptr, 0); });
    if (reduces) {
      result = caching_allocator::allocate(reduction_result_->bytes());
      // The reduction's loop asks for spans of the value, on its threads.
      // Fused, each span runs the region over it: into the span's tile, or
      // (a kept value) into memory, reduced there. Op by op, the value is
      // already in memory.
      struct spans_context {
        decltype(run_range)& run;
        const std::byte* whole;
        std::int64_t element_size;
        bool fused;
      } context{run_range, static_cast<const std::byte*>(memory[reduced]),
                static_cast<std::int64_t>(key.ops[reduced].result_size), !op_by_op};
      const value_spans spans{[](const void* self, std::int64_t first, std::int64_t n, void* tile) -> const void* {
                                const auto& c = *static_cast<const spans_context*>(self);
                                if (c.fused) c.run(first, first + n, c.whole ? nullptr : tile, first);
                                return c.whole ? c.whole + first * c.element_size : tile;
                              },
                              &context};
      key.reduction.run(reduction_state_.get(), spans, key.reduction.rows, key.reduction.length, result);
    }
  } catch (...) {
    for (std::size_t i = 0; i < count; ++i) {
      caching_allocator::deallocate(memory[i], values_[i]->bytes());
      values_[i]->hand_to(&failed_capture_work());
    }
    if (reduction_result_) {
      caching_allocator::deallocate(result, reduction_result_->bytes());
      reduction_result_->hand_to(&failed_capture_work());
    }
    throw;
  }
  if (reduction_result_) {
    reduction_result_->settle(result);
    // Written whole for the reduction alone (op by op): nothing else holds it.
    const std::uint32_t reduced = key.reduction.value;
    if (!key.kept[reduced]) {
      caching_allocator::deallocate(memory[reduced], values_[reduced]->bytes());
      memory[reduced] = nullptr;
    }
  }
  for (std::size_t i = 0; i < count; ++i) values_[i]->settle(memory[i]);
  cache_.count_run(static_cast<std::int64_t>(count), dropped, chained, in_tiles);
}

}  // namespace tandem::detail
