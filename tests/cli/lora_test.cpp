// The CLI's LoRA flags (llama.cpp's names): `ferrite synth-lora` writes a
// random adapter; `run --lora F` changes the greedy text, `--lora-scaled F 0`
// and `--lora-init-without-apply` leave it as the base model's, two adapters
// load; `perplexity --lora` scores with the adapter; bad adapters and
// `convert --lora` without --base are clear errors with a non-zero status.
#include <gtest/gtest.h>

#include "cli_util.h"
#include "support/temp_dir.h"
#include "support/test_data.h"

namespace ferrite::test {
namespace {

TEST(CliLora, RunAndPerplexityWithAdapters) {
  FERRITE_SHARED_FILE(model, "models/stories260K.gguf");
  FERRITE_SHARED_FILE(text, "text/war-and-peace.txt");
  TempDir dir("cli-lora");
  const std::string a = dir.file("a.gguf"), b = dir.file("b.gguf");
  const CommandResult wa = run_ferrite({"synth-lora", model.string(), "-o", a, "--stddev", "0.1", "--seed", "3"});
  ASSERT_EQ(wa.status, 0) << wa.err;
  const CommandResult wb = run_ferrite({"synth-lora", model.string(), "-o", b, "--targets", "ffn_down,output",
                                        "--rank", "2", "--outtype", "f16"});
  ASSERT_EQ(wb.status, 0) << wb.err;
  const std::vector<std::string> gen = {"run", model.string(), "-p", "Once upon a time", "-n", "24", "--temp", "0"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = gen;
    args.insert(args.end(), extra.begin(), extra.end());
    const CommandResult r = run_ferrite(args);
    EXPECT_EQ(r.status, 0) << r.err;
    return r.out;
  };
  const std::string base = with({});
  const std::string adapted = with({"--lora", a});
  EXPECT_NE(adapted, base);
  EXPECT_EQ(with({"--lora-scaled", a, "0"}), base);
  EXPECT_EQ(with({"--lora", a, "--lora-init-without-apply"}), base);
  EXPECT_EQ(with({"--lora-scaled", a, "1"}), adapted);
  EXPECT_NE(with({"--lora", a, "--lora-scaled", b, "2"}), adapted);

  const std::vector<std::string> ppl = {"perplexity", "-m", model.string(), "-f", text.string(), "-c", "128",
                                        "--chunks", "2", "-t", "2"};
  const CommandResult p0 = run_ferrite(ppl);
  std::vector<std::string> ppl_lora = ppl;
  ppl_lora.insert(ppl_lora.end(), {"--lora", a});
  const CommandResult p1 = run_ferrite(ppl_lora);
  ASSERT_EQ(p0.status, 0) << p0.err;
  ASSERT_EQ(p1.status, 0) << p1.err;
  EXPECT_NE(p0.out.find("Final estimate"), std::string::npos) << p0.out;
  EXPECT_NE(p0.out, p1.out);
}

TEST(CliLora, BadAdaptersAreClearErrors) {
  FERRITE_SHARED_FILE(model, "models/stories260K.gguf");
  TempDir dir("cli-lora-bad");
  const CommandResult missing = run_ferrite({"run", model.string(), "-p", "x", "-n", "1", "--lora", dir.file("no.gguf")});
  EXPECT_NE(missing.status, 0);
  EXPECT_NE(missing.err.find("no.gguf"), std::string::npos) << missing.err;
  // A model is not an adapter.
  const CommandResult model_as = run_ferrite({"run", model.string(), "-p", "x", "-n", "1", "--lora", model.string()});
  EXPECT_NE(model_as.status, 0);
  EXPECT_NE(model_as.err.find("not a LoRA adapter"), std::string::npos) << model_as.err;
  const CommandResult no_scale = run_ferrite({"run", model.string(), "-p", "x", "-n", "1", "--lora-scaled", "f"});
  EXPECT_NE(no_scale.status, 0);
  const CommandResult no_base = run_ferrite({"convert", "--lora", dir.path().string(), "-o", dir.file("o.gguf")});
  EXPECT_NE(no_base.status, 0);
  EXPECT_NE(no_base.err.find("--base"), std::string::npos) << no_base.err;
}

}  // namespace
}  // namespace ferrite::test
