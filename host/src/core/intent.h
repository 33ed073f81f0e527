/*
 * intent.h - an intent record's format (stage.h has the API): what
 * intent.c writes and recover.c reads.
 */
#ifndef BW_INTENT_H
#define BW_INTENT_H

#include <string.h>

#include "stage.h"

#define RECORD BW_STAGE_PREFIX "i."
#define TEMP BW_STAGE_PREFIX "t."
#define JOURNAL BW_STAGE_PREFIX "j"
#define GONE BW_STAGE_PREFIX "g." /* an 'n' removal's src */

enum { NAMES_MAX = sizeof ((bw_intent_rec *)0)->names / sizeof (const char *) };
enum { MAGIC_LEN = 4, STATE_AT = 4, HEAD_LEN = 7, RECORD_MAX = 65536, POINTER_MAX = BW_PATH_MAX + 64 };

static inline int starts(const char *s, const char *prefix) {
  return !strncmp(s, prefix, strlen(prefix));
}

#endif
