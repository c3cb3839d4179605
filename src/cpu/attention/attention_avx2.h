// AVX2 attention: the same bits as attention_generic() at the AVX2 level
// (see attention.h), computed per block of queries (the heads of one GQA
// group for several tokens that read the same cells) with the cells of an
// 8-cell tile in the 8 lanes, so each K tile is converted once for the block.
#pragma once

#include "cpu/attention/attention.h"

namespace ferrite::cpu {

// Whether the kernel takes these arguments (head_dim a multiple of 16).
bool attention_avx2_applies(const AttentionArgs& a);

// Requires AVX2 (Isa::Avx2 or above on this CPU) and attention_avx2_applies(a).
void attention_avx2(const AttentionArgs& a, ThreadPool& pool, AttentionScratch& scratch);

}  // namespace ferrite::cpu
