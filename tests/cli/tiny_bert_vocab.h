// tests/model/tiny_bert.h's random bert, rewritten with a hand-made
// WordPiece vocabulary of its 50 tokens so that `ferrite embed` can
// tokenize text for it. Token ids of a text follow from the WordPiece
// definition and the table below (kClsId ... kSepId).
#pragma once

#include <string>
#include <vector>

#include "gguf/file.h"
#include "gguf/writer.h"
#include "model/tiny_bert.h"

namespace ferrite::test {

class TinyBertWithVocab {
 public:
  static constexpr int32_t kPadId = 0, kUnkId = 1, kClsId = 2, kSepId = 3, kMaskId = 4;
  // Word-initial pieces carry U+2581; "s" continues a word.
  static constexpr int32_t kThe = 5, kCat = 6, kSat = 7, kOn = 8, kMat = 9, kDog = 10, kRan = 11, kS = 12, kA = 13,
                           kDot = 14;

  explicit TinyBertWithVocab(uint32_t pooling_type) : bert_(pooling_type) {
    const gguf::File src = gguf::File::open(bert_.path().string());
    std::vector<std::string> pieces = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "\u2581the", "\u2581cat",
                                       "\u2581sat", "\u2581on", "\u2581mat", "\u2581dog", "\u2581ran", "s",
                                       "\u2581a", "\u2581."};
    while (static_cast<int64_t>(pieces.size()) < TinyBert::kVocab) {
      pieces.push_back("\u2581filler" + std::to_string(pieces.size()));
    }
    std::vector<gguf::Value> tokens, types;
    for (size_t i = 0; i < pieces.size(); ++i) {
      tokens.push_back(gguf::Value::string(pieces[i]));
      types.push_back(gguf::Value::i32(i <= static_cast<size_t>(kMaskId) ? kControlType : kNormalType));
    }
    gguf::Writer w;
    w.copy_metadata(src);
    w.set("tokenizer.ggml.model", gguf::Value::string("bert"));
    w.set("tokenizer.ggml.tokens", gguf::Value::array(gguf::ValueType::STRING, std::move(tokens)));
    w.set("tokenizer.ggml.token_type", gguf::Value::array(gguf::ValueType::INT32, std::move(types)));
    w.set("tokenizer.ggml.cls_token_id", gguf::Value::u32(kClsId));
    w.set("tokenizer.ggml.bos_token_id", gguf::Value::u32(kClsId));  // bert's BOS is its [CLS]
    w.set("tokenizer.ggml.seperator_token_id", gguf::Value::u32(kSepId));
    w.set("tokenizer.ggml.unknown_token_id", gguf::Value::u32(kUnkId));
    w.set("tokenizer.ggml.padding_token_id", gguf::Value::u32(kPadId));
    w.set("tokenizer.ggml.mask_token_id", gguf::Value::u32(kMaskId));
    for (const auto& t : src.tensors()) {
      w.add_tensor(t.name, t.type, std::vector<int64_t>(t.ne.begin(), t.ne.begin() + t.n_dims));
    }
    path_ = (bert_.path().parent_path() / "tiny-bert-vocab.gguf").string();
    w.open(path_);
    for (const auto& t : src.tensors()) w.write_tensor_data(t.data, t.n_bytes);
    w.close();
  }

  const std::string& path() const { return path_; }
  const TinyBert& bert() const { return bert_; }

 private:
  static constexpr int32_t kNormalType = 1, kControlType = 3;  // GGUF token types
  TinyBert bert_;  // owns the temporary folder
  std::string path_;
};

}  // namespace ferrite::test
