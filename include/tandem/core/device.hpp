#pragma once
// Where a tensor's elements live: the host (`device::cpu`) or one GPU
// (`device::cuda(n)`). A device is a runtime property of a tensor's storage,
// never part of its type, so one program moves the same tensors, modules and
// static graphs between devices.

#include <cstdint>
#include <string>

namespace tandem {

enum class device_kind : std::uint8_t { cpu, cuda };

class device {
 public:
  static const device cpu;
  static constexpr device cuda(int index = 0) { return device(device_kind::cuda, index); }

  constexpr device_kind kind() const { return kind_; }
  // The GPU's ordinal (0 for the host).
  constexpr int index() const { return index_; }
  constexpr bool is_cpu() const { return kind_ == device_kind::cpu; }
  constexpr bool is_cuda() const { return kind_ == device_kind::cuda; }

  friend constexpr bool operator==(device, device) = default;

 private:
  constexpr device(device_kind kind, int index) : kind_(kind), index_(index) {}

  device_kind kind_;
  int index_;
};

inline constexpr device device::cpu{device_kind::cpu, 0};

// "cpu", "cuda:0": the names PyTorch prints.
inline std::string to_string(device d) { return d.is_cpu() ? "cpu" : "cuda:" + std::to_string(d.index()); }

}  // namespace tandem
