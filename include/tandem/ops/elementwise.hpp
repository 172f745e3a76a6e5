#pragma once
// Every elementwise op: arithmetic, unary math, activations, comparisons,
// logical ops, where and clamp.

#include "tandem/ops/elementwise/activation.hpp"
#include "tandem/ops/elementwise/arithmetic.hpp"
#include "tandem/ops/elementwise/compare.hpp"
#include "tandem/ops/elementwise/math.hpp"
