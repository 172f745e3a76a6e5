#pragma once
// The plan cache: the input signatures (the element type, shape and device
// of every tensor argument) a static graph has run with, and how often a
// call found its signature there (a hit) or added it (a miss), read by
// statistics(). A graph's plan is its type; the cache keeps no state per
// signature beyond the signature, and shapes are checked on every call,
// while the graph runs. Scalars are not part of the signature, so changing
// one never counts as a new plan. The cache is shared by copies of a
// static_graph and safe to use from several threads at once.

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tandem/core/config.hpp"
#include "tandem/core/dtype.hpp"
#include "tandem/core/shape.hpp"
#include "tandem/core/tensor.hpp"

namespace tandem {

// How often one sub-graph of a control-flow construct (a branch, a loop
// body) ran: "cond #1: true branch", "scan #1: step".
struct subgraph_runs {
  std::string name;
  std::int64_t runs = 0;
};

struct plan_statistics {
  std::int64_t hits = 0;
  std::int64_t misses = 0;
  std::vector<std::string> signatures;
  // The control-flow constructs of the graph (graph/control.hpp), their
  // sub-graphs in order, counted per program point.
  std::vector<subgraph_runs> subgraphs;
};

namespace detail {

// A call's signature, packed into integers so that a cache lookup formats
// nothing: per argument, a tensor's element type, rank and extents (all
// tensors are on the CPU for now), or a mark for a scalar.
struct signature {
  small_vector<std::int64_t, 16> words;
  friend bool operator==(const signature& a, const signature& b) {
    return a.words.size() == b.words.size() && std::equal(a.words.begin(), a.words.end(), b.words.begin());
  }
};

struct signature_hash {
  std::size_t operator()(const signature& s) const {
    std::uint64_t h = 1469598103934665603ull;
    for (std::int64_t w : s.words) h = (h ^ static_cast<std::uint64_t>(w)) * 1099511628211ull;
    return static_cast<std::size_t>(h);
  }
};

inline constexpr std::int64_t scalar_mark = -1;

// A tensor's device in its signature: plans are per device, as a graph
// runs differently on each.
inline std::int64_t device_word(device d) { return d.is_cpu() ? -1 : d.index(); }

template <class X>
void add_argument(signature& s, const X& x) {
  if constexpr (is_tensor_v<X>) {
    s.words.push_back(static_cast<std::int64_t>(dtype_of<typename X::value_type>));
    s.words.push_back(device_word(x.device()));
    s.words.push_back(static_cast<std::int64_t>(x.shape().size()));
    for (std::int64_t extent : x.shape()) s.words.push_back(extent);
  } else {
    s.words.push_back(scalar_mark);
  }
}

template <class... A>
signature signature_of(const A&... a) {
  signature s;
  (add_argument(s, a), ...);
  return s;
}

// Whether `s` is the signature of a..., compared word by word without
// building theirs.
template <class... A>
bool is_signature_of(const signature& s, const A&... a) {
  const std::int64_t* word = s.words.begin();
  const std::int64_t* const end = s.words.end();
  auto next_is = [&](std::int64_t w) { return word != end && *word++ == w; };
  auto matches = [&](const auto& x) {
    if constexpr (is_tensor_v<std::decay_t<decltype(x)>>) {
      if (!next_is(static_cast<std::int64_t>(dtype_of<typename std::decay_t<decltype(x)>::value_type>)) ||
          !next_is(device_word(x.device())) || !next_is(static_cast<std::int64_t>(x.shape().size())))
        return false;
      for (std::int64_t extent : x.shape())
        if (!next_is(extent)) return false;
      return true;
    } else {
      return next_is(scalar_mark);
    }
  };
  return (matches(a) && ...) && word == end;
}

// "float32[2, 3]@cpu, scalar": for statistics and messages.
std::string describe(const signature& s);

// The run counts of one control-flow construct's sub-graphs: one set per
// program point (per construct type), whichever graph runs it.
struct construct_counters {
  construct_counters(std::string construct_name, std::vector<std::string> subgraph_names)
      : construct(std::move(construct_name)),
        subgraphs(std::move(subgraph_names)),
        runs(std::make_unique<std::atomic<std::int64_t>[]>(subgraphs.size())) {}
  void ran(std::size_t subgraph) { runs[subgraph].fetch_add(1, std::memory_order_relaxed); }

  std::string construct;
  std::vector<std::string> subgraphs;
  std::unique_ptr<std::atomic<std::int64_t>[]> runs;
};

class plan_cache {
 public:
  plan_cache();
  plan_cache(const plan_cache&) = delete;
  plan_cache& operator=(const plan_cache&) = delete;
  ~plan_cache();

  // Whether a call with this signature ran before; counts a hit if so.
  bool known(const signature& key);
  // The same for a call's arguments: compared in place with the last
  // signature found, so that a graph called again and again with one
  // signature builds none (building and comparing it was a sixth of the
  // instructions of a cached call of jit(x + y)).
  template <class... A>
  bool known_call(const A&... a) {
    if (const signature* last = last_found(); last && is_signature_of(*last, a...)) {
      count_hit();
      return true;
    }
    return known_signature_of(a...);
  }
  // After a call whose signature was not known. Calls racing with one new
  // signature all find none; the first to get here adds it and counts the
  // miss, the others count as hits, so that misses are the signatures seen
  // and hits + misses the calls.
  void insert(const signature& key);
  // A control-flow construct the graph holds, for statistics().
  void add_construct(const construct_counters* counters);
  plan_statistics statistics() const;

 private:
  const signature* last_found() const;
  // known_call's other path, kept out of it: inlined, building a signature
  // made every call save six registers and clear an array on the stack.
  template <class... A>
  TANDEM_COLD bool known_signature_of(const A&... a) {
    return known(signature_of(a...));
  }
  void count_hit();

  // The signatures and the lock around them, in plan-inl.hpp: a translation unit
  // that builds a static graph need not parse <shared_mutex>.
  struct entries;
  std::unique_ptr<entries> entries_;
};

}  // namespace detail
}  // namespace tandem

#if TANDEM_HEADER_ONLY
#include "tandem/graph/plan-inl.hpp"
#endif
