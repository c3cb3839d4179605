// T5's tokenizer.model -> tokenizer.ggml.* with model "t5" (llama.cpp's
// Unigram tokenizer), as llama.cpp's T5 converter writes it: the pieces,
// scores and types as vocab_sentencepiece lays them out, then the model name,
// the normalizer's add_dummy_prefix and remove_extra_whitespaces flags, its
// precompiled_charsmap (bytes, when the model has one), no BOS and an EOS
// after every text. A tokenizer.model of BPE type (Pile-T5) is converted as
// vocab_sentencepiece does (model "llama"), as llama.cpp does.
// Departure: vocab_sentencepiece also applies tokenizer_config.json's
// added_tokens_decoder (score -1000, CONTROL for special ones), which
// llama.cpp's T5 converter does not read; for T5 those are <pad>, </s>,
// <unk> and the <extra_id_N> sentinels, which the Unigram matcher does not
// produce from text either way.
#include "convert/spm_model.h"
#include "convert/vocab.h"
#include "core/error.h"

namespace ferrite::convert {

VocabKeys vocab_t5(const HfFiles& f, int64_t vocab_size, const VocabOptions& opt) {
  (void)opt;
  if (!f.has("tokenizer.model")) {
    throw IoError(f.path("tokenizer.model"), "missing: T5's tokenizer is a SentencePiece model (tokenizer.model)");
  }
  const SpmModel spm = SpmModel::read(f.path("tokenizer.model"));
  constexpr int32_t kUnigram = 1, kBpe = 2;
  if (spm.model_type == kBpe) return vocab_sentencepiece(f, vocab_size);
  if (spm.model_type != kUnigram) {
    throw ModelError(f.path("tokenizer.model") + ": SentencePiece model type " + std::to_string(spm.model_type) +
                     " (T5 converts Unigram (1) or BPE (2) models)");
  }
  VocabKeys out = vocab_sentencepiece(f, vocab_size);
  out.set("tokenizer.ggml.model", gguf::Value::string("t5"));
  out.set("tokenizer.ggml.add_space_prefix", gguf::Value::boolean(spm.add_dummy_prefix));
  out.set("tokenizer.ggml.remove_extra_whitespaces", gguf::Value::boolean(spm.remove_extra_whitespaces));
  if (!spm.precompiled_charsmap.empty()) {
    std::vector<gguf::Value> bytes;
    bytes.reserve(spm.precompiled_charsmap.size());
    for (char c : spm.precompiled_charsmap) bytes.push_back(gguf::Value::u8(static_cast<uint8_t>(c)));
    out.set("tokenizer.ggml.precompiled_charsmap", gguf::Value::array(gguf::ValueType::UINT8, std::move(bytes)));
  }
  out.set("tokenizer.ggml.add_bos_token", gguf::Value::boolean(false));
  out.set("tokenizer.ggml.add_eos_token", gguf::Value::boolean(true));
  out.summary = "SentencePiece Unigram (t5), " + std::to_string(out.n_tokens) + " tokens";
  return out;
}

}  // namespace ferrite::convert
