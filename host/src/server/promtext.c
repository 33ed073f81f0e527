/*
 * promtext.c - the Prometheus text exposition format (promtext.h). The
 * rules (prometheus.io, "Exposition formats"): in HELP text a backslash
 * and a newline are escaped; in a label value a backslash, a double quote
 * and a newline; each family's HELP and TYPE come once, before its
 * samples; a histogram's buckets are cumulative, le="+Inf" equals _count.
 */
#include "promtext.h"

#include <math.h>

void bw_prom_family(FILE *f, const char *name, const char *type, const char *help) {
  fprintf(f, "# HELP %s ", name);
  for (const char *p = help; *p; p++) {
    if (*p == '\\') fputs("\\\\", f);
    else if (*p == '\n') fputs("\\n", f);
    else fputc(*p, f);
  }
  fprintf(f, "\n# TYPE %s %s\n", name, type);
}

void bw_prom_escape(FILE *f, const char *value) {
  for (const char *p = value; *p; p++) {
    if (*p == '\\') fputs("\\\\", f);
    else if (*p == '"') fputs("\\\"", f);
    else if (*p == '\n') fputs("\\n", f);
    else fputc(*p, f);
  }
}

static void value_out(FILE *f, double v) {
  if (isnan(v)) fputs("NaN", f);
  else if (isinf(v)) fputs(v > 0 ? "+Inf" : "-Inf", f);
  else if (v > -9007199254740992.0 && v < 9007199254740992.0 && v == (double)(int64_t)v)
    fprintf(f, "%lld", (long long)v); /* a count: exact below 2^53 */
  else fprintf(f, "%.17g", v);
}

/* {a="x",...}: the labels with a value, and one more (extra) if given. */
static void labels_out(FILE *f, const bw_prom_label *labels, int n, const bw_prom_label *extra) {
  int any = 0;
  for (int i = 0; i <= n; i++) {
    const bw_prom_label *l = i < n ? &labels[i] : extra;
    if (!l || !l->value) continue;
    fputc(any ? ',' : '{', f);
    any = 1;
    fprintf(f, "%s=\"", l->name);
    bw_prom_escape(f, l->value);
    fputc('"', f);
  }
  if (any) fputc('}', f);
}

static void sample_with(FILE *f, const char *name, const char *suffix, const bw_prom_label *labels,
                        int n, const bw_prom_label *extra, double value) {
  fputs(name, f);
  fputs(suffix, f);
  labels_out(f, labels, n, extra);
  fputc(' ', f);
  value_out(f, value);
  fputc('\n', f);
}

void bw_prom_sample(FILE *f, const char *name, const bw_prom_label *labels, int n, double value) {
  sample_with(f, name, "", labels, n, NULL, value);
}

void bw_prom_histogram(FILE *f, const char *name, const bw_prom_label *labels, int n,
                       const double *bounds, int nb, const uint64_t *counts, double sum) {
  uint64_t cum = 0;
  char le[32];
  for (int i = 0; i <= nb; i++) {
    cum += counts[i];
    if (i < nb) snprintf(le, sizeof le, "%g", bounds[i]);
    bw_prom_label l = {"le", i < nb ? le : "+Inf"};
    sample_with(f, name, "_bucket", labels, n, &l, (double)cum);
  }
  sample_with(f, name, "_sum", labels, n, NULL, sum);
  sample_with(f, name, "_count", labels, n, NULL, (double)cum);
}
