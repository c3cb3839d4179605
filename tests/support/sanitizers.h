// FERRITE_TEST_ASAN / FERRITE_TEST_TSAN: 1 in a build under AddressSanitizer /
// ThreadSanitizer, from either compiler (gcc defines __SANITIZE_ADDRESS__,
// clang answers __has_feature). Tests that measure resident memory skip that
// check there: the sanitizers keep freed blocks and shadow memory resident.
#pragma once

#if defined(__SANITIZE_ADDRESS__)
#define FERRITE_TEST_ASAN 1
#endif
#if defined(__SANITIZE_THREAD__)
#define FERRITE_TEST_TSAN 1
#endif
#if defined(__has_feature)
#if __has_feature(address_sanitizer) && !defined(FERRITE_TEST_ASAN)
#define FERRITE_TEST_ASAN 1
#endif
#if __has_feature(thread_sanitizer) && !defined(FERRITE_TEST_TSAN)
#define FERRITE_TEST_TSAN 1
#endif
#endif
#ifndef FERRITE_TEST_ASAN
#define FERRITE_TEST_ASAN 0
#endif
#ifndef FERRITE_TEST_TSAN
#define FERRITE_TEST_TSAN 0
#endif
