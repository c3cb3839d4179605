// bert (encoders for embeddings): absolute positions, token types, post-norm
// layers. The "bert." prefix and old gamma/beta names are normalised; the
// pooler and the masked-LM head are dropped. A sentence-transformers folder's
// pooling (modules.json) becomes bert.pooling_type.
// BertForSequenceClassification with one label (cross-encoder rerankers,
// ms-marco-MiniLM): pooling_type 4 (rank) and the head as llama.cpp names it,
// the pooler's dense layer -> cls (tanh follows it) and the classifier ->
// cls.output, whose single output is the score. A cross-encoder trained with
// segment ids (type_vocab_size 2) reads the document as type 1: the engine's
// pair for a WordPiece vocabulary gives those (tokenizer/rank_pair.h; llama.cpp
// feeds type 0 throughout; tests/convert/fixtures_test.cpp).
#include <filesystem>
#include <string>

#include "convert/arch.h"
#include "core/error.h"

namespace ferrite::convert {
namespace {

void bert_params(Params& p) {
  decoder_dims(p);
  Dims& d = p.dims;
  d.n_head_kv = d.n_head;
  d.pos = p.req_int({"max_position_embeddings"});
  d.types = p.opt_int({"type_vocab_size"}).value_or(1);
  base_params(p);
  p.boolean("attention.causal", false);
  const HfFiles& f = p.files();
  if (!f.has("modules.json")) return;
  const Json modules = read_json_file(f.path("modules.json"), kMaxConfigBytes);
  if (!modules.is_array()) return;
  for (const Json& m : modules) {
    if (!m.is_object() || m.value("type", std::string()) != "sentence_transformers.models.Pooling") continue;
    const std::string dir = m.value("path", std::string());
    if (dir.find("..") != std::string::npos) throw ModelError(f.path("modules.json") + ": pooling path leaves the folder");
    const Json pooling = read_json_file((std::filesystem::path(f.dir) / dir / "config.json").string(), kMaxConfigBytes);
    if (pooling.value("pooling_mode_mean_tokens", false)) {
      p.u32("pooling_type", 1);
    } else if (pooling.value("pooling_mode_cls_token", false)) {
      p.u32("pooling_type", 2);
    } else {
      throw ModelError(f.dir + ": only MEAN and CLS pooling are supported (modules.json)");
    }
    break;
  }
}

// BertForSequenceClassification: one label only (a score); rank pooling.
void bert_classifier_params(Params& p) {
  bert_params(p);
  const Json& c = p.files().config;
  int64_t labels = 2;  // transformers' default num_labels
  if (c.contains("id2label") && c["id2label"].is_object()) labels = static_cast<int64_t>(c["id2label"].size());
  if (auto n = p.opt_int({"num_labels"})) labels = *n;
  if (labels != 1) {
    throw ModelError(p.config_path() + ": a sequence classifier with " + std::to_string(labels) +
                     " labels; only single-label models (rerankers: one score) convert");
  }
  p.u32("pooling_type", 4);
}

std::string bert_rename(const std::string& name) {
  std::string n = name.rfind("bert.", 0) == 0 ? name.substr(5) : name;
  if (n.size() > 6 && n.ends_with(".gamma")) n = n.substr(0, n.size() - 6) + ".weight";
  if (n.size() > 5 && n.ends_with(".beta")) n = n.substr(0, n.size() - 5) + ".bias";
  return n;
}

}  // namespace

std::vector<ArchDef> bert_archs() {
  using D = Dim;
  ArchDef a;
  a.gguf_arch = "bert";
  a.hf_classes = {"BertModel", "BertForMaskedLM"};
  a.params = bert_params;
  a.vocab = vocab_bert;
  a.rename = bert_rename;
  a.rules = {
      {"embeddings.word_embeddings.weight", "token_embd.weight", {D::Vocab, D::Embd}},
      {"embeddings.position_embeddings.weight", "position_embd.weight", {D::Pos, D::Embd}},
      {"embeddings.token_type_embeddings.weight", "token_types.weight", {D::Types, D::Embd}},
      {"embeddings.LayerNorm.weight", "token_embd_norm.weight", {D::Embd}},
      {"embeddings.LayerNorm.bias", "token_embd_norm.bias", {D::Embd}},
      {"embeddings.position_ids", "", {D::Any, D::Any}},
      {"pooler.dense.weight", "", {D::Embd, D::Embd}},
      {"pooler.dense.bias", "", {D::Embd}},
      {"encoder.layer.{bid}.attention.self.query.weight", "blk.{bid}.attn_q.weight", {D::Q, D::Embd}},
      {"encoder.layer.{bid}.attention.self.query.bias", "blk.{bid}.attn_q.bias", {D::Q}},
      {"encoder.layer.{bid}.attention.self.key.weight", "blk.{bid}.attn_k.weight", {D::KV, D::Embd}},
      {"encoder.layer.{bid}.attention.self.key.bias", "blk.{bid}.attn_k.bias", {D::KV}},
      {"encoder.layer.{bid}.attention.self.value.weight", "blk.{bid}.attn_v.weight", {D::KV, D::Embd}},
      {"encoder.layer.{bid}.attention.self.value.bias", "blk.{bid}.attn_v.bias", {D::KV}},
      {"encoder.layer.{bid}.attention.output.dense.weight", "blk.{bid}.attn_output.weight", {D::Embd, D::Q}},
      {"encoder.layer.{bid}.attention.output.dense.bias", "blk.{bid}.attn_output.bias", {D::Embd}},
      {"encoder.layer.{bid}.attention.output.LayerNorm.weight", "blk.{bid}.attn_output_norm.weight", {D::Embd}},
      {"encoder.layer.{bid}.attention.output.LayerNorm.bias", "blk.{bid}.attn_output_norm.bias", {D::Embd}},
      {"encoder.layer.{bid}.intermediate.dense.weight", "blk.{bid}.ffn_up.weight", {D::FF, D::Embd}},
      {"encoder.layer.{bid}.intermediate.dense.bias", "blk.{bid}.ffn_up.bias", {D::FF}},
      {"encoder.layer.{bid}.output.dense.weight", "blk.{bid}.ffn_down.weight", {D::Embd, D::FF}},
      {"encoder.layer.{bid}.output.dense.bias", "blk.{bid}.ffn_down.bias", {D::Embd}},
      {"encoder.layer.{bid}.output.LayerNorm.weight", "blk.{bid}.layer_output_norm.weight", {D::Embd}},
      {"encoder.layer.{bid}.output.LayerNorm.bias", "blk.{bid}.layer_output_norm.bias", {D::Embd}},
  };
  a.layer_requires = {{"blk.{bid}.attn_q.weight"},          {"blk.{bid}.attn_k.weight"},
                      {"blk.{bid}.attn_v.weight"},          {"blk.{bid}.attn_output.weight"},
                      {"blk.{bid}.attn_output_norm.weight"}, {"blk.{bid}.ffn_up.weight"},
                      {"blk.{bid}.ffn_down.weight"},        {"blk.{bid}.layer_output_norm.weight"}};
  a.requires_ = {"token_embd.weight", "position_embd.weight", "token_types.weight", "token_embd_norm.weight"};
  a.drop_prefixes = {"cls.predictions.", "cls.seq_relationship."};

  ArchDef rank = a;
  rank.hf_classes = {"BertForSequenceClassification"};
  rank.params = bert_classifier_params;
  for (TensorRule& r : rank.rules) {
    if (std::string(r.hf) == "pooler.dense.weight") r.gguf = "cls.weight";
    if (std::string(r.hf) == "pooler.dense.bias") r.gguf = "cls.bias";
  }
  rank.rules.push_back({"classifier.weight", "cls.output.weight", {D::One, D::Embd}});
  rank.rules.push_back({"classifier.bias", "cls.output.bias", {D::One}});
  rank.requires_.insert(rank.requires_.end(), {"cls.weight", "cls.bias", "cls.output.weight", "cls.output.bias"});
  return {a, rank};
}

}  // namespace ferrite::convert
