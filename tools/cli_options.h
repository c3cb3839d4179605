// The options `ferrite run` and `ferrite chat` share: llama-cli's. run
// generates from a prompt; with -cnv, -i, -if or -sys it holds a
// conversation as chat does (llama-cli's conversation mode).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "model_options.h"
#include "speculative_options.h"
#include "runtime/generation.h"
#include "sampling/params.h"

namespace ferrite::tools {

struct CliOptions {
  ModelOptions model;
  SpeculativeOptions spec;          // -md, --draft-max, --spec-type, ...
  std::string prompt;
  bool prompt_set = false;
  std::string file;                 // -f: the prompt from a file
  int n_predict = 128;              // -n: -1 no limit, -2 until the context is full
  int64_t n_keep = 0;               // --keep: prompt tokens a context shift keeps (-1: all)
  bool no_context_shift = false;
  bool echo = false;
  bool no_bos = false;
  bool ignore_eos = false;
  std::vector<std::string> stops;   // --stop, -r/--reverse-prompt
  std::string grammar, grammar_file, json_schema;
  sampling::SamplerParams sampling;
  bool conversation = false;        // -cnv, -i, -if
  bool no_conversation = false;     // -no-cnv
  std::string system_prompt;        // -sys
  std::string chat_template;
  bool color = false;               // -co
  bool escape = true;               // -e / --no-escape
  std::string prompt_cache;         // --prompt-cache FILE
  bool prompt_cache_all = false;
  bool prompt_cache_ro = false;
  bool verbose = false;
};

// Declares the options; `chat`: the defaults of `ferrite chat` (-n -1).
void add_cli_options(CLI::App& sub, CliOptions& o, bool chat);

// What the prompt, stops and system prompt become after -e: \n \r \t \' \"
// \\ and \xHH escapes processed.
std::string process_escapes(const std::string& s);
// Applies process_escapes where -e says so.
void apply_escapes(CliOptions& o);

// The generation parameters of the options (the grammar read from
// --grammar / --grammar-file / --json-schema, at most one).
runtime::GenerationParams generation_params(const CliOptions& o);

// The two modes (run.cpp, chat.cpp).
int run_generate(CliOptions& o);
int run_chat(CliOptions& o);

}  // namespace ferrite::tools
