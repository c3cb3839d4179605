/* ferrite: run large language models from GGUF files -- the C API.
 *
 * Link with libferrite.so (pkg-config ferrite, or find_package(ferrite) and
 * ferrite::ferrite) or the static libferrite.a (pkg-config --static ferrite).
 *
 * Conventions
 * - Every function that can fail returns a ferrite_status; FERRITE_OK is 0.
 *   On failure, ferrite_last_error() gives a message for this thread's last
 *   failing call. No function exits the process or lets an exception out.
 * - Handles are opaque. A model is immutable once loaded and may be shared by
 *   any number of contexts on any threads. A context (its KV cache) and a
 *   sampler belong to one thread at a time.
 * - Functions that write a variable-size result take (buffer, capacity,
 *   &length): they always store the full length in *length; when the
 *   buffer is too small (or NULL with capacity 0) they return
 *   FERRITE_ERR_BUFFER_TOO_SMALL and write nothing. Text is NUL-terminated,
 *   so it needs capacity >= length + 1.
 * - Sequence ids are 0..255; positions are int32.
 *
 * Compatibility: FERRITE_API_VERSION_MAJOR is the library's SONAME
 * (libferrite.so.1). Functions may be added within a major version;
 * ferrite_api_version() returns the version the library was built with. */
#ifndef FERRITE_H
#define FERRITE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FERRITE_API_VERSION_MAJOR 1
#define FERRITE_API_VERSION_MINOR 0
/* major * 1000 + minor */
#define FERRITE_API_VERSION (FERRITE_API_VERSION_MAJOR * 1000 + FERRITE_API_VERSION_MINOR)

#if defined(__GNUC__)
#define FERRITE_EXPORT __attribute__((visibility("default")))
#else
#define FERRITE_EXPORT
#endif
/* No function lets an exception out (C++ callers may rely on it). */
#ifdef __cplusplus
#define FERRITE_NOEXCEPT noexcept
#else
#define FERRITE_NOEXCEPT
#endif

/* ---------------------------------------------------------------- errors */

typedef enum ferrite_status {
  FERRITE_OK = 0,
  FERRITE_ERR_INVALID_ARGUMENT = 1, /* a NULL handle, a bad value, a token outside the vocabulary */
  FERRITE_ERR_IO = 2,               /* a file could not be opened, read or written */
  FERRITE_ERR_FORMAT = 3,           /* a file's bytes violate its format (GGUF, saved state) */
  FERRITE_ERR_MODEL = 4,            /* a well-formed file that is not a usable model */
  FERRITE_ERR_CONTEXT_FULL = 5,     /* the KV cache has too few free cells for the batch */
  FERRITE_ERR_BUFFER_TOO_SMALL = 6, /* *length holds the size needed */
  FERRITE_ERR_CANCELLED = 7,        /* a callback asked to stop */
  FERRITE_ERR_OUT_OF_MEMORY = 8,
  FERRITE_ERR_INTERNAL = 9 /* anything else */
} ferrite_status;

/* The message of this thread's last failed call ("" when none failed). The
 * pointer stays valid until this thread's next failing call. */
FERRITE_EXPORT const char* ferrite_last_error(void) FERRITE_NOEXCEPT;
/* "ok", "invalid_argument", "io", ... ; "unknown" for other values. */
FERRITE_EXPORT const char* ferrite_status_name(ferrite_status status) FERRITE_NOEXCEPT;

/* --------------------------------------------------------------- version */

/* FERRITE_API_VERSION of the library (compare with the header's). */
FERRITE_EXPORT int ferrite_api_version(void) FERRITE_NOEXCEPT;
/* "0.1.0 (commit ...)": the engine's version. */
FERRITE_EXPORT const char* ferrite_version(void) FERRITE_NOEXCEPT;
/* 1 when this build can offload layers to a GPU (n_gpu_layers takes effect). */
FERRITE_EXPORT int ferrite_supports_gpu_offload(void) FERRITE_NOEXCEPT;

/* ----------------------------------------------------------------- model */

typedef struct ferrite_model ferrite_model;

/* Called during the load with the bytes of tensor data read so far and the
 * total; return 0 to go on, anything else cancels the load
 * (FERRITE_ERR_CANCELLED). */
typedef int (*ferrite_progress_fn)(uint64_t done, uint64_t total, void* user_data);

typedef struct ferrite_model_params {
  int32_t n_gpu_layers;         /* layers its contexts run on the GPU; -1: all. Ignored without GPU support */
  int32_t use_mmap;             /* 1 (default): pages are read when first used. 0: every page is read
                                   during the load, so no evaluation waits on the disk. The file stays
                                   memory-mapped either way */
  ferrite_progress_fn progress; /* NULL: no reports; else the pages are read during the load (as with
                                   use_mmap 0) and reported */
  void* progress_user_data;
} ferrite_model_params;

FERRITE_EXPORT ferrite_model_params ferrite_model_default_params(void) FERRITE_NOEXCEPT;
/* params NULL: the defaults. On failure *out is NULL. */
FERRITE_EXPORT ferrite_status ferrite_model_load(const char* path, const ferrite_model_params* params,
                                                 ferrite_model** out) FERRITE_NOEXCEPT;
/* Frees the model once every context made from it is freed (NULL: nothing). */
FERRITE_EXPORT void ferrite_model_free(ferrite_model* model) FERRITE_NOEXCEPT;

/* Facts of a model; a NULL model gives 0 (or "" for text). */
FERRITE_EXPORT int32_t ferrite_model_n_vocab(const ferrite_model* model) FERRITE_NOEXCEPT;
FERRITE_EXPORT int32_t ferrite_model_n_embd(const ferrite_model* model) FERRITE_NOEXCEPT;
FERRITE_EXPORT int32_t ferrite_model_n_layer(const ferrite_model* model) FERRITE_NOEXCEPT;
FERRITE_EXPORT int32_t ferrite_model_n_ctx_train(const ferrite_model* model) FERRITE_NOEXCEPT;
FERRITE_EXPORT const char* ferrite_model_architecture(const ferrite_model* model) FERRITE_NOEXCEPT;

/* ------------------------------------------------------------- tokenizer */

/* Special tokens; -1 when the model has none (or model is NULL). */
FERRITE_EXPORT int32_t ferrite_token_bos(const ferrite_model* model) FERRITE_NOEXCEPT;
FERRITE_EXPORT int32_t ferrite_token_eos(const ferrite_model* model) FERRITE_NOEXCEPT;
FERRITE_EXPORT int32_t ferrite_token_eot(const ferrite_model* model) FERRITE_NOEXCEPT;
/* 1 when the token ends a generation (EOS, EOT, ...), else 0. */
FERRITE_EXPORT int ferrite_token_is_eog(const ferrite_model* model, int32_t token) FERRITE_NOEXCEPT;

/* Text (len bytes) to tokens. add_special: BOS/EOS as the model wants them;
 * parse_special: "<s>"-like text becomes its special token. */
FERRITE_EXPORT ferrite_status ferrite_tokenize(const ferrite_model* model, const char* text, size_t len,
                                               int add_special, int parse_special, int32_t* tokens, size_t capacity,
                                               size_t* n_tokens) FERRITE_NOEXCEPT;
/* One token's bytes (special: control tokens give their text; else ""). */
FERRITE_EXPORT ferrite_status ferrite_token_to_piece(const ferrite_model* model, int32_t token, int special, char* buf,
                                                     size_t capacity, size_t* length) FERRITE_NOEXCEPT;
/* Tokens to text, as a whole (a leading word-marker space is dropped the way
 * the tokenizer decodes text). */
FERRITE_EXPORT ferrite_status ferrite_detokenize(const ferrite_model* model, const int32_t* tokens, size_t n_tokens,
                                                 int special, char* buf, size_t capacity,
                                                 size_t* length) FERRITE_NOEXCEPT;

/* --------------------------------------------------------------- context */

typedef struct ferrite_context ferrite_context;

typedef struct ferrite_context_params {
  int64_t n_ctx;      /* KV cells; 0: the model's training context, at most 4096 */
  int64_t n_batch;    /* tokens per forward pass (longer batches are split); default 512 */
  int32_t n_threads;  /* 0: every logical CPU */
  int32_t embeddings; /* 1: decode keeps final hidden states instead of logits (encoders always do) */
} ferrite_context_params;

FERRITE_EXPORT ferrite_context_params ferrite_context_default_params(void) FERRITE_NOEXCEPT;
/* The context keeps the model alive. params NULL: the defaults. */
FERRITE_EXPORT ferrite_status ferrite_context_new(ferrite_model* model, const ferrite_context_params* params,
                                                  ferrite_context** out) FERRITE_NOEXCEPT;
FERRITE_EXPORT void ferrite_context_free(ferrite_context* ctx) FERRITE_NOEXCEPT;
FERRITE_EXPORT int64_t ferrite_context_n_ctx(const ferrite_context* ctx) FERRITE_NOEXCEPT;

/* A batch of tokens. pos NULL: each token follows its sequence's last
 * position; seq_id NULL: all in sequence 0; logits NULL: only the last token's
 * row is an output, else logits[i] != 0 makes token i's row an output. */
typedef struct ferrite_batch {
  int32_t n_tokens;
  const int32_t* tokens;
  const int32_t* pos;
  const int32_t* seq_id;
  const int8_t* logits;
} ferrite_batch;

/* Evaluates a batch. FERRITE_ERR_CONTEXT_FULL when the cache has fewer free
 * cells than n_tokens; FERRITE_ERR_INVALID_ARGUMENT for bad tokens,
 * positions or sequences. On failure the cache is as before the call. */
FERRITE_EXPORT ferrite_status ferrite_decode(ferrite_context* ctx, const ferrite_batch* batch) FERRITE_NOEXCEPT;
/* Encoder-decoders (t5; ferrite_context_has_encoder), llama.cpp's
 * llama_encode: runs the encoder over tokens[0, n_tokens) (one pass, at most
 * n_batch tokens) and keeps its output for sequence seq_id, which the
 * decoder's cross-attention of that sequence then reads; ferrite_decode
 * refuses a sequence without one. Decoding starts from
 * ferrite_decoder_start_token. FERRITE_ERR_INVALID_ARGUMENT for other
 * models, bad tokens or sequence. */
FERRITE_EXPORT ferrite_status ferrite_encode(ferrite_context* ctx, const int32_t* tokens, int32_t n_tokens,
                                             int32_t seq_id) FERRITE_NOEXCEPT;
/* 1 for an encoder-decoder model's context, else 0. */
FERRITE_EXPORT int32_t ferrite_context_has_encoder(const ferrite_context* ctx) FERRITE_NOEXCEPT;
/* The decoder's first token (the file's decoder_start_token_id, else BOS;
 * -1 when neither). */
FERRITE_EXPORT int32_t ferrite_decoder_start_token(const ferrite_context* ctx) FERRITE_NOEXCEPT;
/* Output rows of the last decode (in batch order). */
FERRITE_EXPORT int32_t ferrite_n_outputs(const ferrite_context* ctx) FERRITE_NOEXCEPT;
/* The logits of output row i ([n_vocab] floats), valid until the next
 * decode; i = -1: the last row. */
FERRITE_EXPORT ferrite_status ferrite_get_logits(ferrite_context* ctx, int32_t i,
                                                 const float** logits) FERRITE_NOEXCEPT;
/* Embeddings mode: the hidden state of output row i ([n_embd]), or the
 * pooled embedding of a sequence of the last decode (models that pool). A
 * reranker (its file says pooling_type 4, rank, and holds a classification
 * head) gives one float per sequence, its relevance score, as llama.cpp's
 * llama_get_embeddings_seq does for rank pooling; it keeps no token states. */
FERRITE_EXPORT ferrite_status ferrite_get_embeddings(ferrite_context* ctx, int32_t i,
                                                     const float** embd) FERRITE_NOEXCEPT;
FERRITE_EXPORT ferrite_status ferrite_get_embeddings_seq(ferrite_context* ctx, int32_t seq_id,
                                                         const float** embd) FERRITE_NOEXCEPT;

/* -------------------------------------------------------------- KV cache */

/* Removes positions [p0, p1) of a sequence (p1 < 0: to the end; seq_id < 0:
 * every sequence). */
FERRITE_EXPORT ferrite_status ferrite_kv_seq_rm(ferrite_context* ctx, int32_t seq_id, int32_t p0,
                                                int32_t p1) FERRITE_NOEXCEPT;
/* dst shares every cell of src (no recomputation). */
FERRITE_EXPORT ferrite_status ferrite_kv_seq_cp(ferrite_context* ctx, int32_t src, int32_t dst) FERRITE_NOEXCEPT;
/* Positions [p0, p1) of seq_id move by delta, their keys re-rotated (the
 * context shift); cells that would go below 0 are removed. */
FERRITE_EXPORT ferrite_status ferrite_kv_seq_add(ferrite_context* ctx, int32_t seq_id, int32_t p0, int32_t p1,
                                                 int32_t delta) FERRITE_NOEXCEPT;
/* The highest position of a sequence, -1 when empty (or on error). */
FERRITE_EXPORT int32_t ferrite_kv_seq_pos_max(const ferrite_context* ctx, int32_t seq_id) FERRITE_NOEXCEPT;
FERRITE_EXPORT void ferrite_kv_clear(ferrite_context* ctx) FERRITE_NOEXCEPT;

/* Saving one sequence (its cells and the caller's tokens of it) and restoring
 * it into a context of the same model. Loading replaces the sequence and
 * returns the saved tokens; on failure the sequence is empty. */
FERRITE_EXPORT ferrite_status ferrite_state_seq_save_file(ferrite_context* ctx, int32_t seq_id, const char* path,
                                                          const int32_t* tokens, size_t n_tokens) FERRITE_NOEXCEPT;
FERRITE_EXPORT ferrite_status ferrite_state_seq_load_file(ferrite_context* ctx, int32_t seq_id, const char* path,
                                                          int32_t* tokens, size_t capacity,
                                                          size_t* n_tokens) FERRITE_NOEXCEPT;
FERRITE_EXPORT ferrite_status ferrite_state_seq_save_buffer(ferrite_context* ctx, int32_t seq_id, const int32_t* tokens,
                                                            size_t n_tokens, void* buf, size_t capacity,
                                                            size_t* length) FERRITE_NOEXCEPT;
FERRITE_EXPORT ferrite_status ferrite_state_seq_load_buffer(ferrite_context* ctx, int32_t seq_id, const void* buf,
                                                            size_t length, int32_t* tokens, size_t capacity,
                                                            size_t* n_tokens) FERRITE_NOEXCEPT;

/* -------------------------------------------------------------- sampling */

/* Sampler settings: every parameter of ferrite's sampler table (the CLI's,
 * the server's and Python's), by its server name, with llama.cpp's defaults:
 * "temperature", "top_k", "top_p", "min_p", "typical_p", "repeat_penalty",
 * "repeat_last_n", "frequency_penalty", "presence_penalty", "mirostat",
 * "mirostat_tau", "mirostat_eta", "seed", "samplers", "dry_multiplier", ...
 * ferrite_sampler_param_name(i) lists them all. Plus a GBNF grammar and, for
 * ferrite_generate, stop strings. */
typedef struct ferrite_sampler_params ferrite_sampler_params;

FERRITE_EXPORT ferrite_sampler_params* ferrite_sampler_params_new(void) FERRITE_NOEXCEPT;
FERRITE_EXPORT void ferrite_sampler_params_free(ferrite_sampler_params* params) FERRITE_NOEXCEPT;
/* The number of parameters and the name / help text of the i-th (NULL past the end). */
FERRITE_EXPORT size_t ferrite_sampler_param_count(void) FERRITE_NOEXCEPT;
FERRITE_EXPORT const char* ferrite_sampler_param_name(size_t i) FERRITE_NOEXCEPT;
FERRITE_EXPORT const char* ferrite_sampler_param_help(size_t i) FERRITE_NOEXCEPT;
/* Sets a parameter from text as the command line writes it ("0.5", "40",
 * "-1", "top_k;temperature", "15043+1"), checking its range. */
FERRITE_EXPORT ferrite_status ferrite_sampler_params_set(ferrite_sampler_params* params, const char* name,
                                                         const char* value) FERRITE_NOEXCEPT;
/* Sets a numeric (or boolean: 0/1) parameter. */
FERRITE_EXPORT ferrite_status ferrite_sampler_params_set_number(ferrite_sampler_params* params, const char* name,
                                                                double value) FERRITE_NOEXCEPT;
/* The current value as text. */
FERRITE_EXPORT ferrite_status ferrite_sampler_params_get(const ferrite_sampler_params* params, const char* name,
                                                         char* buf, size_t capacity, size_t* length) FERRITE_NOEXCEPT;
/* A GBNF grammar the output must follow (NULL or "": none); checked when a
 * sampler is made. */
FERRITE_EXPORT ferrite_status ferrite_sampler_params_set_grammar(ferrite_sampler_params* params,
                                                                 const char* gbnf) FERRITE_NOEXCEPT;
/* A stop string for ferrite_generate (cut from the text). */
FERRITE_EXPORT ferrite_status ferrite_sampler_params_add_stop(ferrite_sampler_params* params,
                                                              const char* stop) FERRITE_NOEXCEPT;

typedef struct ferrite_sampler ferrite_sampler;

/* A sampler chain for a model: logit bias, the stages in the "samplers"
 * order (penalties, DRY, top-k, typical, top-p, min-p, XTC, temperature)
 * then the draw, or mirostat; the grammar first. n_ctx resolves windows of
 * -1 (0: the model's training context). */
FERRITE_EXPORT ferrite_status ferrite_sampler_new(const ferrite_model* model, const ferrite_sampler_params* params,
                                                  int64_t n_ctx, ferrite_sampler** out) FERRITE_NOEXCEPT;
FERRITE_EXPORT void ferrite_sampler_free(ferrite_sampler* sampler) FERRITE_NOEXCEPT;
/* Records a token (a prompt's, or one chosen elsewhere): penalties and DRY
 * see it; the grammar advances only with advance_grammar. */
FERRITE_EXPORT ferrite_status ferrite_sampler_accept(ferrite_sampler* sampler, int32_t token,
                                                     int advance_grammar) FERRITE_NOEXCEPT;
/* Chooses the next token from output row i of ctx's last decode (-1: the
 * last row) and records it. */
FERRITE_EXPORT ferrite_status ferrite_sampler_sample(ferrite_sampler* sampler, ferrite_context* ctx, int32_t i,
                                                     int32_t* token) FERRITE_NOEXCEPT;
/* The same from caller-provided logits ([n_vocab]). */
FERRITE_EXPORT ferrite_status ferrite_sampler_sample_logits(ferrite_sampler* sampler, const float* logits,
                                                            size_t n_logits, int32_t* token) FERRITE_NOEXCEPT;
/* Forgets the history, the grammar's state and restarts the random streams. */
FERRITE_EXPORT ferrite_status ferrite_sampler_reset(ferrite_sampler* sampler) FERRITE_NOEXCEPT;

/* ------------------------------------------------------------ generation */

typedef enum ferrite_finish {
  FERRITE_FINISH_NONE = 0,
  FERRITE_FINISH_EOG = 1,        /* the model ended its text */
  FERRITE_FINISH_STOP = 2,       /* a stop string appeared */
  FERRITE_FINISH_GRAMMAR = 3,    /* the grammar admits nothing more */
  FERRITE_FINISH_LENGTH = 4,     /* n_predict tokens were generated */
  FERRITE_FINISH_CONTEXT = 5,    /* the sequence filled the context */
  FERRITE_FINISH_INTERRUPTED = 6 /* the text callback returned non-zero */
} ferrite_finish;

/* Receives generated text as it becomes final (whole UTF-8 characters, stop
 * strings cut). Return 0 to go on, non-zero to stop (FERRITE_FINISH_INTERRUPTED). */
typedef int (*ferrite_text_fn)(const char* text, size_t len, void* user_data);

typedef struct ferrite_generation_result {
  int32_t finish;      /* a ferrite_finish */
  int64_t n_prompt;    /* prompt tokens */
  int64_t n_generated; /* tokens generated */
} ferrite_generation_result;

/* The engine's token loop (the one ferrite run, the server and Python use):
 * clears sequence seq_id (even when it then fails), evaluates the prompt,
 * then samples with params
 * (NULL: the defaults), streaming text to on_text (may be NULL), until
 * n_predict tokens (< 0: no limit), the end of text, a stop string, the
 * grammar's end or a full sequence. result may be NULL. */
FERRITE_EXPORT ferrite_status ferrite_generate(ferrite_context* ctx, int32_t seq_id, const int32_t* prompt,
                                               size_t n_prompt, const ferrite_sampler_params* params, int64_t n_predict,
                                               ferrite_text_fn on_text, void* user_data,
                                               ferrite_generation_result* result) FERRITE_NOEXCEPT;

/* ------------------------------------------------------------------ chat */

typedef struct ferrite_chat_message {
  const char* role; /* "system", "user", "assistant", "tool" */
  const char* content;
} ferrite_chat_message;

/* Renders messages with a chat template (Jinja, sandboxed): tmpl NULL or "":
 * the model's own (tokenizer.chat_template), else chatml; otherwise a
 * built-in name (chatml, llama2, llama3, mistral, gemma, phi3, zephyr,
 * vicuna) or a file. add_generation_prompt: end with the assistant's turn
 * opening. */
FERRITE_EXPORT ferrite_status ferrite_chat_apply_template(const ferrite_model* model, const char* tmpl,
                                                          const ferrite_chat_message* messages, size_t n_messages,
                                                          int add_generation_prompt, char* buf, size_t capacity,
                                                          size_t* length) FERRITE_NOEXCEPT;

#ifdef __cplusplus
}
#endif

#endif /* FERRITE_H */
