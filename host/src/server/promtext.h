/*
 * promtext.h - the Prometheus text exposition format (version 0.0.4), the
 * one place /metrics becomes bytes (httpmetrics.c): a family's # HELP and
 * # TYPE lines, samples with their labels escaped, a histogram's
 * cumulative buckets, _sum and _count. Plain C over a FILE (an
 * open_memstream in the listener, any stream in the tests).
 */
#ifndef BURROW_PROMTEXT_H
#define BURROW_PROMTEXT_H

#include <stdint.h>
#include <stdio.h>

/* A label of a sample: value NULL ends the list early (no such label). */
typedef struct bw_prom_label {
  const char *name, *value;
} bw_prom_label;

/* "# HELP name help" (\ and newline escaped) and "# TYPE name type":
 * once per family, before its samples. */
void bw_prom_family(FILE *f, const char *name, const char *type, const char *help);
/* A label value as the format wants it: \ " and newline escaped. */
void bw_prom_escape(FILE *f, const char *value);
/* "name{a="x",b="y"} value": n labels (a NULL value is left out; none
 * left: no braces); an integral value is written as one, else %.17g. */
void bw_prom_sample(FILE *f, const char *name, const bw_prom_label *labels, int n, double value);

/* A histogram's series: nb upper bounds (ascending, +Inf implied) and
 * counts[nb + 1] of the observations that fell in each (the last: above
 * every bound), written cumulative as name_bucket{...,le="b"}, then
 * name_sum and name_count. */
void bw_prom_histogram(FILE *f, const char *name, const bw_prom_label *labels, int n,
                       const double *bounds, int nb, const uint64_t *counts, double sum);

#endif
