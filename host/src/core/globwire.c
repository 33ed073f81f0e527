/*
 * globwire.c - glob's entries written straight as a reply: the `entries`
 * array as JSON text (the bytes the encoder, ljson.c, writes for the
 * table form: keys sorted, the same escaping, the same numbers and mtime
 * form) and the rendered list (one path a line, a directory with a "/"),
 * escaped as the inside of a JSON string. max_result_bytes cuts where
 * glob.lua cuts the tables: a path costs its length + 1, the first entry
 * is always kept.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core.h"
#include "search.h"

static const char *type_name(char t) {
  return t == 'f' ? "file" : t == 'd' ? "dir" : t == 'l' ? "symlink" : "other";
}

/* "2024-05-01T12:00:00Z" as lsearch.c's push_time writes it; *last
 * caches the second last formatted (many files share one) */
static size_t fmt_time(const struct timespec *t, time_t *last, char *buf) {
  if (*last != t->tv_sec || !buf[0]) {
    struct tm tm;
    time_t s = t->tv_sec;
    gmtime_r(&s, &tm);
    if (!strftime(buf, 40, "%Y-%m-%dT%H:%M:%SZ", &tm)) buf[0] = '\0';
    *last = t->tv_sec;
  }
  return strlen(buf);
}

static int put_entry(bw_obuf *js, const bw_gitem *it, const char *ep, size_t en,
                     const char *when, size_t wl) {
  const char *tn = type_name(it->type);
  size_t tl = strlen(tn);
  if (bw_obuf_reserve(js, en + wl + tl + 80)) return BW_ENOMEM;
  BW_OB_LIT(js, "{\"mtime\":\"");
  bw_obuf_put(js, when, wl);
  BW_OB_LIT(js, "\",\"path\":\"");
  bw_obuf_put(js, ep, en);
  BW_OB_LIT(js, "\",\"size\":");
  bw_obuf_int(js, it->size);
  BW_OB_LIT(js, ",\"type\":\"");
  bw_obuf_put(js, tn, tl);
  BW_OB_LIT(js, "\"}");
  return 0;
}

int bw_glob_wire(const bw_glob_res *r, const char *prefix, size_t max_bytes,
                 int want_text, bw_glob_wire_out *w) {
  memset(w, 0, sizeof *w);
  bw_obuf js = {0}, tx = {0}, full = {0}, ep = {0};
  size_t pl = strlen(prefix), used = 0, i, raw = 0;
  char when[40] = "";
  time_t last = 0;
  int rc = bw_obuf_reserve(&js, r->n * (pl + 96) + 2);
  if (!rc && want_text) rc = bw_obuf_reserve(&tx, r->n * (pl + 48) + 1);
  if (!rc) BW_OB_LIT(&js, "[");
  for (i = 0; !rc && i < r->n; i++) {
    const bw_gitem *it = r->items[i];
    size_t l = strlen(it->item.path);
    used += pl + l + 1;
    if (used > max_bytes && i > 0) {
      w->cut = 1;
      break;
    }
    full.n = ep.n = 0;
    if ((rc = bw_obuf_reserve(&full, pl + l + 2))) break;
    bw_obuf_put(&full, prefix, pl);
    bw_obuf_put(&full, it->item.path, l);
    if ((rc = bw_obuf_escape(&ep, full.p, full.n))) break;
    if (i > 0) {
      if ((rc = bw_obuf_reserve(&js, 1))) break;
      BW_OB_LIT(&js, ",");
    }
    rc = put_entry(&js, it, ep.p, ep.n, when, fmt_time(&it->mtime, &last, when));
    if (!rc && want_text) {
      rc = bw_obuf_reserve(&tx, ep.n + 3);
      if (!rc) {
        if (i > 0) BW_OB_LIT(&tx, "\\n");
        bw_obuf_put(&tx, ep.p, ep.n);
        if (it->type == 'd') BW_OB_LIT(&tx, "/");
        raw += (i > 0) + full.n + (it->type == 'd');
      }
    }
  }
  if (!rc) rc = bw_obuf_reserve(&js, 1);
  free(full.p);
  free(ep.p);
  if (rc) {
    free(js.p);
    free(tx.p);
    return rc;
  }
  BW_OB_LIT(&js, "]");
  w->json = js.p;
  w->json_len = js.n;
  w->text = tx.p;
  w->text_len = tx.n;
  w->text_raw = raw;
  w->n = i;
  return BW_OK;
}

void bw_glob_wire_free(bw_glob_wire_out *w) {
  free(w->json);
  free(w->text);
  memset(w, 0, sizeof *w);
}
