#pragma once
// One call of a captured function (capture/capture.hpp). Its elementwise
// ops do not run when issued: the eager driver (ops/elementwise/map.hpp)
// hands each to the session, which appends it to the open region and
// returns its result as a tensor whose storage is pending. The region runs
// when something needs one of its values or is about to change what it
// reads: a pending value read (item(), printing, data(), any op without a
// deferred form, such as a reduction or a matmul), a tensor it reads written
// in place, a multi-threaded kernel starting (its threads may read pending
// values), an op over another number of elements, and the end of the call.
// It then runs as one pass over tiles (capture/region.hpp): its ops chained
// in registers or each in turn over a tile of its operands held in small
// buffers, so a chain reads its inputs and writes its kept results once. A
// reduction over the rows of a region's value (sum, mean, max, ...) ends
// the region and reduces the value as tiles compute it. A result is kept when something
// besides the session holds its storage when the region runs (a variable
// still in scope, the call's return value, a value saved for backward);
// the others never reach memory.
//
// Every elementwise op of the library takes this path while a capture runs
// on its thread; the numbers are the eager kernels' own, bit for bit: a
// region runs each op's row function, the one its eager loop runs.

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "tandem/capture/deferred_op.hpp"
#include "tandem/capture/region.hpp"
#include "tandem/capture/variant_cache.hpp"
#include "tandem/core/deferred.hpp"
#include "tandem/core/storage.hpp"

namespace tandem::detail {

class capture_session final : public deferred_work {
 public:
  explicit capture_session(variant_cache& cache);
  capture_session(const capture_session&) = delete;
  capture_session& operator=(const capture_session&) = delete;
  // Runs what is still pending (the call threw) and stops capturing.
  ~capture_session();

  // Appends `op` over `out_shape` to the open region and returns the
  // storage its result will have; null when it must run now instead.
  // TANDEM_LIBRARY_VIRTUAL: no key function header-only (core/config.hpp).
  TANDEM_LIBRARY_VIRTUAL std::shared_ptr<storage> defer(const deferred_op& op, std::span<deferred_operand> operands,
                                                         const shape& out_shape) override;

  // The call returned: runs the open region.
  void finish();

  // Appends a reduction of one of the open region's values, which ends the
  // region: the value is reduced tile by tile as the region computes it.
  TANDEM_LIBRARY_VIRTUAL std::shared_ptr<storage> defer_reduction(const deferred_reduction& reduction,
                                                                   const std::shared_ptr<storage>& input) override;

  TANDEM_LIBRARY_VIRTUAL void run_pending(const char* why) override;
  TANDEM_LIBRARY_VIRTUAL void before_write(const storage& written) override;

 private:
  struct recorded_op {
    std::shared_ptr<const void> op;
    // A scalar operand's value, where the op reads it (8-byte aligned).
    std::array<std::uint64_t, max_region_operands> scalars{};
  };
  struct external {
    std::shared_ptr<storage> memory;
    std::int64_t offset = 0;
    std::uint64_t version = 0;
    row_function copy = nullptr;
  };

  region_operand operand_of(deferred_operand& operand, recorded_op& record, std::size_t k, const shape& out_shape,
                            std::int64_t numel);
  void run_region(const char* why);
  void execute(const region_key& key, const region_plan& plan, bool op_by_op);
  void clear_region();

  variant_cache& cache_;
  deferred_work* outer_;
  region_key key_;
  std::vector<recorded_op> records_;
  std::vector<std::shared_ptr<storage>> values_;
  std::vector<external> externals_;
  // The reduction ending the open region, if any: its reducer and its result.
  std::shared_ptr<const void> reduction_state_;
  std::shared_ptr<storage> reduction_result_;
  std::size_t regions_run_ = 0;
  bool running_ = false;
  // The calling thread, known by the address of its active-work slot: a
  // pending value read on another thread during the call is an error.
  deferred_work* const* owner_;
};

// A region holds this many ops at most; the next one starts a new region.
inline constexpr std::size_t max_region_ops = 256;

}  // namespace tandem::detail

#if TANDEM_HEADER_ONLY
#include "tandem/capture/session-inl.hpp"
#endif
