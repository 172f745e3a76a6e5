#pragma once
// Checkpoints: a module's parameters and buffers, and optionally an
// optimizer's state, in one versioned binary file (the format is in
// docs/checkpoints.md). Writing is atomic: a temporary file in the same
// folder, flushed, then renamed over the target, so a crash leaves the old
// checkpoint or the new one, never half of one. Reading checks everything
// (magic, version, a bounded header, names, types, shapes, offsets and a
// CRC-32 of the whole file) before it writes a single value, so a truncated,
// corrupted, oversized or mismatched file throws io_error (or shape_error /
// value_error for a mismatch) and leaves the model and optimizer untouched.

#include <filesystem>

#include "tandem/core/config.hpp"
#include "tandem/nn/module.hpp"
#include "tandem/nn/optimizer.hpp"

namespace tandem::nn {

// Writes `model`'s parameters and buffers (and `opt`'s state, if given).
void save(const std::filesystem::path& path, const module_base& model, const optimizer* opt = nullptr);

// Reads a checkpoint written by save() into `model` (and `opt`). Every name
// the model and optimizer have must be in the file with the same type and
// shape, and the file may hold nothing else; otherwise nothing is changed.
void load(const std::filesystem::path& path, module_base& model, optimizer* opt = nullptr);

}  // namespace tandem::nn

#if TANDEM_HEADER_ONLY
#include "tandem/nn/checkpoint-inl.hpp"
#endif
