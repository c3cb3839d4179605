/* Checks of the C API written in C (capi_checks.c): NULL when a check passes,
 * else what failed. */
#ifndef FERRITE_TESTS_CAPI_CHECKS_H
#define FERRITE_TESTS_CAPI_CHECKS_H

#ifdef __cplusplus
extern "C" {
#endif

const char* capi_check_greedy(const char* model_path, const char* golden);
const char* capi_check_threads(const char* model_path, const char* golden);
const char* capi_check_kv(const char* model_path, const char* state_path);
const char* capi_check_sampling(const char* model_path);
const char* capi_check_embeddings(const char* model_path);
const char* capi_check_errors(const char* model_path, const char* not_a_model, const char* missing_path);

#ifdef __cplusplus
}
#endif

#endif
