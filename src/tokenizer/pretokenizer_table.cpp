// The pre-tokenizer expressions by `tokenizer.ggml.pre` name. The
// expressions are facts of the models' tokenizer.json files, in the form the
// reference engine applies them (case-insensitive contraction groups spelled
// out, Lu/Ll classes emulated with ASCII ranges).
#include <cstring>

#include "tokenizer/pretokenizer.h"

namespace ferrite::tokenizer {
namespace {

const char* const kGpt2 = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))";

const char* const kLlama3 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

const char* const kQwen2 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

const char* const kPoro = R"( ?[^(\s|.,!?…。，、।۔،)]+)";

const char* const kDeepseekLlmLetters =
    R"(\s?[)"
    R"(\x{41}-\x{5a}\x{61}-\x{7a}\x{b5}\x{c0}-\x{d6}\x{d8}-\x{f6}\x{f8}-\x{1ba}\x{1bc}-\x{1bf})"
    R"(\x{1c4}-\x{293}\x{295}-\x{2af}\x{370}-\x{373}\x{376}\x{377}\x{37b}-\x{37d}\x{37f}\x{386})"
    R"(\x{388}-\x{38a}\x{38c}\x{38e}-\x{3a1}\x{3a3}-\x{3f5}\x{3f7}-\x{481}\x{48a}-\x{52f})"
    R"(\x{531}-\x{556}\x{10a0}-\x{10c5}\x{13a0}-\x{13f5}\x{13f8}-\x{13fd}\x{1c90}-\x{1cba})"
    R"(\x{1cbd}-\x{1cbf}\x{1d00}-\x{1d2b}\x{1d6b}-\x{1d77}\x{1d79}-\x{1d9a}\x{1e00}-\x{1f15})"
    R"(\x{1f18}-\x{1f1d}\x{1f20}-\x{1f45}\x{1f48}-\x{1f4d}\x{1f50}-\x{1f57}\x{1f59}\x{1f5b})"
    R"(\x{1f5d}\x{1f5f}-\x{1f7d}\x{1f80}-\x{1fb4}\x{1fb6}-\x{1fbc}\x{1fbe}\x{1fc2}-\x{1fc4})"
    R"(\x{1fc6}-\x{1fcc}\x{1fd0}-\x{1fd3}\x{1fd6}-\x{1fdb}\x{1fe0}-\x{1fec}\x{1ff2}-\x{1ff4})"
    R"(\x{1ff6}-\x{1ffc}\x{2102}\x{2107}\x{210a}-\x{2113}\x{2115}\x{2119}-\x{211d}\x{2124})"
    R"(\x{2126}\x{2128}\x{212a}-\x{212d}\x{212f}-\x{2134}\x{2139}\x{213c}-\x{213f})"
    R"(\x{2145}-\x{2149}\x{214e}\x{2183}\x{2184}\x{2c00}-\x{2c7b}\x{2c7e}-\x{2ce4})"
    R"(\x{2ceb}-\x{2cee}\x{2cf2}\x{2cf3}\x{a640}-\x{a66d}\x{a680}-\x{a69b}\x{a722}-\x{a76f})"
    R"(\x{a771}-\x{a787}\x{a78b}-\x{a78e}\x{ab70}-\x{abbf}\x{fb00}-\x{fb06}\x{fb13}-\x{fb17})"
    R"(\x{ff21}-\x{ff3a}\x{ff41}-\x{ff5a}\x{10400}-\x{1044f}\x{104b0}-\x{104d3})"
    R"(\x{104d8}-\x{104fb}\x{10c80}-\x{10cb2}\x{10cc0}-\x{10cf2}\x{118a0}-\x{118df})"
    R"(\x{1e900}-\x{1e943})"
    R"(]+)";

const char* const kTekken =
    R"([^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

const char* const kGpt4o =
    R"([^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

struct Entry {
  const char* names;  // space-separated
  std::vector<std::string> regexes;
  bool clean_spaces;
  bool ignore_merges;
  bool add_bos;
};

const std::vector<Entry>& table() {
  static const std::vector<Entry> t = {
      {"default",
       {R"([\p{P}\$\+<=>\^~\|]+)", kGpt2, R"(\p{N}+)", R"([0-9][0-9][0-9])"},
       true, false, false},
      {"llama3 llama-v3 llama-bpe falcon3 pixtral", {kLlama3}, true, true, true},
      {"dbrx smaug-bpe chatglm-bpe", {kLlama3}, true, false, false},
      {"deepseek-llm",
       {R"([\r\n])", kDeepseekLlmLetters, R"(\s?[!-/:-~！-／：-～‘-‟　-。]+)", R"(\s+$)", R"([一-龥ࠀ-一가-퟿]+)",
        R"(\p{N}+)"},
       false, false, false},
      {"deepseek-coder",
       {R"([\r\n])", R"(\s?\p{L}+)", R"(\s?\p{P}+)", R"([一-龥ࠀ-一가-퟿]+)", R"(\p{N})"},
       false, false, false},
      {"deepseek-v3",
       {R"(\p{N}{1,3})", R"([一-龥぀-ゟ゠-ヿ]+)",
        R"([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"},
       false, false, false},
      {"falcon", {R"([\p{P}\$\+<=>\^~\|`]+)", kGpt2, R"([0-9][0-9][0-9])"}, true, false, false},
      {"starcoder refact codeshell exaone minerva-7b", {R"(\p{N})", kGpt2}, true, false, false},
      {"command-r smollm", {R"(\p{N})", kGpt2}, false, false, false},
      {"gpt-2 phi-2 jina-es jina-de gigachat jina-v1-en jina-v2-es jina-v2-de jina-v2-code roberta-bpe mpt olmo "
       "jais exaone4",
       {kGpt2}, true, false, false},
      {"trillion granite-docling", {kGpt2}, false, false, false},
      {"qwen2 deepseek-r1-qwen hunyuan grok-2", {kQwen2}, false, false, false},
      {"stablelm2 megrez", {kQwen2}, true, false, false},
      {"poro-chat", {kPoro}, false, false, false},
      {"bloom gpt3-finnish", {kPoro}, true, false, false},
      {"viking", {kPoro, R"(\p{N})"}, false, false, false},
      {"tekken", {kTekken}, false, true, true},
      {"chameleon",
       {R"(<sentinel:[0-9]+>)", R"((IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z)", R"(([\t\n]|    |  ))", R"(\p{N})",
        R"([\p{P}!-/:-@\[-`{-~])", kGpt2},
       false, false, true},
      {"gpt-4o llama4", {kGpt4o}, false, false, false},
      {"superbpe", {R"(\p{N}+)", R"((?=(\d{3})+(?!\d)))"}, false, false, false},
      {"seed-coder",
       {R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1}| ?[^\s\p{L}\p{N}\r\n]+|\s*[\r\n]+|\s+(?!\S)|\s+)"},
       false, false, false},
      {"bailingmoe",
       {R"('(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+)"},
       false, false, false},
  };
  return t;
}

bool has_name(const char* names, const std::string& name) {
  const char* p = names;
  while (*p) {
    const char* e = std::strchr(p, ' ');
    const size_t len = e ? static_cast<size_t>(e - p) : std::strlen(p);
    if (len == name.size() && std::strncmp(p, name.data(), len) == 0) return true;
    if (!e) break;
    p = e + 1;
  }
  return false;
}

}  // namespace

bool find_pretokenizer(const std::string& name, PreTokenizerInfo& info) {
  const std::string key = name.empty() ? "default" : name;
  for (const auto& e : table()) {
    if (has_name(e.names, key)) {
      info.regexes = e.regexes;
      info.clean_spaces = e.clean_spaces;
      info.ignore_merges = e.ignore_merges;
      info.add_bos = e.add_bos;
      return true;
    }
  }
  return false;
}

std::vector<std::string> pretokenizer_names() {
  std::vector<std::string> out;
  for (const auto& e : table()) {
    std::string cur;
    for (const char* p = e.names;; ++p) {
      if (*p == ' ' || *p == '\0') {
        if (!cur.empty()) out.push_back(cur);
        cur.clear();
        if (*p == '\0') break;
      } else {
        cur.push_back(*p);
      }
    }
  }
  return out;
}

}  // namespace ferrite::tokenizer
