/*
 * test_promtext.c - the Prometheus text format writer (server/promtext.c)
 * that /metrics goes through: HELP and TYPE lines, label values escaped
 * (backslash, double quote, newline) so a tenant's name cannot end its
 * label or start a sample, histogram buckets cumulative with +Inf equal
 * to _count, values written as the format reads them.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "promtext.h"

/* What fn wrote, as a string (freed by the caller). */
#define CAPTURE(out, body)                              \
  do {                                                  \
    size_t n_ = 0;                                      \
    FILE *f = open_memstream(&(out), &n_);              \
    body;                                               \
    fclose(f);                                          \
  } while (0)

static void family_lines(void) {
  char *s = NULL;
  CAPTURE(s, bw_prom_family(f, "burrow_x_total", "counter", "Calls\\made\nby tools."));
  CHECK(!strcmp(s, "# HELP burrow_x_total Calls\\\\made\\nby tools.\n# TYPE burrow_x_total counter\n"),
        "HELP escapes \\ and newline, TYPE follows: got %s", s);
  free(s);
}

static void escaping(void) {
  char *s = NULL;
  bw_prom_label l[] = {{"tenant", "a\"b\\c\nd} 1\nevil 2"}, {"tool", "read_file"}};
  CAPTURE(s, bw_prom_sample(f, "burrow_x_total", l, 2, 3));
  CHECK(!strcmp(s, "burrow_x_total{tenant=\"a\\\"b\\\\c\\nd} 1\\nevil 2\",tool=\"read_file\"} 3\n"),
        "a label value's quote, backslash and newline escaped: got %s", s);
  CHECK(strchr(s, '\n') == s + strlen(s) - 1, "one line, whatever the value holds");
  free(s);
  /* a NULL value leaves its label out; none left: no braces */
  bw_prom_label none[] = {{"code", NULL}};
  CAPTURE(s, bw_prom_sample(f, "burrow_y", none, 1, 0));
  CHECK(!strcmp(s, "burrow_y 0\n"), "no labels, no braces: got %s", s);
  free(s);
  bw_prom_label some[] = {{"outcome", "ok"}, {"code", NULL}};
  CAPTURE(s, bw_prom_sample(f, "burrow_y", some, 2, 7));
  CHECK(!strcmp(s, "burrow_y{outcome=\"ok\"} 7\n"), "a NULL label left out: got %s", s);
  free(s);
}

static void values(void) {
  char *s = NULL;
  CAPTURE(s, { bw_prom_sample(f, "a", NULL, 0, 12345678901.0); bw_prom_sample(f, "b", NULL, 0, 0.25);
               bw_prom_sample(f, "c", NULL, 0, INFINITY); bw_prom_sample(f, "d", NULL, 0, NAN);
               bw_prom_sample(f, "e", NULL, 0, -2); });
  CHECK(!strcmp(s, "a 12345678901\nb 0.25\nc +Inf\nd NaN\ne -2\n"), "counts whole, others exact, Inf/NaN spelt: got %s", s);
  free(s);
}

static void histogram(void) {
  char *s = NULL;
  const double bounds[] = {0.001, 0.01, 1};
  const uint64_t counts[] = {2, 0, 5, 1}; /* the last: above 1 s */
  bw_prom_label l[] = {{"tenant", "t"}, {"tool", "grep"}};
  CAPTURE(s, bw_prom_histogram(f, "burrow_d_seconds", l, 2, bounds, 3, counts, 4.5));
  const char *want =
      "burrow_d_seconds_bucket{tenant=\"t\",tool=\"grep\",le=\"0.001\"} 2\n"
      "burrow_d_seconds_bucket{tenant=\"t\",tool=\"grep\",le=\"0.01\"} 2\n"
      "burrow_d_seconds_bucket{tenant=\"t\",tool=\"grep\",le=\"1\"} 7\n"
      "burrow_d_seconds_bucket{tenant=\"t\",tool=\"grep\",le=\"+Inf\"} 8\n"
      "burrow_d_seconds_sum{tenant=\"t\",tool=\"grep\"} 4.5\n"
      "burrow_d_seconds_count{tenant=\"t\",tool=\"grep\"} 8\n";
  CHECK(!strcmp(s, want), "buckets cumulative, +Inf = _count, then _sum and _count: got\n%s", s);
  free(s);
}

int main(void) {
  family_lines();
  escaping();
  values();
  histogram();
  printf("%d passed, %d failed\n", passed, failed);
  return failed != 0;
}
