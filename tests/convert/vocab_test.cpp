// The tokenizer half of the converter against the real vocabularies of
// shared/vocab (made by llama.cpp's converter from the models' own
// tokenizer files). Each is written back as the Hugging Face file it came
// from (tokenizer.json with the model's post-processor, or tokenizer.model),
// converted, and must give the same tokens, merges and, for byte-level BPE,
// the pre-tokenizer name through llama.cpp's hash table; the converted
// vocabulary must also pass llama.cpp's tokenizer test strings (.inp/.out).
#include <gtest/gtest.h>

#include "convert/bpe_pre_table.h"
#include "convert/hf_files.h"
#include "convert/vocab.h"
#include "core/error.h"
#include "core/sha256.h"
#include "gguf/file.h"
#include "gguf/metadata.h"
#include "gguf/writer.h"
#include "hf_dir.h"
#include "support/test_data.h"
#include "tokenizer/golden_support.h"
#include "tokenizer/tokenizer.h"

namespace ferrite {
namespace {

using test::Json;

constexpr int kControl = 3, kUserDefined = 4;

TEST(PreTokenizerTable, CheckTextIsLlamaCpps) {
  // SHA-256 of the check text as convert_hf_to_gguf.py (c392e50) spells it,
  // computed by Python from that literal.
  const std::string_view t = convert::pre_tokenizer_check_text();
  EXPECT_EQ(t.size(), 431u);
  EXPECT_EQ(Sha256::hex(t.data(), t.size()), "a36179c1e2b1cfcfbfad1dc779addad2ffc778201e4cf0d538bddeafa2c526da");
}

TEST(PreTokenizerTable, HashesThePythonListSpelling) {
  // hashlib.sha256(b"[1, 22, 333]") and of b"[]".
  EXPECT_EQ(convert::token_ids_hash({1, 22, 333}), "276d8737d9d5a80805e0731e8d5ae18972a8e3ba721f4988f67151c6e9159068");
  EXPECT_EQ(convert::token_ids_hash({}), "4f53cda18c2baa0c0354bb5f9a3ecbe5ed12ab4d8e11ba873c2f11161202b945");
}

TEST(PreTokenizerTable, LaterRowWinsAsInLlamaCpp) {
  EXPECT_STREQ(convert::pre_tokenizer_for_hash("0ef9807a4087ebef797fc749390439009c3b9eda9ad1a097abbe738f486c01e5"),
               "llama-bpe");
  // Two rows each: mpt then olmo, bert-bge then jina-v2-en.
  EXPECT_STREQ(convert::pre_tokenizer_for_hash("b6dc8df998e1cfbdc4eac8243701a65afe638679230920b50d6f17d81c098166"),
               "olmo");
  EXPECT_STREQ(convert::pre_tokenizer_for_hash("0876d13b50744004aa9aeae05e7b0647eac9d801b5ba4668afc01e709c15e19f"),
               "jina-v2-en");
  EXPECT_EQ(convert::pre_tokenizer_for_hash(std::string(64, '0')), nullptr);
}

struct BpeCase {
  const char* vocab;
  const char* expect_pre;  // what llama.cpp's table names for this tokenizer
  bool bos;                // the Hugging Face tokenizer prepends BOS
};

void PrintTo(const BpeCase& c, std::ostream* os) { *os << c.vocab; }

// tokenizer.json of a byte-level BPE vocabulary written by llama.cpp: normal
// tokens form model.vocab, control and user-defined tokens added_tokens.
Json bpe_tokenizer_json(const gguf::Metadata& md, bool bos) {
  const auto tokens = md.string_array("tokenizer.ggml.tokens");
  const auto types = md.int_array("tokenizer.ggml.token_type");
  Json vocab = Json::object(), added = Json::array();
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (types[i] == kControl || types[i] == kUserDefined) {
      added.push_back({{"id", i}, {"content", tokens[i]}, {"special", types[i] == kControl}});
    } else {
      vocab[tokens[i]] = i;
    }
  }
  Json post = nullptr;
  if (bos) {
    const std::string b = tokens[md.get_uint("tokenizer.ggml.bos_token_id")];
    Json single = Json::array();
    single.push_back({{"SpecialToken", {{"id", b}, {"type_id", 0}}}});
    single.push_back({{"Sequence", {{"id", "A"}, {"type_id", 0}}}});
    Json specials = Json::object();
    specials[b] = {{"id", b}, {"ids", Json::array({md.get_uint("tokenizer.ggml.bos_token_id")})}};
    post = {{"type", "TemplateProcessing"}, {"single", single}, {"special_tokens", specials}};
  }
  return {{"version", "1.0"},
          {"added_tokens", added},
          {"post_processor", post},
          {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", md.string_array("tokenizer.ggml.merges")}}}};
}

// The converted keys as an in-memory GGUF, then a tokenizer.
struct Converted {
  std::vector<uint8_t> bytes;
  std::unique_ptr<gguf::File> file;
};

Converted as_gguf(const convert::VocabKeys& v) {
  gguf::Writer w;
  w.set("general.architecture", gguf::Value::string("llama"));
  for (const gguf::KeyValue& kv : v.kvs) w.set(kv.key, kv.value);
  Converted c;
  c.bytes = w.to_bytes({});
  c.file = std::make_unique<gguf::File>(gguf::File::parse(c.bytes.data(), c.bytes.size(), "converted"));
  return c;
}

void expect_inp_out(const std::string& vocab, const tokenizer::Tokenizer& tok) {
  const auto inp = test::shared_path("vocab/ggml-vocab-" + vocab + ".gguf.inp");
  const auto outp = test::shared_path("vocab/ggml-vocab-" + vocab + ".gguf.out");
  if (!std::filesystem::exists(inp)) return;  // gpt-neox has no test strings
  const auto texts = test::split_inp(test::read_file(inp));
  const auto lines = test::split_lines(test::read_file(outp));
  ASSERT_EQ(texts.size(), lines.size());
  for (size_t i = 0; i < texts.size(); ++i) {
    EXPECT_EQ(tok.encode(texts[i], false, false), test::parse_ids(lines[i])) << vocab << " string " << i;
  }
}

void check_bpe(const BpeCase& c) {
  const auto path = test::shared_path(std::string("vocab/ggml-vocab-") + c.vocab + ".gguf");
  if (!std::filesystem::exists(path)) {
    if (test::in_ci()) FAIL() << "shared test data missing: " << path;
    GTEST_SKIP() << "shared test data missing: " << path;
  }
  const gguf::File src = gguf::File::open(path.string());
  const gguf::Metadata md(src);
  test::TempDir dir;
  test::write_json(dir.file("config.json"), {{"architectures", {"LlamaForCausalLM"}}});
  test::write_json(dir.file("tokenizer.json"), bpe_tokenizer_json(md, c.bos));
  const convert::HfFiles files = convert::HfFiles::open(dir.path().string());
  const convert::VocabKeys v = convert::vocab_gpt2(files, -1, {});

  ASSERT_NE(v.find("tokenizer.ggml.pre"), nullptr);
  EXPECT_EQ(v.find("tokenizer.ggml.pre")->as_string(), c.expect_pre);
  EXPECT_EQ(v.find("tokenizer.ggml.model")->as_string(), "gpt2");
  const Converted conv = as_gguf(v);
  const gguf::Metadata out(*conv.file);
  EXPECT_EQ(out.string_array("tokenizer.ggml.tokens"), md.string_array("tokenizer.ggml.tokens"));
  EXPECT_EQ(out.string_array("tokenizer.ggml.merges"), md.string_array("tokenizer.ggml.merges"));
  // Control tokens stay control tokens.
  const auto want = md.int_array("tokenizer.ggml.token_type"), got = out.int_array("tokenizer.ggml.token_type");
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    if (want[i] == kControl) {
      EXPECT_EQ(got[i], kControl) << i;
    }
  }
  expect_inp_out(c.vocab, tokenizer::Tokenizer::from_gguf(*conv.file));
}

class BpeVocab : public ::testing::TestWithParam<BpeCase> {};
TEST_P(BpeVocab, ConvertedLikeLlamaCpp) { check_bpe(GetParam()); }

// Each vocabulary costs one tokenizer build per pre-tokenizer tried (up to
// ~15 for a name late in the table): two in the quick suite, the rest slow.
INSTANTIATE_TEST_SUITE_P(Shared, BpeVocab,
                         ::testing::Values(BpeCase{"llama-bpe", "llama-bpe", true}, BpeCase{"gpt-2", "gpt-2", false}));

class BpeVocabSlow : public ::testing::TestWithParam<BpeCase> {};
TEST_P(BpeVocabSlow, ConvertedLikeLlamaCpp) { check_bpe(GetParam()); }
INSTANTIATE_TEST_SUITE_P(Shared, BpeVocabSlow,
                         ::testing::Values(BpeCase{"qwen2", "qwen2", false}, BpeCase{"falcon", "falcon", false},
                                           BpeCase{"deepseek-llm", "deepseek-llm", true},
                                           BpeCase{"deepseek-coder", "deepseek-coder", true},
                                           BpeCase{"starcoder", "starcoder", false},
                                           BpeCase{"refact", "refact", false},
                                           // mpt's hash is also olmo's, the later row of the table
                                           BpeCase{"mpt", "olmo", false}, BpeCase{"gpt-neox", "olmo", false}));

TEST(BpeVocabRefusal, UnknownHashIsRefusedUnlessNamed) {
  // A tokenizer of its own (256 bytes, two merges): no row of the table.
  test::TempDir dir;
  test::write_json(dir.file("config.json"), {{"architectures", {"GPT2LMHeadModel"}}});
  test::write_json(dir.file("tokenizer.json"), test::toy_bpe_tokenizer_json());
  const convert::HfFiles files = convert::HfFiles::open(dir.path().string());
  try {
    convert::vocab_gpt2(files, -1, {});
    FAIL() << "an unknown pre-tokenizer hash was accepted";
  } catch (const ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("--tokenizer-pre"), std::string::npos) << e.what();
  }
  convert::VocabOptions opt;
  opt.pre_override = "gpt-2";
  const convert::VocabKeys v = convert::vocab_gpt2(files, -1, opt);
  EXPECT_EQ(v.find("tokenizer.ggml.pre")->as_string(), "gpt-2");
  EXPECT_EQ(v.n_tokens, 259);
  EXPECT_FALSE(v.notes.empty());
}

TEST(BertVocab, WordPieceConvertedLikeLlamaCpp) {
  FERRITE_SHARED_FILE(path, "vocab/ggml-vocab-bert-bge.gguf");
  const gguf::File src = gguf::File::open(path.string());
  const gguf::Metadata md(src);
  const auto tokens = md.string_array("tokenizer.ggml.tokens");
  const auto types = md.int_array("tokenizer.ggml.token_type");
  // Back to WordPiece spelling: "\u2581w" -> "w", "x" -> "##x", "[X]" kept.
  Json vocab = Json::object(), added = Json::array();
  for (size_t i = 0; i < tokens.size(); ++i) {
    std::string t = tokens[i];
    if (t.size() >= 2 && t.front() == '[' && t.back() == ']') {
    } else if (t.rfind("\xe2\x96\x81", 0) == 0) {
      t = t.substr(3);
    } else {
      t = "##" + t;
    }
    vocab[t] = i;
    if (types[i] == kControl) added.push_back({{"id", i}, {"content", t}, {"special", true}});
  }
  test::TempDir dir;
  test::write_json(dir.file("config.json"), {{"architectures", {"BertModel"}}, {"type_vocab_size", 2}});
  test::write_json(dir.file("tokenizer.json"),
                   {{"added_tokens", added},
                    {"post_processor", {{"type", "BertProcessing"}, {"sep", {"[SEP]", 102}}, {"cls", {"[CLS]", 101}}}},
                    {"model", {{"type", "WordPiece"}, {"unk_token", "[UNK]"}, {"vocab", vocab}}}});
  test::write_json(dir.file("tokenizer_config.json"),
                   {{"unk_token", "[UNK]"}, {"sep_token", "[SEP]"}, {"pad_token", "[PAD]"}, {"mask_token", "[MASK]"}});
  const convert::HfFiles files = convert::HfFiles::open(dir.path().string());
  const convert::VocabKeys v = convert::vocab_bert(files, -1, {});
  // bge-small's hash: rows bert-bge and jina-v2-en; the later wins.
  EXPECT_EQ(v.find("tokenizer.ggml.pre")->as_string(), "jina-v2-en");
  const Converted conv = as_gguf(v);
  const gguf::Metadata out(*conv.file);
  EXPECT_EQ(out.string_array("tokenizer.ggml.tokens"), tokens);
  EXPECT_EQ(out.int_array("tokenizer.ggml.token_type"), types);
  EXPECT_EQ(out.get_uint("tokenizer.ggml.token_type_count"), 2u);
  EXPECT_EQ(out.get_uint("tokenizer.ggml.unknown_token_id"), 100u);
  EXPECT_EQ(out.get_uint("tokenizer.ggml.seperator_token_id"), 102u);
  EXPECT_EQ(out.get_uint("tokenizer.ggml.mask_token_id"), 103u);
  expect_inp_out("bert-bge", tokenizer::Tokenizer::from_gguf(*conv.file));
}

// T5's tokenizer.model: a Unigram model (trainer_spec model_type 1) becomes
// tokenizer.ggml.model "t5" with its normalizer's flags and
// precompiled_charsmap bytes as they are in the file (UINT8 array, read back
// through a GGUF image), no BOS and an EOS; a BPE one (Pile-T5) stays "llama".
TEST(T5Vocab, UnigramModelKeepsItsNormalizer) {
  std::string charsmap;
  for (int i = 0; i < 300; ++i) charsmap.push_back(static_cast<char>((i * 37 + 11) & 0xff));
  std::string model;
  for (const test::SpmPieceSpec& p : std::vector<test::SpmPieceSpec>{
           {"<pad>", 0, 3}, {"</s>", 0, 3}, {"<unk>", 0, 2}, {"\xe2\x96\x81" "a", -1.5f, 1}, {"b", -2.5f, 1}}) {
    std::string m = test::pb_bytes(1, p.piece) + test::pb_float(2, p.score);
    if (p.type != 1) m += test::pb_uint(3, static_cast<uint64_t>(p.type));
    model += test::pb_bytes(1, m);
  }
  model += test::pb_bytes(2, test::pb_uint(3, 1) + test::pb_uint(40, 2) + test::pb_uint(42, 1) + test::pb_uint(43, 0));
  model += test::pb_bytes(3, test::pb_bytes(1, "nmt_nfkc") + test::pb_bytes(2, charsmap) + test::pb_uint(3, 1) +
                                 test::pb_uint(4, 0));
  test::TempDir dir;
  test::write_json(dir.file("config.json"), {{"architectures", {"T5ForConditionalGeneration"}}, {"vocab_size", 8}});
  test::write_bytes(dir.file("tokenizer.model"), model);
  const convert::VocabKeys v = convert::vocab_t5(convert::HfFiles::open(dir.path().string()), 8, {});
  const Converted conv = as_gguf(v);
  const gguf::Metadata md(*conv.file);
  EXPECT_EQ(md.get_string("tokenizer.ggml.model"), "t5");
  EXPECT_EQ(md.string_array("tokenizer.ggml.tokens").size(), 8u);  // padded to vocab_size
  EXPECT_EQ(md.string_array("tokenizer.ggml.tokens")[3], "\xe2\x96\x81" "a");
  EXPECT_EQ(md.opt_bool("tokenizer.ggml.add_space_prefix"), true);
  EXPECT_EQ(md.opt_bool("tokenizer.ggml.remove_extra_whitespaces"), false);
  EXPECT_EQ(md.opt_bool("tokenizer.ggml.add_bos_token"), false);
  EXPECT_EQ(md.opt_bool("tokenizer.ggml.add_eos_token"), true);
  const gguf::Value* cm = conv.file->find("tokenizer.ggml.precompiled_charsmap");
  ASSERT_NE(cm, nullptr);
  std::string got;
  for (const auto& item : cm->items()) got.push_back(static_cast<char>(item.as_int()));
  EXPECT_EQ(got, charsmap);

  test::TempDir bpe;
  test::write_json(bpe.file("config.json"), {{"architectures", {"T5ForConditionalGeneration"}}});
  std::vector<test::SpmPieceSpec> pieces = {{"<unk>", 0, 2}, {"<s>", 0, 3}, {"</s>", 0, 3}, {"a", -1, 1}};
  test::write_bytes(bpe.file("tokenizer.model"), test::spm_model_bytes(pieces));
  const convert::VocabKeys b = convert::vocab_t5(convert::HfFiles::open(bpe.path().string()), -1, {});
  EXPECT_EQ(b.find("tokenizer.ggml.model")->as_string(), "llama");
  EXPECT_EQ(b.find("tokenizer.ggml.precompiled_charsmap"), nullptr);
}

class SpmVocab : public ::testing::TestWithParam<const char*> {};

TEST_P(SpmVocab, TokenizerModelConvertedLikeLlamaCpp) {
  FERRITE_SHARED_FILE(path, std::string("vocab/ggml-vocab-") + GetParam() + ".gguf");
  const gguf::File src = gguf::File::open(path.string());
  const gguf::Metadata md(src);
  const auto tokens = md.string_array("tokenizer.ggml.tokens");
  const auto scores = md.float_array("tokenizer.ggml.scores");
  const auto types = md.int_array("tokenizer.ggml.token_type");
  std::vector<test::SpmPieceSpec> pieces;
  for (size_t i = 0; i < tokens.size(); ++i) pieces.push_back({tokens[i], scores[i], static_cast<int>(types[i])});
  test::TempDir dir;
  test::write_json(dir.file("config.json"), {{"architectures", {"LlamaForCausalLM"}}});
  test::write_bytes(dir.file("tokenizer.model"), test::spm_model_bytes(pieces));
  test::write_json(dir.file("tokenizer_config.json"),
                   {{"add_bos_token", true}, {"add_eos_token", false}, {"chat_template", "{{ messages }}"}});
  test::write_json(dir.file("generation_config.json"), {{"bos_token_id", 1}, {"eos_token_id", {2, 3}}});
  const convert::HfFiles files = convert::HfFiles::open(dir.path().string());
  const convert::VocabKeys v = convert::vocab_sentencepiece(files, -1);
  const Converted conv = as_gguf(v);
  const gguf::Metadata out(*conv.file);
  EXPECT_EQ(out.get_string("tokenizer.ggml.model"), "llama");
  EXPECT_EQ(out.string_array("tokenizer.ggml.tokens"), tokens);
  EXPECT_EQ(out.float_array("tokenizer.ggml.scores"), scores);
  // A user-defined piece becomes NORMAL in llama.cpp's converter.
  const auto got = out.int_array("tokenizer.ggml.token_type");
  for (size_t i = 0; i < types.size(); ++i) EXPECT_EQ(got[i], types[i] == kUserDefined ? 1 : types[i]) << i;
  EXPECT_EQ(out.get_string("tokenizer.chat_template"), "{{ messages }}");
  EXPECT_TRUE(out.get_bool("tokenizer.ggml.add_bos_token"));
  EXPECT_EQ(out.get_uint("tokenizer.ggml.bos_token_id"), 1u);  // from generation_config.json
  EXPECT_EQ(out.get_uint("tokenizer.ggml.eos_token_id"), 2u);  // the first of its list
  expect_inp_out(GetParam(), tokenizer::Tokenizer::from_gguf(*conv.file));
}

INSTANTIATE_TEST_SUITE_P(Shared, SpmVocab, ::testing::Values("llama-spm", "phi-3"));

}  // namespace
}  // namespace ferrite
