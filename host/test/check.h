/*
 * check.h - the C tests' one assertion: CHECK(cond, printf-args) counts a
 * pass or prints the failure with its line; each test ends with
 * printf("%d passed, %d failed\n", passed, failed), the line the test
 * driver reads.
 */
#ifndef BURROW_TEST_CHECK_H
#define BURROW_TEST_CHECK_H

#include <stdio.h>

static int passed, failed;

#define CHECK(cond, ...)                                                    \
  do {                                                                      \
    if (cond) passed++;                                                     \
    else {                                                                  \
      failed++;                                                             \
      printf("FAIL %s:%d: ", __FILE__, __LINE__);                           \
      printf(__VA_ARGS__);                                                  \
      printf("\n");                                                         \
    }                                                                       \
  } while (0)

#endif
