#pragma once
// Data-parallel training on the collectives: every rank holds the whole
// model and trains it on its own shard of each batch
// (data::distributed_batches); the ranks start from rank 0's parameters
// and average their gradients before each optimizer step, so that after
// every step each rank holds the same parameters, bit for bit: the model
// one process would train on the union of the ranks' batches.
//
//   dist::data_parallel ddp(model);   // broadcasts rank 0's parameters
//   nn::train_step step(loss_of, optimizer, ddp.gradient_hook());   // eager or graph mode
//   for (auto& batch : data::distributed_batches(n, 64, &gen, dist::rank(), dist::world_size()))
//     step(images_of(batch), labels_of(batch));
//
// or, in a loop of one's own: backward(), ddp.finish(), optimizer.step().
//
// data_parallel averages the gradients while the backward runs, as
// PyTorch's DDP does (dist/bucket_set.hpp): in buckets of about
// `bucket_bytes`, last parameters first, each bucket's all-reduce started
// as soon as the backward has finished its gradients. A static graph's
// backward (graph mode, jit(train_step)) calls no hook: there the buckets
// start in the step's hook, between the backward and the fused update.
//
// Without overlap, in one call after the backward: average_gradients(model)
// in a loop of one's own, gradient_averaging() as a step's hook.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <type_traits>
#include <variant>
#include <vector>

#include "tandem/autograd/grad_mode.hpp"
#include "tandem/autograd/gradient_ready.hpp"
#include "tandem/core/creation.hpp"
#include "tandem/core/tensor.hpp"
#include "tandem/dist/bucket_set.hpp"
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
// Buckets that overlap the backward: small enough that the last layers'
// gradients are in flight before the first layers' are done.
inline constexpr std::size_t overlap_bucket_bytes = std::size_t{256} << 10;

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

// A model trained data-parallel, its gradients averaged during the
// backward. It holds hooks on the model's parameters: it neither copies
// nor moves, and every backward is to be followed by finish() (or a
// training step's hook) before the next.
class data_parallel {
 public:
  explicit data_parallel(const nn::module_base& model, communicator comm = communicator::world(),
                         std::size_t bucket_bytes = overlap_bucket_bytes)
      : comm_(comm) {
    broadcast_parameters(model, 0, comm);
    std::vector<tensor<float>> floats;
    std::vector<tensor<double>> doubles;
    for (const auto& p : model.named_parameters())
      std::visit(
          [&](const auto& x) {
            if constexpr (std::is_same_v<typename std::decay_t<decltype(x)>::value_type, float>) floats.push_back(x);
            else doubles.push_back(x);
          },
          p.value);
    floats_.emplace(std::move(floats), bucket_bytes, comm);
    doubles_.emplace(std::move(doubles), bucket_bytes, comm);
    if (comm.size() > 1) {
      watch(*floats_);
      watch(*doubles_);
    }
  }
  data_parallel(const data_parallel&) = delete;
  data_parallel& operator=(const data_parallel&) = delete;

  // After backward(): every parameter's gradient (in .grad) is the mean
  // over the ranks; a parameter the backward did not reach gets one.
  void finish() {
    std::vector<tensor<float>> floats = gradients_in_leaves(*floats_);
    std::vector<tensor<double>> doubles = gradients_in_leaves(*doubles_);
    finish_all(floats, doubles);
  }

  // A training step's gradients averaged (the step's hook).
  void finish(nn::step_gradients& step) {
    std::vector<tensor<float>> floats = gradients_in_step(*floats_, step.floats, step.float_parameters);
    std::vector<tensor<double>> doubles = gradients_in_step(*doubles_, step.doubles, step.double_parameters);
    finish_all(floats, doubles);
  }

  // The hook of an nn::train_step that trains this model.
  nn::gradient_hook gradient_hook() {
    return [this](nn::step_gradients& step) { finish(step); };
  }

  // What the last finish() did.
  const data_parallel_statistics& statistics() const { return statistics_; }

 private:
  template <class T>
  void watch(detail::bucket_set<T>& set) {
    for (std::size_t k = 0; k < set.parameters().size(); ++k)
      hooks_.push_back(on_gradient_ready(set.parameters()[k], [&set, k](const tensor<T>& g) {
        no_grad plain;
        set.gradient_ready(k, g);
      }));
  }

  template <class T>
  static std::vector<tensor<T>> gradients_in_leaves(const detail::bucket_set<T>& set) {
    std::vector<tensor<T>> out;
    for (tensor<T> p : set.parameters()) {
      if (!p.has_grad()) p.autograd()->grad = zeros<T>(p.shape());
      out.push_back(p.grad());
    }
    return out;
  }

  // The step's gradients in the model's order of parameters; the step
  // must train this model's parameters, all of them.
  template <class T>
  static std::vector<tensor<T>> gradients_in_step(const detail::bucket_set<T>& set, std::vector<tensor<T>>& gradients,
                                                  const std::vector<tensor<T>>& parameters) {
    std::vector<tensor<T>> out;
    for (const tensor<T>& p : set.parameters()) {
      std::size_t j = 0;
      while (j < parameters.size() && parameters[j].data() != p.data()) ++j;
      if (j == parameters.size() || j >= gradients.size())
        throw error("tandem::dist::data_parallel: the training step's optimizer does not update a parameter of "
                    "shape " + to_string(p.shape()) + " of the model; give it model.named_parameters()");
      out.push_back(gradients[j]);
    }
    return out;
  }

  void finish_all(std::vector<tensor<float>>& floats, std::vector<tensor<double>>& doubles) {
    statistics_ = {};
    if (comm_.size() == 1) return;
    no_grad plain;
    floats_->finish(floats, statistics_);
    doubles_->finish(doubles, statistics_);
  }

  communicator comm_;
  std::optional<detail::bucket_set<float>> floats_;
  std::optional<detail::bucket_set<double>> doubles_;
  std::vector<hook_handle> hooks_;
  data_parallel_statistics statistics_;
};

}  // namespace tandem::dist
