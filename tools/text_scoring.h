// Helpers the text-scoring commands share (perplexity, imatrix, tokenize):
// reading a text file whole, and one position's negative log-likelihood.
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace ferrite::tools {

// The bytes of `path`; IoError when it cannot be read.
std::string read_text_file(const std::string& path);

// -log p(target) from one position's logits: f32 exp, f64 sum (as llama.cpp).
double negative_log_prob(std::span<const float> logits, int32_t target);

}  // namespace ferrite::tools
