#pragma once
// Data-parallel training on the collectives: every rank holds the whole
// model and trains it on its own shard of each batch
// (data::distributed_batches); the ranks start from rank 0's parameters
// (broadcast_parameters) and average their gradients before each optimizer
// step (average_gradients), so that after every step each rank holds the
// same parameters, bit for bit: the model one process would train on the
// union of the ranks' batches.
//
//   dist::broadcast_parameters(model);
//   nn::train_step step(loss_of, optimizer, dist::gradient_averaging());   // eager or graph mode
//   for (auto& batch : data::distributed_batches(n, 64, &gen, dist::rank(), dist::world_size()))
//     step(images_of(batch), labels_of(batch));
//
// or, in a loop of one's own: backward(), dist::average_gradients(model),
// optimizer.step().
//
// The gradients travel in buckets of about `bucket_bytes`, last parameters
// first (the order a backward finishes them, as PyTorch's DDP): one
// collective per bucket instead of one per parameter, each bucket in flight
// while the next is packed. Overlapping the buckets with the backward
// itself is not built yet; in a static-graph training step the averaging
// runs between the graph's backward and the fused update.

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <variant>
#include <vector>

#include "tandem/autograd/grad_mode.hpp"
#include "tandem/core/creation.hpp"
#include "tandem/core/tensor.hpp"
#include "tandem/dist/collectives.hpp"
#include "tandem/dist/communicator.hpp"
#include "tandem/nn/module.hpp"
#include "tandem/nn/optimizer.hpp"
#include "tandem/nn/train_step.hpp"
// Buckets are filled through slices, whose recorded derivatives name ops
// of these headers.
#include "tandem/ops/reduce.hpp"
#include "tandem/ops/shape.hpp"

namespace tandem::dist {

inline constexpr std::size_t default_bucket_bytes = std::size_t{25} << 20;

// Every parameter and buffer (batch norm's running statistics) of `model`
// overwritten by the root's.
inline void broadcast_parameters(const nn::module_base& model, int root = 0,
                                 const communicator& comm = communicator::world()) {
  no_grad plain;
  std::vector<nn::named_tensor> tensors = model.named_parameters();
  for (auto& buffer : model.named_buffers()) tensors.push_back(buffer);
  std::vector<work<float>> floats;
  std::vector<work<double>> doubles;
  for (const auto& t : tensors)
    std::visit(
        [&](const auto& x) {
          using T = typename std::decay_t<decltype(x)>::value_type;
          if constexpr (std::is_same_v<T, float>) floats.push_back(broadcast(x, root, comm));
          else doubles.push_back(broadcast(x, root, comm));
        },
        t.value);
  for (auto& w : floats) w.wait();
  for (auto& w : doubles) w.wait();
}

namespace detail {

// The gradients of one element type, packed into flat buckets, averaged,
// and unpacked into the parameters' gradients.
template <class T>
void average_bucketed(std::vector<tensor<T>>& gradients, std::size_t bucket_bytes, const communicator& comm) {
  struct bucket {
    tensor<T> flat;
    std::vector<tensor<T>> members;
  };
  std::vector<bucket> buckets;
  std::vector<work<T>> in_flight;
  auto send = [&](std::vector<tensor<T>>& members) {
    std::int64_t total = 0;
    for (const auto& g : members) total += g.numel();
    tensor<T> flat(shape{total});
    std::int64_t at = 0;
    for (const auto& g : members) {
      flat.slice(0, at, at + g.numel()).reshape(g.shape()).assign(g);
      at += g.numel();
    }
    in_flight.push_back(all_reduce(flat, reduce_op::mean, comm));
    buckets.push_back({flat, std::move(members)});
    members.clear();
  };
  std::vector<tensor<T>> pending;
  std::size_t pending_bytes = 0;
  // Last parameters first: the order a backward finishes their gradients.
  for (auto g = gradients.rbegin(); g != gradients.rend(); ++g) {
    pending.push_back(*g);
    pending_bytes += static_cast<std::size_t>(g->numel()) * sizeof(T);
    if (pending_bytes >= bucket_bytes) {
      send(pending);
      pending_bytes = 0;
    }
  }
  if (!pending.empty()) send(pending);
  for (std::size_t b = 0; b < buckets.size(); ++b) {
    in_flight[b].wait();
    std::int64_t at = 0;
    for (auto& g : buckets[b].members) {
      g.assign(buckets[b].flat.slice(0, at, at + g.numel()).reshape(g.shape()));
      at += g.numel();
    }
  }
}

}  // namespace detail

// A training step's gradient hook (nn::train_step) that averages the
// step's gradients over the ranks, in buckets, before the update.
inline nn::gradient_hook gradient_averaging(communicator comm = communicator::world(),
                                            std::size_t bucket_bytes = default_bucket_bytes) {
  return [comm, bucket_bytes](nn::step_gradients& gradients) {
    if (comm.size() == 1) return;
    no_grad plain;
    detail::average_bucketed(gradients.floats, bucket_bytes, comm);
    detail::average_bucketed(gradients.doubles, bucket_bytes, comm);
  };
}

// Each parameter's gradient replaced by its mean over the ranks. A
// parameter that has no gradient on this rank (the backward did not reach
// it) takes part as zeros, as with DDP, and gets the mean as its gradient.
inline void average_gradients(const nn::module_base& model, const communicator& comm = communicator::world(),
                              std::size_t bucket_bytes = default_bucket_bytes) {
  nn::step_gradients all;
  for (const auto& p : model.named_parameters())
    std::visit(
        [&](auto x) {
          using T = typename decltype(x)::value_type;
          if (!x.has_grad()) x.autograd()->grad = zeros<T>(x.shape());
          if constexpr (std::is_same_v<T, float>) all.floats.push_back(x.grad());
          else all.doubles.push_back(x.grad());
        },
        p.value);
  gradient_averaging(comm, bucket_bytes)(all);
}

}  // namespace tandem::dist
