#pragma once
// What a call keeps by value key while it runs: its memo, the gradients
// reaching each value, the captured tensors it read, which values need a
// gradient. Keys are addresses (graph/run.hpp, key_of), never null, and a
// call has few of them, so this is an open-addressing table with linear
// probing: a lookup is a multiply and a compare or two. std::unordered_map
// computed a prime bucket count at each map's first insert and allocated a
// node per entry, about a tenth of a cached call of one op. Slots come from
// the caching allocator's per-thread bins, uncounted (core/allocator.hpp),
// so memory_stats() counts what a call leaves behind, its outputs. A map
// that nearly every call fills (an executor's memo) keeps its first
// `Inline` slots in the object: a small call allocates no table at all.

#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <utility>

#include "tandem/core/allocator.hpp"

namespace tandem::detail {

template <class V, std::size_t Inline = 0>
class key_map {
  static_assert(Inline == 0 || std::has_single_bit(Inline), "tandem internal: a key_map's capacity is a power of two");

 public:
  key_map() = default;
  key_map(const key_map&) = delete;
  key_map& operator=(const key_map&) = delete;
  key_map(key_map&& other) noexcept : capacity_(other.capacity_), size_(other.size_) {
    if (other.slots_ != other.inline_slots()) {
      slots_ = std::exchange(other.slots_, nullptr);
    } else {
      // Same capacity, so every entry keeps its position.
      slots_ = inline_slots();
      for (std::size_t i = 0; i < capacity_; ++i) {
        slots_[i].key = other.slots_[i].key;
        if (!slots_[i].key) continue;
        ::new (static_cast<void*>(slots_[i].storage)) V(std::move(*other.slots_[i].value()));
        other.slots_[i].value()->~V();
      }
      other.slots_ = nullptr;
    }
    other.capacity_ = 0;
    other.size_ = 0;
  }
  key_map& operator=(key_map&&) = delete;
  ~key_map() { release(); }

  std::size_t size() const { return size_; }

  V* find(const void* key) {
    if (size_ == 0) return nullptr;
    for (std::size_t i = home(key);; i = next(i)) {
      if (slots_[i].key == key) return slots_[i].value();
      if (!slots_[i].key) return nullptr;
    }
  }
  const V* find(const void* key) const { return const_cast<key_map*>(this)->find(key); }

  // The value of `key`, constructed from args if the key is new; and
  // whether it was.
  template <class... Args>
  std::pair<V*, bool> try_emplace(const void* key, Args&&... args) {
    if (V* found = find(key)) return {found, false};
    if ((size_ + 1) * 4 > capacity_ * 3) grow();
    std::size_t i = home(key);
    while (slots_[i].key) i = next(i);
    ::new (static_cast<void*>(slots_[i].storage)) V(std::forward<Args>(args)...);
    slots_[i].key = key;
    ++size_;
    return {slots_[i].value(), true};
  }
  // As std::unordered_map::emplace: a key already present keeps its value.
  template <class... Args>
  void emplace(const void* key, Args&&... args) {
    try_emplace(key, std::forward<Args>(args)...);
  }

  void erase(const void* key) {
    if (size_ == 0) return;
    std::size_t hole = home(key);
    while (slots_[hole].key != key) {
      if (!slots_[hole].key) return;
      hole = next(hole);
    }
    slots_[hole].value()->~V();
    slots_[hole].key = nullptr;
    --size_;
    // Backward shift: an entry after the hole moves into it unless its home
    // lies cyclically in (hole, entry], so that no probe stops early.
    for (std::size_t i = next(hole); slots_[i].key; i = next(i)) {
      std::size_t wanted = home(slots_[i].key);
      bool stays = hole < i ? (hole < wanted && wanted <= i) : (hole < wanted || wanted <= i);
      if (stays) continue;
      ::new (static_cast<void*>(slots_[hole].storage)) V(std::move(*slots_[i].value()));
      slots_[hole].key = slots_[i].key;
      slots_[i].value()->~V();
      slots_[i].key = nullptr;
      hole = i;
    }
  }

  // Drops every entry, and the table unless it is the inline one.
  void clear() noexcept {
    release();
    capacity_ = 0;
    size_ = 0;
  }

  // f(key, value) for every entry, in no particular order.
  template <class F>
  void for_each(F&& f) const {
    for (std::size_t i = 0; i < capacity_; ++i)
      if (slots_[i].key) f(slots_[i].key, *slots_[i].value());
  }

 private:
  struct slot {
    const void* key;
    alignas(V) unsigned char storage[sizeof(V)];
    V* value() { return std::launder(reinterpret_cast<V*>(storage)); }
  };

  static constexpr std::size_t first_capacity = 16;

  // Where the first Inline slots live (null without them).
  slot* inline_slots() noexcept {
    if constexpr (Inline == 0) return nullptr;
    else return reinterpret_cast<slot*>(inline_storage_);
  }

  std::size_t home(const void* key) const {
    auto bits = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(key));
    return static_cast<std::size_t>((bits * 0x9E3779B97F4A7C15ull) >> (64 - std::countr_zero(capacity_)));
  }
  std::size_t next(std::size_t i) const { return (i + 1) & (capacity_ - 1); }

  void grow() {
    slot* old = slots_;
    std::size_t old_capacity = capacity_;
    if (old_capacity == 0 && Inline) {
      slots_ = inline_slots();
      capacity_ = Inline;
      for (std::size_t i = 0; i < capacity_; ++i) slots_[i].key = nullptr;
      return;
    }
    capacity_ = old_capacity ? old_capacity * 2 : first_capacity;
    slots_ = static_cast<slot*>(caching_allocator::allocate_uncounted(capacity_ * sizeof(slot)));
    for (std::size_t i = 0; i < capacity_; ++i) slots_[i].key = nullptr;
    for (std::size_t i = 0; i < old_capacity; ++i) {
      if (!old[i].key) continue;
      std::size_t j = home(old[i].key);
      while (slots_[j].key) j = next(j);
      ::new (static_cast<void*>(slots_[j].storage)) V(std::move(*old[i].value()));
      slots_[j].key = old[i].key;
      old[i].value()->~V();
    }
    if (old && old != inline_slots()) caching_allocator::deallocate_uncounted(old, old_capacity * sizeof(slot));
  }

  void release() noexcept {
    if (!slots_) return;
    for (std::size_t i = 0; i < capacity_; ++i)
      if (slots_[i].key) slots_[i].value()->~V();
    if (slots_ != inline_slots()) caching_allocator::deallocate_uncounted(slots_, capacity_ * sizeof(slot));
    slots_ = nullptr;
  }

  slot* slots_ = nullptr;
  std::size_t capacity_ = 0;
  std::size_t size_ = 0;
  alignas(slot) unsigned char inline_storage_[Inline ? Inline * sizeof(slot) : 1];
};

}  // namespace tandem::detail
