#pragma once
// The regions a captured function has run (its variants), keyed by their
// structure (capture/region.hpp), each with its plan, and what explain()
// reports: why regions ended, which guard failed where a new variant was
// recorded, and what fusion kept out of memory. One per capture wrapper,
// shared by the calls of every thread; bounded, least recently used first
// out. The lock and the containers live in variant_cache-inl.hpp, out of
// users' translation units.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "tandem/capture/region.hpp"
#include "tandem/core/config.hpp"

namespace tandem {

struct capture_statistics {
  std::int64_t calls = 0;
  std::int64_t regions_run = 0;
  // Regions whose structure was new: each recorded a variant.
  std::int64_t variants_recorded = 0;
  std::int64_t variants_evicted = 0;
  std::int64_t ops_captured = 0;
  // Ops not run because nothing read their results.
  std::int64_t ops_dropped = 0;
  // Ops run in register chains, each batch's result handed to the next op
  // in SIMD registers (capture/register_chain.hpp); the others ran as rows.
  std::int64_t ops_chained = 0;
  // Bytes of intermediate results that lived in tiles and never in memory.
  std::int64_t bytes_kept_in_tiles = 0;
  std::size_t variants_cached = 0;
  std::size_t cache_limit = 0;
  // Time fusion saved: each fused run of a variant against the variant's
  // first run, which goes op by op as eager code does. Negative where
  // fusion lost (regions of a few elements).
  double seconds_saved = 0;
};

namespace detail {

// The plan for a region, its key as the cache holds it, and whether this
// is the variant's first run.
struct planned_region {
  std::shared_ptr<const region_plan> plan;
  std::shared_ptr<const region_key> key;
  bool first = false;
};

class variant_cache {
 public:
  explicit variant_cache(std::size_t limit);
  variant_cache(const variant_cache&) = delete;
  variant_cache& operator=(const variant_cache&) = delete;
  ~variant_cache();

  // The plan for `key`, the `position`-th region of a call, which ended
  // because `why`.
  planned_region plan_for(const region_key& key, std::size_t position, const char* why);
  // How long a run of the variant `key` took (its first run: op by op).
  void count_time(const region_key& key, std::int64_t nanoseconds, bool first);
  void count_call();
  void count_run(std::int64_t ops, std::int64_t dropped, std::int64_t chained, std::int64_t bytes_kept_in_tiles);
  void set_limit(std::size_t limit);

  capture_statistics statistics() const;
  std::string explain() const;

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace detail
}  // namespace tandem

#if TANDEM_HEADER_ONLY
#include "tandem/capture/variant_cache-inl.hpp"
#endif
