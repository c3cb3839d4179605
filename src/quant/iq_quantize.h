// The search shared by the IQ lattice quantizers (IQ3_XXS, IQ3_S, IQ2_XXS,
// IQ2_XS, IQ2_S, IQ1_S, IQ1_M) for one super-block of 256 values:
//  1. signs: magnitudes |x| go to the grid and the signs are stored apart
//     (freely, or with an even count of negatives per 8 where the element
//     costing least, w x^2, takes the wrong sign); IQ1 grids hold signs.
//  2. each sub-block gets the scale (of many candidates, refined by least
//     squares) whose grid projection has the least weighted error;
//  3. the sub-block scales become codes c of one f16 super-scale d,
//     scale = d * alpha * (c + beta), d chosen among candidates;
//  4. each code is tried ±1 with the groups re-projected at the exact stored
//     scale, and d is refitted once by least squares;
//  5. d is raised to undo part of the least-squares fit's shrinkage (the
//     dequantized block's correlation gain below 1), which costs some RMSE
//     and lowers the model's KL divergence (bench/QUALITY.md).
#pragma once

#include <cstdint>

#include "quant/blocks.h"
#include "quant/iq_grid_search.h"

namespace ferrite::quant {

enum class IqSigns { kFree, kEvenParity, kInGrid };

// The shrinkage correction's power (step 5) for the types without their own.
constexpr double kIqGainPower = 0.6;
// IQ1 values are (grid + delta) with delta = ±delta_size per sub-block or
// per group of 8.
enum class IqDelta { kNone, kPerSubBlock, kPerGroup };

struct IqLayout {
  const IqGrid* grid;
  int sub_len;        // elements sharing one scale code
  float alpha, beta;  // sub-block scale = d * alpha * (code + beta)
  int code_max;       // codes 0..code_max
  IqSigns signs;
  IqDelta delta = IqDelta::kNone;
  float delta_size = 0.0f;
  // Step 5: d is multiplied by g^-gain_power. Per type, each the largest of
  // those tried that keeps the plain RMSE on the synth model at or below
  // llama.cpp's (QuantizeRmseSlow) where KLD still fell: bench/QUALITY.md.
  double gain_power = kIqGainPower;
};

constexpr int kIqMaxGroups = kQKK / 4;

struct IqSuperBlock {
  uint16_t d = 0;                     // f16 super-scale
  int code[kQKK / 16] = {};           // per sub-block
  int entry[kIqMaxGroups] = {};       // grid entry per group
  bool neg_delta[kIqMaxGroups] = {};  // IQ1: delta of the group is negative
  uint8_t sign[kQKK / 8] = {};        // per 8 elements: bit j set = element j negative
};

// Quantizes x[256] with weights w[256] (see make_weights) into `out`.
void iq_quantize_super(const float* x, const float* w, const IqLayout& lay, IqSuperBlock& out);

}  // namespace ferrite::quant
