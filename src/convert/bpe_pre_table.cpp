#include "convert/bpe_pre_table.h"

#include <algorithm>

#include "core/sha256.h"

namespace ferrite::convert {
namespace {

const char kCheckText[] =
    "\n \n\n \n\n\n \t \t\t \t\n  \n   \n    \n     \n\xf0\x9f\x9a\x80 (normal) \xf0\x9f\x98\xb6\xe2\x80\x8d\xf0\x9f\x8c\xab\xef\xb8\x8f "
    "(multiple emojis concatenated) \xe2\x9c\x85 \xf0\x9f\xa6\x99\xf0\x9f\xa6\x99 3 33 333 3333 "
    "33333 333333 3333333 33333333 3.3 3..3 3...3 \xe1\x9e\x80\xe1\x9e\xb6\xe1\x9e\x93\xe1\x9f\x8b\xe1\x9e\x8f\xe1\x9f\x82\xe1\x9e\x96\xe1\x9e\xb7\xe1\x9e\x9f\xe1\x9f\x81\xe1\x9e\x9f\xe1\x9e\xa2\xe1\x9e\xb6\xe1\x9e\x85\xf0\x9f\x98\x81 "
    "\?\xe6\x88\x91\xe6\x83\xb3\xe5\x9c\xa8""apple\xe5\xb7\xa5\xe4\xbd\x9c""1314151\xe5\xa4\xa9\xef\xbd\x9e "
    "------======= \xd0\xbd\xd0\xb5\xd1\x89\xd0\xbe \xd0\xbd\xd0\xb0 \xd0\x91\xd1\x8a\xd0\xbb\xd0\xb3\xd0\xb0\xd1\x80\xd1\x81\xd0\xba\xd0\xb8 "
    "''''''```````\"\"\"\"......!!!!!!\?\?\?\?\?\? I've been 'told he's there, 'RE you sure\? 'M"
    " not sure I'll make it, 'D you like some tea\? We'Ve a'lL";

struct Row {
  const char* hash;
  const char* name;
};

// hash -> name, in llama.cpp's order; the comment is the model it came from.
constexpr Row kRows[] = {
    {"0ef9807a4087ebef797fc749390439009c3b9eda9ad1a097abbe738f486c01e5", "llama-bpe"},  // https://huggingface.co/meta-llama/Meta-Llama-3-8B
    {"049ecf7629871e3041641907f3de7c733e4dbfdc736f57d882ba0b0845599754", "deepseek-llm"},  // https://huggingface.co/deepseek-ai/deepseek-llm-7b-base
    {"347715f544604f9118bb75ed199f68779f423cabb20db6de6f31b908d04d7821", "deepseek-coder"},  // https://huggingface.co/deepseek-ai/deepseek-coder-6.7b-base
    {"8aeee3860c56296a157a1fe2fad249ec40aa59b1bb5709f4ade11c4e6fe652ed", "falcon"},  // https://huggingface.co/tiiuae/falcon-7b
    {"9d032fcbd5501f4a38150912590928bfb36091efb5df11b8e2124b0390e3fb1e", "falcon3"},  // https://huggingface.co/tiiuae/Falcon3-7B-Base
    {"0876d13b50744004aa9aeae05e7b0647eac9d801b5ba4668afc01e709c15e19f", "bert-bge"},  // https://huggingface.co/BAAI/bge-small-en-v1.5
    {"8e62295832751ca1e8f92f2226f403dea30dc5165e448b5bfa05af5340c64ec7", "bert-bge-large"},  // https://huggingface.co/BAAI/bge-large-zh-v1.5
    {"b6dc8df998e1cfbdc4eac8243701a65afe638679230920b50d6f17d81c098166", "mpt"},  // https://huggingface.co/mosaicml/mpt-7b
    {"35d91631860c815f952d711435f48d356ebac988362536bed955d43bfa436e34", "starcoder"},  // https://huggingface.co/bigcode/starcoder2-3b
    {"3ce83efda5659b07b1ad37ca97ca5797ea4285d9b9ab0dc679e4a720c9da7454", "gpt-2"},  // https://huggingface.co/openai-community/gpt2
    {"32d85c31273f8019248f2559fed492d929ea28b17e51d81d3bb36fff23ca72b3", "stablelm2"},  // https://huggingface.co/stabilityai/stablelm-2-zephyr-1_6b
    {"6221ad2852e85ce96f791f476e0b390cf9b474c9e3d1362f53a24a06dc8220ff", "refact"},  // https://huggingface.co/smallcloudai/Refact-1_6-base
    {"9c2227e4dd922002fb81bde4fc02b0483ca4f12911410dee2255e4987644e3f8", "command-r"},  // https://huggingface.co/CohereForAI/c4ai-command-r-v01
    {"e636dc30a262dcc0d8c323492e32ae2b70728f4df7dfe9737d9f920a282b8aea", "qwen2"},  // https://huggingface.co/Qwen/Qwen1.5-7B
    {"b6dc8df998e1cfbdc4eac8243701a65afe638679230920b50d6f17d81c098166", "olmo"},  // https://huggingface.co/allenai/OLMo-1.7-7B-hf
    {"a8594e3edff7c29c003940395316294b2c623e09894deebbc65f33f1515df79e", "dbrx"},  // https://huggingface.co/databricks/dbrx-base
    {"c7699093ba4255a91e702aa38a596aa81669f3525dae06c2953267dde580f448", "jina-v1-en"},  // https://huggingface.co/jinaai/jina-reranker-v1-tiny-en
    {"0876d13b50744004aa9aeae05e7b0647eac9d801b5ba4668afc01e709c15e19f", "jina-v2-en"},  // https://huggingface.co/jinaai/jina-embeddings-v2-base-en
    {"171aeeedd6fb548d418a7461d053f11b6f1f1fc9b387bd66640d28a4b9f5c643", "jina-v2-es"},  // https://huggingface.co/jinaai/jina-embeddings-v2-base-es
    {"27949a2493fc4a9f53f5b9b029c82689cfbe5d3a1929bb25e043089e28466de6", "jina-v2-de"},  // https://huggingface.co/jinaai/jina-embeddings-v2-base-de
    {"c136ed14d01c2745d4f60a9596ae66800e2b61fa45643e72436041855ad4089d", "smaug-bpe"},  // https://huggingface.co/abacusai/Smaug-Llama-3-70B-Instruct
    {"c7ea5862a53e4272c035c8238367063e2b270d51faa48c0f09e9d5b54746c360", "poro-chat"},  // https://huggingface.co/LumiOpen/Poro-34B-chat
    {"7967bfa498ade6b757b064f31e964dddbb80f8f9a4d68d4ba7998fcf281c531a", "jina-v2-code"},  // https://huggingface.co/jinaai/jina-embeddings-v2-base-code
    {"b6e8e1518dc4305be2fe39c313ed643381c4da5db34a98f6a04c093f8afbe99b", "chatglm-bpe"},  // https://huggingface.co/THUDM/glm-4-9b-chat
    {"81d72c7348a9f0ebe86f23298d37debe0a5e71149e29bd283904c02262b27516", "chatglm-bpe"},  // https://huggingface.co/THUDM/glm-4-9b-chat
    {"7fc505bd3104ca1083b150b17d088b59534ede9bde81f0dd2090967d7fe52cee", "viking"},  // https://huggingface.co/LumiOpen/Viking-7B
    {"b53802fb28e26d645c3a310b34bfe07da813026ec7c7716883404d5e0f8b1901", "jais"},  // https://huggingface.co/core42/jais-13b
    {"7b3e7548e4308f52a76e8229e4e6cc831195d0d1df43aed21ac6c93da05fec5f", "codeshell"},  // https://huggingface.co/WisdomShell/CodeShell-7B
    {"63b97e4253352e6f357cc59ea5b583e3a680eaeaf2632188c2b952de2588485e", "tekken"},  // https://huggingface.co/mistralai/Mistral-Nemo-Base-2407
    {"855059429035d75a914d1eda9f10a876752e281a054a7a3d421ef0533e5b6249", "smollm"},  // https://huggingface.co/HuggingFaceTB/SmolLM-135M
    {"3c30d3ad1d6b64202cd222813e7736c2db6e1bd6d67197090fc1211fbc612ae7", "bloom"},  // https://huggingface.co/bigscience/bloom
    {"bc01ce58980e1db43859146dc51b1758b3b88729b217a74792e9f8d43e479d21", "gpt3-finnish"},  // https://huggingface.co/TurkuNLP/gpt3-finnish-small
    {"4e2b24cc4770243d65a2c9ec19770a72f08cffc161adbb73fcbb6b7dd45a0aae", "exaone"},  // https://huggingface.co/LGAI-EXAONE/EXAONE-3.0-7.8B-Instruct
    {"fcace8b9cac38ce847670c970cd5892031a753a1ef381abd1d9af00f713da085", "phi-2"},  // https://huggingface.co/microsoft/phi-2
    {"60824e3c0d9401f89943cbb2fff727f0e2d4c545ba4df2d6e4f09a6db0f5b450", "chameleon"},  // https://huggingface.co/facebook/chameleon-7b
    {"1431a23e583c97432bc230bff598d103ddb5a1f89960c8f1d1051aaa944d0b35", "minerva-7b"},  // https://huggingface.co/sapienzanlp/Minerva-7B-base-v1.0
    {"8b5a93ed704057481f240da0be7e7dca721d7f8f4755263b6807227a2cbeae65", "roberta-bpe"},  // https://huggingface.co/sentence-transformers/stsb-roberta-base
    {"ad851be1dba641f2e3711822f816db2c265f788b37c63b4e1aeacb9ee92de8eb", "gigachat"},  // https://huggingface.co/ai-sage/GigaChat-20B-A3B-instruct
    {"d4c8f286ea6b520b3d495c4455483cfa2302c0cfcd4be05d781b6a8a0a7cdaf1", "megrez"},  // https://huggingface.co/Infinigence/Megrez-3B-Instruct
    {"877081d19cf6996e2c4ff0e1236341e9b7bde288f5311a56a937f0afbbb3aeb5", "deepseek-v3"},  // https://huggingface.co/deepseek-ai/DeepSeek-V3
    {"b3f499bb4255f8ca19fccd664443283318f2fd2414d5e0b040fbdd0cc195d6c5", "deepseek-r1-qwen"},  // https://huggingface.co/deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B
};

}  // namespace

std::string_view pre_tokenizer_check_text() { return std::string_view(kCheckText, sizeof(kCheckText) - 1); }

std::string token_ids_hash(const std::vector<int32_t>& ids) {
  std::string s = "[";
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i > 0) s += ", ";
    s += std::to_string(ids[i]);
  }
  s += "]";
  return Sha256::hex(s.data(), s.size());
}

const char* pre_tokenizer_for_hash(std::string_view hex) {
  const char* found = nullptr;
  for (const Row& r : kRows) {
    if (hex == r.hash) found = r.name;
  }
  return found;
}

std::vector<std::string> hashed_pre_tokenizer_names() {
  std::vector<std::string> out;
  for (const Row& r : kRows) {
    if (std::find(out.begin(), out.end(), r.name) == out.end()) out.emplace_back(r.name);
  }
  return out;
}

}  // namespace ferrite::convert
