// AVX-512 attention: the same bits as attention_generic() (see attention.h),
// computed per block of queries (the heads of one GQA group for several
// tokens that read the same cells) with the cells of a 16-cell tile in the
// 16 lanes, so each K tile is converted once for the whole block.
#pragma once

#include "cpu/attention/attention.h"

namespace ferrite::cpu {

// Whether the kernel takes these arguments (head_dim a multiple of 16).
bool attention_avx512_applies(const AttentionArgs& a);

// Requires AVX-512 (Isa::Avx512 active) and attention_avx512_applies(a).
void attention_avx512(const AttentionArgs& a, ThreadPool& pool, AttentionScratch& scratch);

}  // namespace ferrite::cpu
