/*
 * err.c - burrow's stable error codes, their names, and the per-thread
 * detail text that explains the last failure.
 */
#include <errno.h>

#include "core.h"

static const char *const names[BW_CODE_COUNT] = {
    [BW_OK] = "OK",
    [BW_ENOENT] = "ENOENT",
    [BW_EEXIST] = "EEXIST",
    [BW_ENOTDIR] = "ENOTDIR",
    [BW_EISDIR] = "EISDIR",
    [BW_ELOOP] = "ELOOP",
    [BW_EACCES] = "EACCES",
    [BW_EAGAIN] = "EAGAIN",
    [BW_EIO] = "EIO",
    [BW_OUTSIDE_ROOT] = "OUTSIDE_ROOT",
    [BW_READ_ONLY_ROOT] = "READ_ONLY_ROOT",
    [BW_POLICY_DENIED] = "POLICY_DENIED",
    [BW_TOO_LARGE] = "TOO_LARGE",
    [BW_BINARY] = "BINARY",
    [BW_INVALID_ARGUMENT] = "INVALID_ARGUMENT",
    [BW_NOT_REGULAR] = "NOT_REGULAR",
    [BW_HASH_MISMATCH] = "HASH_MISMATCH",
    [BW_ENOMEM] = "EIO", /* docs/tools.md's codes have no ENOMEM: out of memory is EIO */
    [BW_NOT_FOUND_TEXT] = "NOT_FOUND_TEXT",
    [BW_AMBIGUOUS_TEXT] = "AMBIGUOUS_TEXT",
    [BW_OVERLAPPING_EDITS] = "OVERLAPPING_EDITS",
    [BW_STORE_UNAVAILABLE] = "STORE_UNAVAILABLE",
};

static __thread const char *detail;
static __thread int subject, subject_index;
static __thread const char *reason;

const char *bw_code_name(int code) {
  if (code < 0 || code >= BW_CODE_COUNT) return "EIO";
  return names[code];
}

const char *bw_detail(void) { return detail; }

void bw_clear_detail(void) {
  detail = reason = NULL;
  subject = BW_ON_NONE;
}

int bw_fail(int code, const char *d) {
  detail = d;
  reason = NULL;
  subject = BW_ON_NONE;
  return code;
}

int bw_fail_on(int code, int on, int index, const char *d) {
  detail = d;
  reason = NULL;
  subject = on;
  subject_index = index;
  return code;
}

int bw_fail_reason(int code, const char *r) {
  reason = r;
  return code;
}

const char *bw_fail_why(void) { return reason; }

void bw_err_save(bw_err_saved *s) {
  s->detail = detail;
  s->reason = reason;
  s->on = subject;
  s->index = subject_index;
}

int bw_err_restore(int code, const bw_err_saved *s) {
  detail = s->detail;
  reason = s->reason;
  subject = s->on;
  subject_index = s->index;
  return code;
}

int bw_fail_subject(int *index) {
  if (index) *index = subject_index;
  return subject;
}

const char *bw_on_name(int on) {
  static const char *const n[] = {NULL, "pattern", "include", "exclude", "time", "root", "size", "sync", "cursor"};
  return on > 0 && on < (int)(sizeof n / sizeof *n) ? n[on] : NULL;
}

int bw_code_from_errno(int err) {
  detail = reason = NULL; /* a detail of an earlier step must not stick to this code */
  subject = BW_ON_NONE;
  switch (err) {
  case 0: return BW_OK;
  case ENOENT: return BW_ENOENT;
  case EEXIST: case ENOTEMPTY: return BW_EEXIST;
  case ENOTDIR: return BW_ENOTDIR;
  case EISDIR: return BW_EISDIR;
  case ELOOP: return BW_ELOOP;
  case EXDEV: return BW_OUTSIDE_ROOT;
  case EACCES: case EPERM: return BW_EACCES;
  case EAGAIN: return BW_EAGAIN;
  case EROFS: return BW_READ_ONLY_ROOT;
  case ENAMETOOLONG: return bw_fail(BW_INVALID_ARGUMENT, "name too long");
  case EFBIG: return BW_TOO_LARGE;
  case ENOMEM: return bw_fail(BW_ENOMEM, "out of memory");
  case ENXIO: case ENODEV: return BW_NOT_REGULAR;
  /* EIO still (the codes are docs/tools.md's), but a full disk is worth saying */
  case ENOSPC: return bw_fail(BW_EIO, "no space left on the device");
  case EDQUOT: return bw_fail(BW_EIO, "disk quota exceeded");
  default: return BW_EIO;
  }
}
