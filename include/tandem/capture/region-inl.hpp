#pragma once
// A captured region's plan and descriptions (declared in
// capture/region.hpp): inline in header-only builds, compiled once into
// tandem::compiled.

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "tandem/capture/region.hpp"

namespace tandem::detail {

TANDEM_LIBRARY_FUNCTION std::size_t hash_of(const region_key& key) {
  std::size_t h = std::hash<std::int64_t>{}(key.numel);
  auto mix = [&](std::size_t v) { h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2); };
  for (const op_signature& op : key.ops) {
    mix(reinterpret_cast<std::size_t>(op.row));
    for (std::size_t k = 0; k < op.operand_count; ++k)
      mix(static_cast<std::size_t>(op.operands[k].kind) << 32 | op.operands[k].index);
  }
  for (const external_signature& e : key.externals) {
    mix(e.element_size | std::size_t{e.gathered} << 8);
    for (std::int64_t s : e.sizes) mix(static_cast<std::size_t>(s));
    for (std::int64_t s : e.in_strides) mix(static_cast<std::size_t>(s));
  }
  for (std::size_t i = 0; i < key.kept.size(); ++i)
    if (key.kept[i]) mix(i);
  if (key.reduction.run) {
    mix(reinterpret_cast<std::size_t>(key.reduction.run));
    mix(static_cast<std::size_t>(key.reduction.rows) ^ static_cast<std::size_t>(key.reduction.length) << 20);
    mix(key.reduction.value);
  }
  return h;
}

namespace capture_detail {
// Cuts the running ops into register chains (runs of ops a chain can take,
// over one element type) and single ops, and marks in each chain which
// operands are the previous op's result and which results must be stored.
inline void plan_chains(const region_key& key, region_plan& plan) {
  const std::size_t count = key.ops.size();
  auto reduced = [&](std::size_t value) { return key.reduction.run && key.reduction.value == value; };
  std::vector<std::uint32_t> running;
  std::vector<std::int32_t> readers(count, 0);
  for (std::size_t i = 0; i < count; ++i) {
    if (!plan.runs[i]) continue;
    running.push_back(static_cast<std::uint32_t>(i));
    const op_signature& op = key.ops[i];
    for (std::size_t k = 0; k < op.operand_count; ++k)
      if (op.operands[k].kind == operand_kind::value) ++readers[op.operands[k].index];
  }
  auto reads = [&](std::uint32_t reader, std::uint32_t value) {
    const op_signature& op = key.ops[reader];
    std::int32_t n = 0;
    for (std::size_t k = 0; k < op.operand_count; ++k)
      n += op.operands[k].kind == operand_kind::value && op.operands[k].index == value;
    return n;
  };
  plan.from_previous.assign(count, 0);
  plan.stored.assign(count, true);
  for (std::size_t first = 0; first < running.size();) {
    const register_code code = plan.chain_code[running[first]];
    const std::uint8_t size = code.op ? code.element_size : 0;
    std::size_t last = first + 1;
    while (size && last < running.size() && plan.chain_code[running[last]].op &&
           plan.chain_code[running[last]].element_size == size)
      ++last;
    for (std::size_t j = first; j < last && size; ++j) {
      const std::uint32_t i = running[j];
      const op_signature& op = key.ops[i];
      for (std::size_t k = 0; k < op.operand_count && j > first; ++k)
        if (op.operands[k].kind == operand_kind::value && op.operands[k].index == running[j - 1])
          plan.from_previous[i] |= static_cast<std::uint8_t>(1u << k);
      const std::int32_t read_next = j + 1 < last ? reads(running[j + 1], i) : 0;
      plan.stored[i] = key.kept[i] || reduced(i) || readers[i] != read_next;
    }
    plan.segments.push_back({static_cast<std::uint32_t>(first), static_cast<std::uint32_t>(last), size});
    first = last;
  }
}
}  // namespace capture_detail

TANDEM_LIBRARY_FUNCTION region_plan plan_region(const region_key& key) {
  const std::size_t count = key.ops.size();
  region_plan plan;
  plan.value_slot.assign(count, region_plan::in_memory);
  plan.external_slot.assign(key.externals.size(), region_plan::in_memory);
  plan.runs.assign(count, false);
  plan.chain_code.resize(count);
  if (const chain_kernels* chains = chain_kernels_in_use())
    for (std::size_t i = 0; i < count; ++i) plan.chain_code[i] = chains->code_of(key.ops[i].row);

  // Which ops run, from the last: a kept result, or one an op that runs reads.
  std::vector<std::size_t> last_read(count, 0);
  auto reduced = [&](std::size_t i) { return key.reduction.run && key.reduction.value == i; };
  for (std::size_t i = count; i-- > 0;) {
    if (key.kept[i] || reduced(i)) plan.runs[i] = true;
    if (!plan.runs[i]) continue;
    const op_signature& op = key.ops[i];
    for (std::size_t k = 0; k < op.operand_count; ++k)
      if (op.operands[k].kind == operand_kind::value) {
        std::uint32_t v = op.operands[k].index;
        plan.runs[v] = true;
        last_read[v] = std::max(last_read[v], i);
      }
  }

  // Gathered tensors hold their buffer for the whole tile; values from the
  // op that makes them to the last op that reads them.
  std::vector<std::int32_t> free_slots;
  std::int32_t next = 0;
  auto take = [&] {
    if (free_slots.empty()) return next++;
    std::int32_t slot = free_slots.back();
    free_slots.pop_back();
    return slot;
  };
  std::size_t widest = 1;
  for (std::size_t e = 0; e < key.externals.size(); ++e)
    if (key.externals[e].gathered) {
      plan.external_slot[e] = take();
      widest = std::max<std::size_t>(widest, key.externals[e].element_size);
    }
  std::vector<std::vector<std::int32_t>> released_after(count);
  for (std::size_t i = 0; i < count; ++i) {
    if (!plan.runs[i]) continue;
    if (!key.kept[i] && !reduced(i)) {
      plan.value_slot[i] = take();
      widest = std::max<std::size_t>(widest, key.ops[i].result_size);
      released_after[last_read[i]].push_back(plan.value_slot[i]);
    }
    // A buffer is free again once the op that last reads it has run, not
    // while it runs: an op never writes a buffer it reads.
    for (std::int32_t slot : released_after[i]) free_slots.push_back(slot);
  }
  plan.slots = static_cast<std::size_t>(next);
  plan.widest = widest;
  capture_detail::plan_chains(key, plan);
  return plan;
}

TANDEM_LIBRARY_FUNCTION std::string describe(const region_key& key) {
  std::string text = std::to_string(key.numel) + " elements:";
  std::size_t kept = 0;
  for (std::size_t i = 0; i < key.ops.size(); ++i) {
    text += (i ? ", " : " ") + std::string(key.ops[i].name);
    kept += key.kept[i] ? 1 : 0;
  }
  text += "; keeps " + std::to_string(kept) + " of " + std::to_string(key.ops.size()) + " results";
  if (key.reduction.run)
    text += "; then " + std::string(key.reduction.name) + " of op " + std::to_string(key.reduction.value) + " over " +
            std::to_string(key.reduction.rows) + " x " + std::to_string(key.reduction.length) + ", reduced as computed";
  return text;
}

namespace capture_text {
inline std::string operand(const region_operand& o, const region_key& key) {
  switch (o.kind) {
    case operand_kind::value:
      return "the result of op " + std::to_string(o.index) + " (" + key.ops[o.index].name + ")";
    case operand_kind::flat:
      return key.externals[o.index].flat_stride == 0 ? "a one-element tensor" : "a contiguous tensor";
    case operand_kind::gathered:
      return "a broadcast or strided tensor";
    case operand_kind::scalar:
      return "a scalar";
  }
  return "";
}
}  // namespace capture_text

TANDEM_LIBRARY_FUNCTION std::string difference(const region_key& now, const region_key& before) {
  if (now.numel != before.numel)
    return "the region runs over " + std::to_string(now.numel) + " elements, not " + std::to_string(before.numel);
  for (std::size_t i = 0; i < std::min(now.ops.size(), before.ops.size()); ++i) {
    const op_signature& a = now.ops[i];
    const op_signature& b = before.ops[i];
    if (a.row != b.row) {
      if (std::string(a.name) != b.name)
        return "op " + std::to_string(i) + " is " + a.name + ", not " + b.name;
      return "op " + std::to_string(i) + " (" + a.name + ") takes other element types";
    }
    for (std::size_t k = 0; k < a.operand_count; ++k) {
      const region_operand& x = a.operands[k];
      const region_operand& y = b.operands[k];
      bool same = x.kind == y.kind && (x.kind == operand_kind::value ? x.index == y.index
                                       : x.kind == operand_kind::scalar
                                           ? true
                                           : now.externals[x.index] == before.externals[y.index]);
      if (same) continue;
      std::string where = "operand " + std::to_string(k) + " of op " + std::to_string(i) + " (" + a.name + ")";
      if (x.kind == y.kind && x.kind != operand_kind::value)
        return where + " is a tensor of another layout or element size";
      return where + " is " + capture_text::operand(x, now) + ", not " + capture_text::operand(y, before);
    }
    if (now.kept[i] != before.kept[i])
      return "the result of op " + std::to_string(i) + " (" + a.name + ") is " +
             (now.kept[i] ? "kept, not only read inside the region" : "only read inside the region, not kept");
  }
  if (now.ops.size() != before.ops.size())
    return "the region has " + std::to_string(now.ops.size()) + " ops, not " + std::to_string(before.ops.size());
  if (now.reduction != before.reduction) {
    if (!now.reduction.run) return "the region ends without the reduction it ended with";
    if (!before.reduction.run) return std::string("the region ends with a reduction (") + now.reduction.name + ")";
    return std::string("the region's reduction (") + now.reduction.name + ") differs in its op, element type or rows";
  }
  return "the tensors read are laid out differently";
}

}  // namespace tandem::detail
