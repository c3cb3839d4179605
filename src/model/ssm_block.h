// What the state-space families (mamba2, granitehybrid) share: a Mamba-2
// mixer layer's tensors by llama.cpp's names and its operation's sizes
// (backend::SsmSpec, backend/ops.h).
#pragma once

#include <cstdint>

#include "backend/ops.h"
#include "model/hparams.h"
#include "model/weights.h"

namespace ferrite::model {

using backend::SsmSpec;
using backend::SsmWeights;

// blk.<il>.ssm_in, ssm_conv1d (weight, bias), ssm_dt.bias, ssm_a, ssm_d,
// ssm_norm, ssm_out with shapes from hp's ssm keys; ModelError otherwise.
SsmWeights bind_ssm(const WeightBinder& b, const HParams& hp, int64_t il);

// The operation's spec for layer il (w must outlive it).
SsmSpec ssm_spec(const HParams& hp, int64_t il, const SsmWeights& w);

}  // namespace ferrite::model
