/*
 * edits.h - what the edit engine's two C tests share (test_edit.c, on
 * strings; test_mutate.c, on files beneath a root): one edit (ed), the
 * exact matching options, and a string check that a NULL fails. Included
 * after check.h.
 */
#ifndef BURROW_TEST_EDITS_H
#define BURROW_TEST_EDITS_H

#include <string.h>

#include "edit.h"


static const bw_edit_opts EXACT = {.context = 3, .max_diff = 1 << 20};

static bw_edit ed(const char *old, const char *neu) {
  return (bw_edit){old, strlen(old), neu, strlen(neu), 0, 0, 0, 0};
}

static int eq(const char *got, const char *want) {
  return got && !strcmp(got, want);
}

#endif
