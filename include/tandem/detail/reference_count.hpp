#pragma once
// A plain int as a reference count, for the owners that count their own
// (a traced node's header, a chunk of the node arena): no locked
// instruction while the process has one thread.

#if defined(__GLIBCXX__)
#include <ext/atomicity.h>
#endif

namespace tandem::detail {

// Whether no second thread was ever started: then a count needs no locked
// instruction, as std::shared_ptr does with libstdc++. A small graph's call
// never starts the thread pool, and each locked update cost it about as
// much as the rest of the bookkeeping together.
inline bool process_single_threaded() {
#if defined(__GLIBCXX__)
  return __gnu_cxx::__is_single_threaded();
#else
  return false;
#endif
}

inline void count_up(int& references) {
  if (process_single_threaded()) ++references;
  else __atomic_fetch_add(&references, 1, __ATOMIC_RELAXED);
}

// Whether this was the last reference. The last owner sees a count of one
// and no other thread can raise it (a copy needs an owner), so it needs no
// locked instruction either: most counts drop from one.
inline bool count_down(int& references) {
  if (process_single_threaded()) return references-- == 1;
  return __atomic_load_n(&references, __ATOMIC_ACQUIRE) == 1 ||
         __atomic_fetch_sub(&references, 1, __ATOMIC_ACQ_REL) == 1;
}

// Adds `by` to the count and returns the sum.
inline int count_add(int& references, int by) {
  if (process_single_threaded()) return references += by;
  return __atomic_add_fetch(&references, by, __ATOMIC_ACQ_REL);
}

// The count as its owner reads it, after every other thread's last update.
inline int count_now(const int& references) {
  if (process_single_threaded()) return references;
  return __atomic_load_n(&references, __ATOMIC_ACQUIRE);
}

}  // namespace tandem::detail
