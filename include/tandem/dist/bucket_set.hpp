#pragma once
// The gradients of one element type, averaged over the ranks in buckets
// while the backward runs, as PyTorch's DDP reducer does: each parameter's
// gradient is copied into its bucket as soon as the backward has finished
// it (on_gradient_ready); a bucket whose gradients are all in starts its
// all-reduce at once. Buckets start in their order on every rank, whatever
// order the gradients come in, so the ranks' collectives always pair up;
// each hook also lets MPI progress the buckets in flight, since Open MPI
// moves a non-blocking collective on only inside MPI calls.
//
// finish() then completes every bucket: a bucket the backward did not
// fill (a parameter it did not reach, or a static graph's backward, which
// calls no hook) starts there, from the gradients finish() is given; one
// whose copies are not of those gradients (a second backward before
// finish, or gradients combined after the backward) starts again.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tandem/core/error.hpp"
#include "tandem/core/tensor.hpp"
#include "tandem/dist/collectives.hpp"
#include "tandem/dist/communicator.hpp"
#include "tandem/dist/work.hpp"

namespace tandem::dist {

// What the last finish() of a data_parallel did.
struct data_parallel_statistics {
  std::int64_t buckets = 0;
  // Buckets whose all-reduce started during the backward, and those
  // started again in finish() because their copies were stale.
  std::int64_t started_in_backward = 0, restarted = 0;
};

namespace detail {

template <class T>
class bucket_set {
 public:
  // Buckets of about `bucket_bytes`, last parameters first (the order a
  // backward finishes them).
  bucket_set(std::vector<tensor<T>> parameters, std::size_t bucket_bytes, communicator comm)
      : parameters_(std::move(parameters)),
        bucket_of_(parameters_.size()),
        slot_of_(parameters_.size()),
        comm_(comm) {
    std::size_t bytes = 0;
    for (std::size_t k = parameters_.size(); k-- > 0;) {
      if (buckets_.empty() || bytes >= bucket_bytes) {
        buckets_.emplace_back();
        bytes = 0;
      }
      bucket& b = buckets_.back();
      bucket_of_[k] = buckets_.size() - 1;
      slot_of_[k] = b.members.size();
      b.members.push_back(k);
      b.offsets.push_back(b.length);
      b.length += parameters_[k].numel();
      bytes += static_cast<std::size_t>(parameters_[k].numel()) * sizeof(T);
    }
    for (bucket& b : buckets_) {
      b.flat = tensor<T>(shape{b.length});
      b.packed_from.assign(b.members.size(), nullptr);
    }
  }

  const std::vector<tensor<T>>& parameters() const { return parameters_; }

  // Parameter k's gradient is complete for this backward.
  void gradient_ready(std::size_t k, const tensor<T>& gradient) {
    bucket& b = buckets_[bucket_of_[k]];
    const std::size_t slot = slot_of_[k];
    if (b.in_flight) {
      b.stale = true;
    } else {
      if (!b.packed_from[slot]) ++b.ready;
      pack(b, slot, gradient);
      start_complete_buckets();
    }
    for (bucket& other : buckets_)
      if (other.in_flight) other.in_flight->ready();
  }

  // Every gradient (one per parameter, in order) replaced by its mean over
  // the ranks.
  void finish(std::vector<tensor<T>>& gradients, data_parallel_statistics& stats) {
    for (bucket& b : buckets_) {
      ++stats.buckets;
      bool fresh = b.in_flight && !b.stale;
      for (std::size_t s = 0; fresh && s < b.members.size(); ++s)
        fresh = b.packed_from[s] == gradients[b.members[s]].data();
      if (b.in_flight && !fresh) {
        b.in_flight->wait();
        b.in_flight.reset();
        ++stats.restarted;
      }
      if (b.in_flight) {
        ++stats.started_in_backward;
        continue;
      }
      for (std::size_t s = 0; s < b.members.size(); ++s) pack(b, s, gradients[b.members[s]]);
      start(b);
    }
    for (bucket& b : buckets_) {
      b.in_flight->wait();
      for (std::size_t s = 0; s < b.members.size(); ++s) {
        tensor<T>& g = gradients[b.members[s]];
        g.assign(b.flat.slice(0, b.offsets[s], b.offsets[s] + g.numel()).reshape(g.shape()));
      }
      b.in_flight.reset();
      b.stale = false;
      b.ready = 0;
      b.packed_from.assign(b.members.size(), nullptr);
    }
    next_to_start_ = 0;
  }

 private:
  struct bucket {
    std::vector<std::size_t> members;
    std::vector<std::int64_t> offsets;
    std::int64_t length = 0;
    tensor<T> flat;
    // The data each member's copy was made from, to tell a copy of the
    // gradient finish() gets from a stale one.
    std::vector<const T*> packed_from;
    std::size_t ready = 0;
    std::optional<work<T>> in_flight;
    bool stale = false;
  };

  void pack(bucket& b, std::size_t slot, const tensor<T>& gradient) {
    const tensor<T>& parameter = parameters_[b.members[slot]];
    if (gradient.shape() != parameter.shape())
      throw shape_error("tandem::dist::data_parallel: a gradient of shape " + to_string(gradient.shape()) +
                        " for a parameter of shape " + to_string(parameter.shape()));
    b.flat.slice(0, b.offsets[slot], b.offsets[slot] + gradient.numel()).reshape(gradient.shape()).assign(gradient);
    b.packed_from[slot] = gradient.data();
  }

  void start(bucket& b) { b.in_flight.emplace(all_reduce(b.flat, reduce_op::mean, comm_)); }

  void start_complete_buckets() {
    while (next_to_start_ < buckets_.size() && buckets_[next_to_start_].ready == buckets_[next_to_start_].members.size())
      start(buckets_[next_to_start_++]);
  }

  std::vector<tensor<T>> parameters_;
  std::vector<std::size_t> bucket_of_, slot_of_;
  std::vector<bucket> buckets_;
  std::size_t next_to_start_ = 0;
  communicator comm_;
};

}  // namespace detail
}  // namespace tandem::dist
