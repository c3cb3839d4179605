/* The C API exercised from C (compiled as C11): each check returns NULL when
 * it passes, else a message saying what failed. capi_test.cpp runs them
 * under GoogleTest with the shared test data's paths. */
#include "capi_checks.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ferrite.h"

static _Thread_local char g_message[1024];

static const char* failed(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(g_message, sizeof g_message, fmt, ap);
  va_end(ap);
  return g_message;
}

#define CHECK(cond, ...)   \
  do {                     \
    if (!(cond)) {         \
      failed(__VA_ARGS__); \
      goto fail;           \
    }                      \
  } while (0)

/* A call that must succeed. */
#define OK(call)                                                                                               \
  do {                                                                                                         \
    ferrite_status s_ = (call);                                                                                \
    if (s_ != FERRITE_OK) {                                                                                    \
      failed("%s:%d: %s -> %s: %s", __FILE__, __LINE__, #call, ferrite_status_name(s_), ferrite_last_error()); \
      goto fail;                                                                                               \
    }                                                                                                          \
  } while (0)

/* A call that must fail with `want` and leave a message. */
#define FAILS(want, call)                                                                           \
  do {                                                                                              \
    ferrite_status s_ = (call);                                                                     \
    if (s_ != (want)) {                                                                             \
      failed("%s:%d: %s -> %s (%s), wanted %s", __FILE__, __LINE__, #call, ferrite_status_name(s_), \
             ferrite_last_error(), ferrite_status_name(want));                                      \
      goto fail;                                                                                    \
    }                                                                                               \
    if (ferrite_last_error()[0] == '\0') {                                                          \
      failed("%s:%d: %s failed without a message", __FILE__, __LINE__, #call);                      \
      goto fail;                                                                                    \
    }                                                                                               \
  } while (0)

static ferrite_model* load(const char* path) {
  ferrite_model* m = NULL;
  if (ferrite_model_load(path, NULL, &m) != FERRITE_OK) return NULL;
  return m;
}

static ferrite_context* context(ferrite_model* m, int64_t n_ctx) {
  ferrite_context_params cp = ferrite_context_default_params();
  cp.n_ctx = n_ctx;
  cp.n_threads = 2;
  ferrite_context* c = NULL;
  if (ferrite_context_new(m, &cp, &c) != FERRITE_OK) return NULL;
  return c;
}

static double max_abs(const float* a, int n) {
  double m = 0;
  for (int i = 0; i < n; ++i) m = fmax(m, fabs((double)a[i]));
  return m;
}

static double max_diff(const float* a, const float* b, int n) {
  double m = 0;
  for (int i = 0; i < n; ++i) m = fmax(m, fabs((double)a[i] - (double)b[i]));
  return m;
}

/* ----------------------------------------------------------- generation */

struct text_sink {
  char buf[4096];
  size_t len;
};

static int collect(const char* text, size_t len, void* user) {
  struct text_sink* s = (struct text_sink*)user;
  if (s->len + len >= sizeof s->buf) return 1;
  memcpy(s->buf + s->len, text, len);
  s->len += len;
  s->buf[s->len] = '\0';
  return 0;
}

/* Greedy decoding from BOS through decode + sampler, token by token. */
static const char* greedy_by_hand(ferrite_model* m, ferrite_context* c, int n, char* out, size_t cap) {
  int32_t tokens[512];
  int n_tokens = 0;
  ferrite_sampler_params* sp = ferrite_sampler_params_new();
  ferrite_sampler* smp = NULL;
  int32_t tok = ferrite_token_bos(m);
  size_t len = 0;
  CHECK(sp != NULL, "no sampler params");
  OK(ferrite_sampler_params_set_number(sp, "temperature", 0.0));
  OK(ferrite_sampler_new(m, sp, 0, &smp));
  CHECK(tok >= 0, "stories260K has a BOS token");
  tokens[n_tokens++] = tok;
  for (int i = 0; i < n; ++i) {
    ferrite_batch b = {1, &tok, NULL, NULL, NULL};
    OK(ferrite_decode(c, &b));
    OK(ferrite_sampler_sample(smp, c, -1, &tok));
    if (ferrite_token_is_eog(m, tok)) break;
    tokens[n_tokens++] = tok;
  }
  /* Without the BOS: the text as the document starts. */
  OK(ferrite_detokenize(m, tokens + 1, (size_t)(n_tokens - 1), 0, out, cap, &len));
  ferrite_sampler_free(smp);
  ferrite_sampler_params_free(sp);
  return NULL;
fail:
  ferrite_sampler_free(smp);
  ferrite_sampler_params_free(sp);
  return g_message;
}

const char* capi_check_greedy(const char* model_path, const char* golden) {
  ferrite_model* m = NULL;
  ferrite_context* c = NULL;
  ferrite_sampler_params* sp = NULL;
  static char by_hand[4096];
  struct text_sink sink = {{0}, 0};
  ferrite_generation_result r;
  const char* err;
  int32_t bos;
  CHECK(ferrite_api_version() == FERRITE_API_VERSION, "library API %d, header %d", ferrite_api_version(),
        FERRITE_API_VERSION);
  CHECK(strlen(ferrite_version()) > 0, "no version text");
  OK(ferrite_model_load(model_path, NULL, &m));
  CHECK(ferrite_model_n_vocab(m) == 512, "n_vocab %d", ferrite_model_n_vocab(m));
  CHECK(ferrite_model_n_embd(m) == 64, "n_embd %d", ferrite_model_n_embd(m));
  CHECK(ferrite_model_n_layer(m) == 5, "n_layer %d", ferrite_model_n_layer(m));
  CHECK(strcmp(ferrite_model_architecture(m), "llama") == 0, "architecture %s", ferrite_model_architecture(m));
  c = context(m, 256);
  CHECK(c != NULL, "context: %s", ferrite_last_error());
  CHECK(ferrite_context_n_ctx(c) == 256, "n_ctx %lld", (long long)ferrite_context_n_ctx(c));

  err = greedy_by_hand(m, c, 120, by_hand, sizeof by_hand);
  if (err) goto fail;
  CHECK(strlen(by_hand) > 300, "only %zu bytes generated by hand", strlen(by_hand));
  CHECK(strncmp(golden, by_hand, strlen(by_hand)) == 0, "decode+sampler text differs from the golden:\n%s", by_hand);

  /* The engine's token loop, from the same BOS, on another sequence. */
  sp = ferrite_sampler_params_new();
  OK(ferrite_sampler_params_set(sp, "temperature", "0"));
  bos = ferrite_token_bos(m);
  OK(ferrite_generate(c, 1, &bos, 1, sp, 120, collect, &sink, &r));
  CHECK(r.finish == FERRITE_FINISH_LENGTH, "finish %d", r.finish);
  CHECK(r.n_prompt == 1 && r.n_generated == 120, "counts %lld %lld", (long long)r.n_prompt, (long long)r.n_generated);
  CHECK(strcmp(sink.buf, by_hand) == 0, "ferrite_generate text differs from decode+sampler:\n%s", sink.buf);

  ferrite_sampler_params_free(sp);
  ferrite_context_free(c);
  ferrite_model_free(m);
  return NULL;
fail:
  ferrite_sampler_params_free(sp);
  ferrite_context_free(c);
  ferrite_model_free(m);
  return g_message;
}

/* ------------------------------------------------------------- threads */

struct thread_job {
  ferrite_model* model;
  char text[4096];
  const char* error;
};

static void* generate_in_thread(void* arg) {
  struct thread_job* job = (struct thread_job*)arg;
  ferrite_context* c = context(job->model, 128);
  ferrite_sampler_params* sp = ferrite_sampler_params_new();
  struct text_sink sink = {{0}, 0};
  int32_t bos = ferrite_token_bos(job->model);
  job->error = NULL;
  if (c == NULL || sp == NULL || ferrite_sampler_params_set_number(sp, "temperature", 0) != FERRITE_OK ||
      ferrite_generate(c, 0, &bos, 1, sp, 80, collect, &sink, NULL) != FERRITE_OK) {
    job->error = "generation failed in a thread";
  }
  memcpy(job->text, sink.buf, sink.len + 1);
  ferrite_sampler_params_free(sp);
  ferrite_context_free(c);
  return NULL;
}

/* A failing call on another thread leaves this thread's message alone. */
static void* fail_in_thread(void* arg) {
  (void)arg;
  ferrite_tokenize(NULL, "x", 1, 0, 0, NULL, 0, NULL);
  return NULL;
}

const char* capi_check_threads(const char* model_path, const char* golden) {
  ferrite_model* m = load(model_path);
  struct thread_job jobs[3];
  pthread_t th[3];
  CHECK(m != NULL, "load: %s", ferrite_last_error());
  for (int i = 0; i < 3; ++i) {
    jobs[i].model = m;
    CHECK(pthread_create(&th[i], NULL, generate_in_thread, &jobs[i]) == 0, "pthread_create");
  }
  for (int i = 0; i < 3; ++i) pthread_join(th[i], NULL);
  for (int i = 0; i < 3; ++i) {
    CHECK(jobs[i].error == NULL, "thread %d: %s", i, jobs[i].error);
    CHECK(strlen(jobs[i].text) > 150, "thread %d: short text", i);
    CHECK(strncmp(golden, jobs[i].text, strlen(jobs[i].text)) == 0, "thread %d text differs: %s", i, jobs[i].text);
  }

  FAILS(FERRITE_ERR_INVALID_ARGUMENT, ferrite_context_new(NULL, NULL, NULL));
  {
    char mine[256];
    snprintf(mine, sizeof mine, "%s", ferrite_last_error());
    CHECK(pthread_create(&th[0], NULL, fail_in_thread, NULL) == 0, "pthread_create");
    pthread_join(th[0], NULL);
    CHECK(strcmp(mine, ferrite_last_error()) == 0, "another thread's failure changed this thread's message");
  }
  ferrite_model_free(m);
  return NULL;
fail:
  ferrite_model_free(m);
  return g_message;
}

/* ------------------------------------------------------------- KV cache */

#define NV 512

/* Evaluates tokens[0..n) of `seq` at positions pos0.. and copies the last row's logits. */
static ferrite_status eval_at(ferrite_context* c, const int32_t* tokens, int n, int32_t seq, int32_t pos0,
                              float* logits) {
  int32_t pos[256], seqs[256];
  const float* row = NULL;
  ferrite_batch b = {n, tokens, pos, seqs, NULL};
  ferrite_status s;
  for (int i = 0; i < n; ++i) {
    pos[i] = pos0 + i;
    seqs[i] = seq;
  }
  s = ferrite_decode(c, &b);
  if (s != FERRITE_OK) return s;
  s = ferrite_get_logits(c, -1, &row);
  if (s != FERRITE_OK) return s;
  memcpy(logits, row, NV * sizeof(float));
  return FERRITE_OK;
}

const char* capi_check_kv(const char* model_path, const char* state_path) {
  ferrite_model* m = load(model_path);
  ferrite_context *a = NULL, *b = NULL;
  static const char prompt[] = "Once upon a time, there was a little girl named Lily. She loved to play";
  int32_t tokens[64], back[64];
  size_t n = 0, n_back = 0, size = 0;
  float want[NV], got[NV], full_last[NV];
  const int32_t next = 300; /* any token: the continuation compared */
  void* state = NULL;
  CHECK(m != NULL, "load: %s", ferrite_last_error());
  OK(ferrite_tokenize(m, prompt, strlen(prompt), 1, 0, tokens, 64, &n));
  CHECK(n > 12 && n < 64, "%zu prompt tokens", n);
  CHECK(ferrite_model_n_vocab(m) == NV, "n_vocab");
  a = context(m, 128);
  b = context(m, 128);
  CHECK(a && b, "context: %s", ferrite_last_error());

  /* Remove: dropping the tail and evaluating it again gives the same logits. */
  OK(eval_at(a, tokens, (int)n, 0, 0, full_last));
  CHECK(ferrite_kv_seq_pos_max(a, 0) == (int32_t)n - 1, "pos_max %d", ferrite_kv_seq_pos_max(a, 0));
  OK(ferrite_kv_seq_rm(a, 0, 8, -1));
  CHECK(ferrite_kv_seq_pos_max(a, 0) == 7, "pos_max after rm %d", ferrite_kv_seq_pos_max(a, 0));
  OK(eval_at(a, tokens + 8, (int)n - 8, 0, 8, got));
  CHECK(max_diff(got, full_last, NV) <= 1e-5 * max_abs(full_last, NV), "rm + re-evaluate: max diff %g",
        max_diff(got, full_last, NV));

  /* One batch, two sequences interleaved (5 and 6), each row an output:
   * every sequence's last row is the prompt's last logits; the rows come
   * back in batch order. */
  {
    int32_t bt[128], bp[128], bs[128];
    int8_t bl[128];
    const float* row = NULL;
    for (size_t i = 0; i < n; ++i) {
      for (int k = 0; k < 2; ++k) {
        const size_t j = 2 * i + (size_t)k;
        bt[j] = tokens[i];
        bp[j] = (int32_t)i;
        bs[j] = 5 + k;
        bl[j] = (int8_t)(i + 1 == n || i == 0);
      }
    }
    {
      ferrite_batch two = {(int32_t)(2 * n), bt, bp, bs, bl};
      OK(ferrite_decode(b, &two));
    }
    CHECK(ferrite_n_outputs(b) == 4, "outputs %d", ferrite_n_outputs(b));
    for (int k = 2; k < 4; ++k) {
      OK(ferrite_get_logits(b, k, &row));
      CHECK(max_diff(row, full_last, NV) <= 1e-4 * max_abs(full_last, NV), "two-sequence batch row %d: max diff %g", k,
            max_diff(row, full_last, NV));
    }
    OK(ferrite_get_logits(b, 0, &row));
    CHECK(max_diff(row, full_last, NV) > 1e-2 * max_abs(full_last, NV), "row 0 is the first token's, not the last's");
    ferrite_kv_clear(b);
  }

  /* Reference: the prompt then `next`, in a fresh cache. */
  OK(eval_at(b, tokens, (int)n, 0, 0, want));
  OK(eval_at(b, &next, 1, 0, (int32_t)n, want));

  /* Copy: sequence 1 shares sequence 0's cells; its continuation is the same. */
  OK(ferrite_kv_seq_cp(a, 0, 1));
  CHECK(ferrite_kv_seq_pos_max(a, 1) == (int32_t)n - 1, "copied pos_max %d", ferrite_kv_seq_pos_max(a, 1));
  OK(eval_at(a, &next, 1, 1, (int32_t)n, got));
  CHECK(max_diff(got, want, NV) <= 1e-5 * max_abs(want, NV), "seq_cp continuation: max diff %g",
        max_diff(got, want, NV));

  /* Save / load through a file and a buffer, into another context. */
  OK(ferrite_state_seq_save_file(a, 0, state_path, tokens, n));
  FAILS(FERRITE_ERR_BUFFER_TOO_SMALL, ferrite_state_seq_save_buffer(a, 0, tokens, n, NULL, 0, &size));
  CHECK(size > 1000, "state of %zu bytes", size);
  state = malloc(size);
  OK(ferrite_state_seq_save_buffer(a, 0, tokens, n, state, size, &size));
  ferrite_kv_clear(b);
  OK(ferrite_state_seq_load_file(b, 3, state_path, back, 64, &n_back));
  CHECK(n_back == n && memcmp(back, tokens, n * sizeof(int32_t)) == 0, "file state tokens differ");
  OK(eval_at(b, &next, 1, 3, (int32_t)n, got));
  CHECK(max_diff(got, want, NV) <= 1e-5 * max_abs(want, NV), "file state continuation: max diff %g",
        max_diff(got, want, NV));
  OK(ferrite_state_seq_load_buffer(b, 4, state, size, back, 64, &n_back));
  CHECK(n_back == n, "buffer state: %zu tokens", n_back);
  OK(eval_at(b, &next, 1, 4, (int32_t)n, got));
  CHECK(max_diff(got, want, NV) <= 1e-5 * max_abs(want, NV), "buffer state continuation: max diff %g",
        max_diff(got, want, NV));

  /* Shift: the prompt evaluated at positions 5.. then moved down by 5 (keys
   * re-rotated) = the prompt evaluated from position 0, within the f16
   * cache's rounding (2e-3 of the logit scale, as tests/runtime). */
  ferrite_kv_clear(a);
  OK(eval_at(a, tokens, (int)n, 0, 5, got));
  OK(ferrite_kv_seq_add(a, 0, 0, -1, -5));
  CHECK(ferrite_kv_seq_pos_max(a, 0) == (int32_t)n - 1, "shifted pos_max %d", ferrite_kv_seq_pos_max(a, 0));
  OK(eval_at(a, &next, 1, 0, (int32_t)n, got));
  CHECK(max_diff(got, want, NV) <= 2e-3 * max_abs(want, NV), "shifted continuation: max diff %g, scale %g",
        max_diff(got, want, NV), max_abs(want, NV));
  /* ...and the comparison can fail: a shift that moved positions without
   * turning the keys would leave every distance off by 5, and distances off
   * by 5 (the next token at n + 5) are far off. */
  ferrite_kv_clear(a);
  OK(eval_at(a, tokens, (int)n, 0, 0, got));
  OK(eval_at(a, &next, 1, 0, (int32_t)n + 5, got));
  CHECK(max_diff(got, want, NV) > 10 * 2e-3 * max_abs(want, NV), "the shift comparison cannot tell: %g",
        max_diff(got, want, NV));

  free(state);
  ferrite_context_free(a);
  ferrite_context_free(b);
  ferrite_model_free(m);
  return NULL;
fail:
  free(state);
  ferrite_context_free(a);
  ferrite_context_free(b);
  ferrite_model_free(m);
  return g_message;
}

/* --------------------------------------------------- sampler, chat, embd */

const char* capi_check_sampling(const char* model_path) {
  ferrite_model* m = load(model_path);
  ferrite_context* c = NULL;
  ferrite_sampler_params* sp = ferrite_sampler_params_new();
  ferrite_sampler *s1 = NULL, *s2 = NULL;
  char text[256];
  size_t len = 0, i;
  int found_mirostat = 0;
  int32_t bos, t1, t2;
  struct text_sink sink = {{0}, 0};
  ferrite_generation_result r;
  CHECK(m != NULL, "load: %s", ferrite_last_error());
  c = context(m, 128);
  CHECK(c != NULL, "context");
  bos = ferrite_token_bos(m);

  /* Every parameter of the table is named; values round-trip. */
  for (i = 0; i < ferrite_sampler_param_count(); ++i) {
    CHECK(ferrite_sampler_param_name(i) && ferrite_sampler_param_help(i), "param %zu unnamed", i);
    if (strcmp(ferrite_sampler_param_name(i), "mirostat") == 0) found_mirostat = 1;
  }
  CHECK(found_mirostat && ferrite_sampler_param_name(i) == NULL, "the parameter list");
  OK(ferrite_sampler_params_set(sp, "top_k", "20"));
  OK(ferrite_sampler_params_get(sp, "top_k", text, sizeof text, &len));
  CHECK(strcmp(text, "20") == 0 && len == 2, "top_k reads back as %s", text);
  OK(ferrite_sampler_params_set_number(sp, "top_p", 0.9));
  OK(ferrite_sampler_params_set_number(sp, "min_p", 0.1));
  OK(ferrite_sampler_params_set_number(sp, "typical_p", 0.95));
  OK(ferrite_sampler_params_set_number(sp, "repeat_penalty", 1.1));
  OK(ferrite_sampler_params_set_number(sp, "presence_penalty", 0.5));
  OK(ferrite_sampler_params_set_number(sp, "temperature", 0.9));
  OK(ferrite_sampler_params_set_number(sp, "seed", 1234));
  FAILS(FERRITE_ERR_INVALID_ARGUMENT, ferrite_sampler_params_set_number(sp, "top_p", 1.5));
  FAILS(FERRITE_ERR_INVALID_ARGUMENT, ferrite_sampler_params_set(sp, "top_k", "many"));
  FAILS(FERRITE_ERR_INVALID_ARGUMENT, ferrite_sampler_params_set(sp, "no_such_sampler", "1"));
  FAILS(FERRITE_ERR_INVALID_ARGUMENT, ferrite_sampler_params_set(sp, "samplers", "top_k;bogus"));

  /* A seed gives the same draws; a chain with mirostat too. */
  for (int pass = 0; pass < 2; ++pass) {
    ferrite_batch b = {1, &bos, NULL, NULL, NULL};
    if (pass == 1) OK(ferrite_sampler_params_set(sp, "mirostat", "2"));
    OK(ferrite_sampler_new(m, sp, 0, &s1));
    OK(ferrite_sampler_new(m, sp, 0, &s2));
    ferrite_kv_clear(c);
    OK(ferrite_decode(c, &b));
    for (int k = 0; k < 20; ++k) {
      OK(ferrite_sampler_sample(s1, c, -1, &t1));
      OK(ferrite_sampler_sample(s2, c, -1, &t2));
      CHECK(t1 == t2, "same seed, different tokens (pass %d)", pass);
      b.tokens = &t1;
      OK(ferrite_decode(c, &b));
    }
    OK(ferrite_sampler_reset(s1));
    ferrite_sampler_free(s1);
    ferrite_sampler_free(s2);
    s1 = s2 = NULL;
  }

  /* A grammar constrains ferrite_generate's output and ends it. */
  ferrite_sampler_params_free(sp);
  sp = ferrite_sampler_params_new();
  OK(ferrite_sampler_params_set_grammar(sp, "root ::= \"Once\" \" upon\" | \"Twice\""));
  OK(ferrite_generate(c, 0, &bos, 1, sp, 50, collect, &sink, &r));
  CHECK(strcmp(sink.buf, "Once upon") == 0 || strcmp(sink.buf, "Twice") == 0, "grammar output '%s'", sink.buf);
  CHECK(r.finish == FERRITE_FINISH_GRAMMAR, "grammar finish %d", r.finish);
  OK(ferrite_sampler_params_set_grammar(sp, "root ::= (("));
  FAILS(FERRITE_ERR_INVALID_ARGUMENT, ferrite_sampler_new(m, sp, 0, &s1));
  CHECK(s1 == NULL, "a failed sampler_new leaves *out NULL");

  /* Stop strings and the callback's stop. */
  ferrite_sampler_params_free(sp);
  sp = ferrite_sampler_params_new();
  OK(ferrite_sampler_params_set_number(sp, "temperature", 0));
  OK(ferrite_sampler_params_add_stop(sp, "Lily"));
  sink.len = 0;
  sink.buf[0] = '\0';
  OK(ferrite_generate(c, 0, &bos, 1, sp, 100, collect, &sink, &r));
  CHECK(r.finish == FERRITE_FINISH_STOP, "stop finish %d", r.finish);
  CHECK(strcmp(sink.buf, "Once upon a time, there was a little girl named ") == 0, "stopped text '%s'", sink.buf);

  /* Chat templates: ChatML's documented layout. */
  {
    const ferrite_chat_message msgs[2] = {{"system", "Be brief."}, {"user", "Hi"}};
    const char* want =
        "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n";
    char out[512];
    OK(ferrite_chat_apply_template(m, "chatml", msgs, 2, 1, out, sizeof out, &len));
    CHECK(strcmp(out, want) == 0 && len == strlen(want), "chatml rendered as '%s'", out);
    FAILS(FERRITE_ERR_BUFFER_TOO_SMALL, ferrite_chat_apply_template(m, "chatml", msgs, 2, 1, out, 10, &len));
    CHECK(len == strlen(want), "needed length %zu", len);
    FAILS(FERRITE_ERR_INVALID_ARGUMENT,
          ferrite_chat_apply_template(m, "no-such-template", msgs, 2, 1, out, sizeof out, &len));
  }

  ferrite_sampler_params_free(sp);
  ferrite_context_free(c);
  ferrite_model_free(m);
  return NULL;
fail:
  ferrite_sampler_free(s1);
  ferrite_sampler_free(s2);
  ferrite_sampler_params_free(sp);
  ferrite_context_free(c);
  ferrite_model_free(m);
  return g_message;
}

const char* capi_check_embeddings(const char* model_path) {
  ferrite_model* m = load(model_path);
  ferrite_context* c = NULL;
  ferrite_context_params cp = ferrite_context_default_params();
  const float* e = NULL;
  const float* l = NULL;
  int32_t tokens[16];
  size_t n = 0;
  CHECK(m != NULL, "load");
  cp.n_ctx = 64;
  cp.n_threads = 2;
  cp.embeddings = 1;
  OK(ferrite_context_new(m, &cp, &c));
  OK(ferrite_tokenize(m, "Once upon a time", 16, 1, 0, tokens, 16, &n));
  {
    ferrite_batch b = {(int32_t)n, tokens, NULL, NULL, NULL};
    OK(ferrite_decode(c, &b));
  }
  CHECK(ferrite_n_outputs(c) == 1, "outputs %d", ferrite_n_outputs(c));
  OK(ferrite_get_embeddings(c, 0, &e));
  CHECK(e != NULL && max_abs(e, ferrite_model_n_embd(m)) > 0 && isfinite(max_abs(e, ferrite_model_n_embd(m))),
        "embedding values");
  FAILS(FERRITE_ERR_INVALID_ARGUMENT, ferrite_get_logits(c, 0, &l));
  CHECK(l == NULL, "logits pointer set on failure");
  FAILS(FERRITE_ERR_INVALID_ARGUMENT, ferrite_get_embeddings(c, 5, &e));
  ferrite_context_free(c);
  ferrite_model_free(m);
  return NULL;
fail:
  ferrite_context_free(c);
  ferrite_model_free(m);
  return g_message;
}

/* ---------------------------------------------------------- error paths */

static int cancel_at_start(uint64_t done, uint64_t total, void* user) {
  (void)done;
  (void)total;
  ++*(int*)user;
  return 1;
}

static int count_progress(uint64_t done, uint64_t total, void* user) {
  uint64_t* last = (uint64_t*)user;
  if (done < last[0] || done > total) last[1] = 1; /* out of order */
  last[0] = done;
  last[2] = total;
  return 0;
}

const char* capi_check_errors(const char* model_path, const char* not_a_model, const char* missing_path) {
  ferrite_model* m = NULL;
  ferrite_model* m2 = (ferrite_model*)1; /* must be reset to NULL on failure */
  ferrite_context* c = NULL;
  ferrite_context* c2 = NULL;
  ferrite_sampler* s = NULL;
  ferrite_sampler_params* sp = NULL;
  ferrite_model_params mp = ferrite_model_default_params();
  int32_t tokens[64];
  int32_t bad = 512, neg = -1;
  size_t n = 0, len = 0;
  char buf[64];
  const float* logits = NULL;
  int calls = 0;
  uint64_t progress[3] = {0, 0, 0};

  /* Loading. */
  FAILS(FERRITE_ERR_IO, ferrite_model_load(missing_path, NULL, &m2));
  CHECK(m2 == NULL, "*out not NULL after a failed load");
  CHECK(strstr(ferrite_last_error(), missing_path) != NULL, "the message names the file: %s", ferrite_last_error());
  FAILS(FERRITE_ERR_FORMAT, ferrite_model_load(not_a_model, NULL, &m2));
  FAILS(FERRITE_ERR_INVALID_ARGUMENT, ferrite_model_load(NULL, NULL, &m2));
  FAILS(FERRITE_ERR_INVALID_ARGUMENT, ferrite_model_load(model_path, NULL, NULL));
  mp.progress = cancel_at_start;
  mp.progress_user_data = &calls;
  FAILS(FERRITE_ERR_CANCELLED, ferrite_model_load(model_path, &mp, &m2));
  CHECK(calls == 1 && m2 == NULL, "cancel: %d calls", calls);
  mp.progress = count_progress;
  mp.progress_user_data = progress;
  mp.use_mmap = 0;
  OK(ferrite_model_load(model_path, &mp, &m));
  CHECK(progress[1] == 0 && progress[2] > 0 && progress[0] == progress[2], "progress %llu/%llu (order %llu)",
        (unsigned long long)progress[0], (unsigned long long)progress[2], (unsigned long long)progress[1]);
  mp = ferrite_model_default_params();
  mp.n_gpu_layers = -2;
  FAILS(FERRITE_ERR_INVALID_ARGUMENT, ferrite_model_load(model_path, &mp, &m2));

  /* NULL handles: every kind of entry point. */
  FAILS(FERRITE_ERR_INVALID_ARGUMENT, ferrite_context_new(NULL, NULL, &c2));
  FAILS(FERRITE_ERR_INVALID_ARGUMENT, ferrite_tokenize(NULL, "a", 1, 0, 0, tokens, 64, &n));
  FAILS(FERRITE_ERR_INVALID_ARGUMENT, ferrite_tokenize(m, "a", 1, 0, 0, tokens, 64, NULL));
  FAILS(FERRITE_ERR_INVALID_ARGUMENT, ferrite_tokenize(m, NULL, 3, 0, 0, tokens, 64, &n));
  FAILS(FERRITE_ERR_INVALID_ARGUMENT, ferrite_token_to_piece(NULL, 1, 0, buf, sizeof buf, &len));
  FAILS(FERRITE_ERR_INVALID_ARGUMENT, ferrite_detokenize(NULL, tokens, 1, 0, buf, sizeof buf, &len));
  FAILS(FERRITE_ERR_INVALID_ARGUMENT, ferrite_decode(NULL, NULL));
  FAILS(FERRITE_ERR_INVALID_ARGUMENT, ferrite_get_logits(NULL, 0, &logits));
  FAILS(FERRITE_ERR_INVALID_ARGUMENT, ferrite_get_embeddings(NULL, 0, &logits));
  FAILS(FERRITE_ERR_INVALID_ARGUMENT, ferrite_kv_seq_rm(NULL, 0, 0, -1));
  FAILS(FERRITE_ERR_INVALID_ARGUMENT, ferrite_kv_seq_cp(NULL, 0, 1));
  FAILS(FERRITE_ERR_INVALID_ARGUMENT, ferrite_kv_seq_add(NULL, 0, 0, -1, 1));
  FAILS(FERRITE_ERR_INVALID_ARGUMENT, ferrite_state_seq_save_file(NULL, 0, "x", NULL, 0));
  FAILS(FERRITE_ERR_INVALID_ARGUMENT, ferrite_state_seq_load_buffer(NULL, 0, "x", 1, NULL, 0, &n));
  FAILS(FERRITE_ERR_INVALID_ARGUMENT, ferrite_sampler_new(NULL, NULL, 0, &s));
  FAILS(FERRITE_ERR_INVALID_ARGUMENT, ferrite_sampler_sample(NULL, NULL, 0, tokens));
  FAILS(FERRITE_ERR_INVALID_ARGUMENT, ferrite_sampler_accept(NULL, 1, 0));
  FAILS(FERRITE_ERR_INVALID_ARGUMENT, ferrite_sampler_params_set(NULL, "top_k", "1"));
  FAILS(FERRITE_ERR_INVALID_ARGUMENT, ferrite_generate(NULL, 0, tokens, 1, NULL, 1, NULL, NULL, NULL));
  FAILS(FERRITE_ERR_INVALID_ARGUMENT, ferrite_chat_apply_template(NULL, NULL, NULL, 0, 1, buf, sizeof buf, &len));
  CHECK(ferrite_model_n_vocab(NULL) == 0 && ferrite_token_bos(NULL) == -1 && ferrite_kv_seq_pos_max(NULL, 0) == -1,
        "NULL queries");
  ferrite_model_free(NULL);
  ferrite_context_free(NULL);
  ferrite_sampler_free(NULL);
  ferrite_sampler_params_free(NULL);
  ferrite_kv_clear(NULL);

  /* Bad values. */
  {
    ferrite_context_params cp = ferrite_context_default_params();
    cp.n_batch = 0;
    FAILS(FERRITE_ERR_INVALID_ARGUMENT, ferrite_context_new(m, &cp, &c2));
    CHECK(c2 == NULL, "*out not NULL after a failed context_new");
  }
  c = context(m, 16);
  CHECK(c != NULL, "context: %s", ferrite_last_error());
  FAILS(FERRITE_ERR_INVALID_ARGUMENT, ferrite_token_to_piece(m, bad, 0, buf, sizeof buf, &len));
  FAILS(FERRITE_ERR_INVALID_ARGUMENT, ferrite_detokenize(m, &neg, 1, 0, buf, sizeof buf, &len));
  {
    ferrite_batch b = {1, &bad, NULL, NULL, NULL};
    FAILS(FERRITE_ERR_INVALID_ARGUMENT, ferrite_decode(c, &b));
    b.tokens = &neg;
    FAILS(FERRITE_ERR_INVALID_ARGUMENT, ferrite_decode(c, &b));
    b.n_tokens = 0;
    FAILS(FERRITE_ERR_INVALID_ARGUMENT, ferrite_decode(c, &b));
    b.n_tokens = 1;
    b.tokens = tokens;
    tokens[0] = 1;
    b.seq_id = &bad;
    FAILS(FERRITE_ERR_INVALID_ARGUMENT, ferrite_decode(c, &b));
    b.seq_id = NULL;
    b.pos = &neg;
    FAILS(FERRITE_ERR_INVALID_ARGUMENT, ferrite_decode(c, &b));
  }
  CHECK(ferrite_kv_seq_pos_max(c, 0) == -1, "a failed decode changed the cache");
  FAILS(FERRITE_ERR_INVALID_ARGUMENT, ferrite_get_logits(c, 0, &logits)); /* nothing decoded yet */
  FAILS(FERRITE_ERR_INVALID_ARGUMENT, ferrite_kv_seq_cp(c, 0, 999));

  /* n_ctx overflow: 20 tokens into 16 cells, as a batch and as a prompt. */
  for (int i = 0; i < 20; ++i) tokens[i] = 300 + i;
  {
    ferrite_batch b = {20, tokens, NULL, NULL, NULL};
    FAILS(FERRITE_ERR_CONTEXT_FULL, ferrite_decode(c, &b));
    CHECK(ferrite_kv_seq_pos_max(c, 0) == -1, "a refused batch changed the cache");
    b.n_tokens = 16;
    OK(ferrite_decode(c, &b));
    b.n_tokens = 1;
    FAILS(FERRITE_ERR_CONTEXT_FULL, ferrite_decode(c, &b));
    CHECK(ferrite_kv_seq_pos_max(c, 0) == 15, "full cache pos_max %d", ferrite_kv_seq_pos_max(c, 0));
  }
  FAILS(FERRITE_ERR_CONTEXT_FULL, ferrite_generate(c, 0, tokens, 20, NULL, 4, NULL, NULL, NULL));
  FAILS(FERRITE_ERR_INVALID_ARGUMENT, ferrite_generate(c, 0, &bad, 1, NULL, 4, NULL, NULL, NULL));
  FAILS(FERRITE_ERR_INVALID_ARGUMENT, ferrite_generate(c, 0, tokens, 0, NULL, 4, NULL, NULL, NULL));
  FAILS(FERRITE_ERR_INVALID_ARGUMENT, ferrite_generate(c, 256, tokens, 1, NULL, 4, NULL, NULL, NULL));
  {
    /* A generation that fills the sequence ends with FINISH_CONTEXT. */
    ferrite_generation_result r;
    sp = ferrite_sampler_params_new();
    OK(ferrite_sampler_params_set_number(sp, "temperature", 0));
    OK(ferrite_generate(c, 0, tokens, 10, sp, -1, NULL, NULL, &r));
    CHECK(r.finish == FERRITE_FINISH_CONTEXT || r.finish == FERRITE_FINISH_EOG, "finish %d after %lld tokens", r.finish,
          (long long)r.n_generated);
  }

  /* Buffers. */
  FAILS(FERRITE_ERR_BUFFER_TOO_SMALL, ferrite_tokenize(m, "Once upon a time", 16, 1, 0, tokens, 2, &n));
  CHECK(n == 5, "tokens needed: %zu", n);
  FAILS(FERRITE_ERR_BUFFER_TOO_SMALL, ferrite_token_to_piece(m, 300, 0, buf, 1, &len));

  /* States: not a state, and a state of another shape. */
  ferrite_kv_clear(c);
  FAILS(FERRITE_ERR_FORMAT, ferrite_state_seq_load_buffer(c, 0, "not a state at all", 18, tokens, 64, &n));
  FAILS(FERRITE_ERR_IO, ferrite_state_seq_load_file(c, 0, missing_path, tokens, 64, &n));
  FAILS(FERRITE_ERR_FORMAT, ferrite_state_seq_load_file(c, 0, not_a_model, tokens, 64, &n));
  CHECK(ferrite_kv_seq_pos_max(c, 0) == -1, "a failed load left cells");

  /* Sampler misuse. */
  OK(ferrite_sampler_new(m, NULL, 0, &s));
  FAILS(FERRITE_ERR_INVALID_ARGUMENT, ferrite_sampler_accept(s, bad, 0));
  FAILS(FERRITE_ERR_INVALID_ARGUMENT, ferrite_sampler_sample_logits(s, (const float*)tokens, 3, tokens));

  CHECK(strcmp(ferrite_status_name(FERRITE_ERR_CONTEXT_FULL), "context_full") == 0, "status names");
  CHECK(strcmp(ferrite_status_name((ferrite_status)77), "unknown") == 0, "unknown status name");

  ferrite_sampler_free(s);
  ferrite_sampler_params_free(sp);
  ferrite_context_free(c);
  ferrite_model_free(m);
  return NULL;
fail:
  ferrite_sampler_free(s);
  ferrite_sampler_params_free(sp);
  ferrite_context_free(c);
  ferrite_model_free(m);
  return g_message;
}
