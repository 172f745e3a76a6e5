// The demo's MLP training step (784-256-256-10, relu, cross-entropy, Adam)
// written by hand: the limit a framework's step is measured against. It
// calls tandem's GEMM kernel (the one tandem's ops run, so the comparison
// is of everything around the products), fuses each layer's bias and relu
// into one pass over its output, the softmax, loss and its gradient into
// one pass per row, each relu's backward into one pass, and Adam into one
// SIMD loop per parameter, subnormals flushed. It allocates nothing per step.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <vector>

#include <tandem/tandem.hpp>

namespace bench {

class mlp_hand {
 public:
  static constexpr std::int64_t batch = 128;

  // The same initial parameters as `model`'s (a fashion::mlp).
  template <class Model>
  explicit mlp_hand(const Model& model)
      : layers_{layer(model.hidden1), layer(model.hidden2), layer(model.out)},
        h1_(batch * 256), h2_(batch * 256), logits_(batch * 10), d_logits_(batch * 10), d_h2_(batch * 256),
        d_h1_(batch * 256) {}

  // One step on images [batch, 784] and labels [batch]; returns the loss.
  float step(const float* images, const std::int64_t* labels) {
    forward(layers_[0], images, h1_.data(), true);
    forward(layers_[1], h1_.data(), h2_.data(), true);
    forward(layers_[2], h2_.data(), logits_.data(), false);
    float loss = softmax_cross_entropy(labels);

    backward(layers_[2], h2_.data(), d_logits_.data(), d_h2_.data());
    relu_backward(d_h2_.data(), h2_.data());
    backward(layers_[1], h1_.data(), d_h2_.data(), d_h1_.data());
    relu_backward(d_h1_.data(), h1_.data());
    backward(layers_[0], images, d_h1_.data(), nullptr);

    ++steps_;
    for (auto& l : layers_) {
      adam(l.weight, l.d_weight, l.m_weight, l.v_weight);
      adam(l.bias, l.d_bias, l.m_bias, l.v_bias);
    }
    return loss;
  }

 private:
  struct dense {
    std::int64_t in, out;
    std::vector<float> weight, bias, d_weight, d_bias, m_weight, v_weight, m_bias, v_bias;
  };

  template <class Linear>
  static dense layer(const Linear& linear) {
    std::int64_t in = linear.in_features(), out = linear.out_features();
    dense d{in, out, {}, {}, {}, {}, {}, {}, {}, {}};
    d.weight.assign(linear.weight.data(), linear.weight.data() + in * out);
    d.bias.assign(linear.bias.data(), linear.bias.data() + out);
    d.d_weight.resize(in * out), d.m_weight.resize(in * out), d.v_weight.resize(in * out);
    d.d_bias.resize(out), d.m_bias.resize(out), d.v_bias.resize(out);
    return d;
  }

  using matrix = tandem::detail::strided_matrix<float>;

  // y = x W + b, then relu if asked, in the pass that adds the bias.
  static void forward(const dense& l, const float* x, float* y, bool relu) {
    tandem::detail::gemm<float>(batch, l.out, l.in, matrix{x, l.in, 1}, matrix{l.weight.data(), l.out, 1}, y, l.out);
    for (std::int64_t i = 0; i < batch; ++i) {
      float* row = y + i * l.out;
      for (std::int64_t j = 0; j < l.out; ++j) {
        float v = row[j] + l.bias[j];
        row[j] = relu ? std::max(v, 0.0f) : v;
      }
    }
  }

  // Mean cross-entropy of the logits; its gradient into d_logits_.
  float softmax_cross_entropy(const std::int64_t* labels) {
    double total = 0;
    for (std::int64_t i = 0; i < batch; ++i) {
      const float* z = logits_.data() + i * 10;
      float* dz = d_logits_.data() + i * 10;
      float top = *std::max_element(z, z + 10);
      float sum = 0;
      for (int j = 0; j < 10; ++j) sum += dz[j] = std::exp(z[j] - top);
      float log_sum = std::log(sum);
      total += log_sum - (z[labels[i]] - top);
      for (int j = 0; j < 10; ++j) dz[j] = dz[j] / sum / batch;
      dz[labels[i]] -= 1.0f / batch;
    }
    return static_cast<float>(total / batch);
  }

  // dW = x^T dy, db = column sums of dy, dx = dy W^T (when asked).
  static void backward(dense& l, const float* x, const float* dy, float* dx) {
    tandem::detail::gemm<float>(l.in, l.out, batch, matrix{x, 1, l.in}, matrix{dy, l.out, 1}, l.d_weight.data(),
                                l.out);
    std::fill(l.d_bias.begin(), l.d_bias.end(), 0.0f);
    for (std::int64_t i = 0; i < batch; ++i)
      for (std::int64_t j = 0; j < l.out; ++j) l.d_bias[j] += dy[i * l.out + j];
    if (dx)
      tandem::detail::gemm<float>(batch, l.in, l.out, matrix{dy, l.out, 1}, matrix{l.weight.data(), 1, l.out}, dx,
                                  l.in);
  }

  static void relu_backward(float* d, const float* y) {
    for (std::int64_t i = 0; i < batch * 256; ++i) d[i] = y[i] > 0 ? d[i] : 0.0f;
  }

  // Adam (lr 1e-3, betas 0.9 and 0.999, eps 1e-8, bias-corrected), as
  // nn::adam computes it, in xsimd batches, with subnormals flushed to zero
  // as nn::adam flushes them (a step on one fixed batch drives gradients
  // and moments into that range, where the update ran 14x slower).
  void adam(std::vector<float>& p, const std::vector<float>& g, std::vector<float>& m, std::vector<float>& v) const {
    const tandem::detail::subnormals_flushed flushed;
    using batch_type = xsimd::batch<float>;
    constexpr float lr = 1e-3f, beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f;
    double t = static_cast<double>(steps_);
    float step_size = static_cast<float>(lr / (1 - std::pow(beta1, t)));
    float root_correction = static_cast<float>(1 / std::sqrt(1 - std::pow(static_cast<double>(beta2), t)));
    auto update = [&](auto p_, auto g_, auto m_, auto v_) {
      using V = decltype(p_);
      using std::sqrt;
      V m1 = V(beta1) * m_ + V(1 - beta1) * g_;
      V v1 = V(beta2) * v_ + V(1 - beta2) * g_ * g_;
      V denominator = sqrt(v1) * V(root_correction) + V(eps);
      return std::array<V, 3>{p_ - V(step_size) * m1 / denominator, m1, v1};
    };
    std::size_t n = p.size(), i = 0;
    for (; i + batch_type::size <= n; i += batch_type::size) {
      auto r = update(batch_type::load_unaligned(&p[i]), batch_type::load_unaligned(&g[i]),
                      batch_type::load_unaligned(&m[i]), batch_type::load_unaligned(&v[i]));
      r[0].store_unaligned(&p[i]), r[1].store_unaligned(&m[i]), r[2].store_unaligned(&v[i]);
    }
    for (; i < n; ++i) {
      auto r = update(p[i], g[i], m[i], v[i]);
      p[i] = r[0], m[i] = r[1], v[i] = r[2];
    }
  }

  std::array<dense, 3> layers_;
  std::vector<float> h1_, h2_, logits_, d_logits_, d_h2_, d_h1_;
  std::int64_t steps_ = 0;
};

}  // namespace bench
