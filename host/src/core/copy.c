/*
 * copy.c - bw_copy: a file through the durable write (mutate.c's
 * bw_copy_file), a tree through the stager (stage.c) with nothing to judge
 * it. Above both, so the stager, which copies a single file through
 * mutate.c, and mutate.c never call each other.
 */
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "stage.h"

int bw_copy(const bw_root *rs, const char *src, const bw_root *rd,
            const char *dst, const bw_copy_opts *o, bw_copy_res *res) {
  if (!o->recursive) return bw_copy_file(rs, src, rd, dst, o, res);
  memset(res, 0, sizeof *res);
  if (rd->readonly) return bw_fail(BW_READ_ONLY_ROOT, NULL);
  struct stat st;
  int fd, rc = bw_resolve(rs, src, 0, &fd, &st); /* in-root links are followed */
  if (rc) return rc;
  close(fd);
  if (!S_ISDIR(st.st_mode)) return bw_copy_file(rs, src, rd, dst, o, res);
  bw_stage s;
  bw_stage_init(&s, o->overwrite, o->max_bytes, SIZE_MAX, o->stop);
  rc = bw_stage_copy(rs, src, rd, dst, 1, &s);
  if (!rc) rc = bw_stage_commit(&s);
  res->files = s.files;
  res->dirs = s.dirs;
  res->links = s.links;
  res->skipped = s.skipped;
  res->bytes = s.bytes;
  bw_err_saved e;
  bw_err_save(&e);
  bw_stage_free(&s);
  if (rc) bw_err_restore(rc, &e);
  return rc;
}
