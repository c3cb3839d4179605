/* Generates text with ferrite's C API.
 *
 *   generate MODEL.gguf [PROMPT] [N_TOKENS] [TEMPERATURE]
 *
 * Build against an installed ferrite:
 *   cc generate.c $(pkg-config --cflags --libs ferrite) -o generate
 * or with CMake: find_package(ferrite) and ferrite::ferrite (CMakeLists.txt). */
#include <ferrite.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int print_text(const char* text, size_t len, void* user_data) {
  (void)user_data;
  fwrite(text, 1, len, stdout);
  fflush(stdout);
  return 0; /* non-zero would stop the generation */
}

static int fail(const char* what, ferrite_status status) {
  fprintf(stderr, "generate: %s: %s (%s)\n", what, ferrite_last_error(), ferrite_status_name(status));
  return 1;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s MODEL.gguf [PROMPT] [N_TOKENS] [TEMPERATURE]\n", argv[0]);
    return 2;
  }
  const char* prompt = argc > 2 ? argv[2] : "";
  const long n_predict = argc > 3 ? strtol(argv[3], NULL, 10) : 64;
  const char* temperature = argc > 4 ? argv[4] : "0";
  if (ferrite_api_version() / 1000 != FERRITE_API_VERSION_MAJOR) {
    fprintf(stderr, "generate: built for API %d, the library has %d\n", FERRITE_API_VERSION, ferrite_api_version());
    return 1;
  }

  ferrite_model* model = NULL;
  ferrite_context* ctx = NULL;
  ferrite_sampler_params* sampling = NULL;
  int32_t* tokens = NULL;
  size_t n_tokens = 0;
  int rc = 1;
  ferrite_status s = ferrite_model_load(argv[1], NULL, &model);
  if (s != FERRITE_OK) return fail("loading the model", s);

  ferrite_context_params cp = ferrite_context_default_params();
  cp.n_ctx = 512;
  if ((s = ferrite_context_new(model, &cp, &ctx)) != FERRITE_OK) {
    rc = fail("creating a context", s);
    goto done;
  }

  /* Ask for the size first, then tokenize (BOS added as the model wants). */
  s = ferrite_tokenize(model, prompt, strlen(prompt), 1, 0, NULL, 0, &n_tokens);
  if (s != FERRITE_OK && s != FERRITE_ERR_BUFFER_TOO_SMALL) {
    rc = fail("tokenizing", s);
    goto done;
  }
  tokens = malloc((n_tokens + 1) * sizeof *tokens);
  if (tokens == NULL ||
      (s = ferrite_tokenize(model, prompt, strlen(prompt), 1, 0, tokens, n_tokens, &n_tokens)) != FERRITE_OK) {
    rc = tokens ? fail("tokenizing", s) : 1;
    goto done;
  }

  sampling = ferrite_sampler_params_new();
  if (sampling == NULL || (s = ferrite_sampler_params_set(sampling, "temperature", temperature)) != FERRITE_OK) {
    rc = sampling ? fail("--temperature", s) : 1;
    goto done;
  }

  fputs(prompt, stdout);
  ferrite_generation_result result;
  s = ferrite_generate(ctx, 0, tokens, n_tokens, sampling, n_predict, print_text, NULL, &result);
  if (s != FERRITE_OK) {
    rc = fail("generating", s);
    goto done;
  }
  fprintf(stderr, "\n[%lld prompt tokens, %lld generated]\n", (long long)result.n_prompt,
          (long long)result.n_generated);
  rc = 0;

done:
  ferrite_sampler_params_free(sampling);
  free(tokens);
  ferrite_context_free(ctx);
  ferrite_model_free(model);
  return rc;
}
