/*
 * test_edit.c - C tests of the edit engine on strings (no Lua): matching
 * levels, line endings, BOM, diagnostics, the diff, insert, and random
 * edits against a plain splice and a patch of the diff (on files beneath
 * a root: test_mutate.c). Prints one line per failed check and closes
 * with "N passed, N failed".
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "edit.h"
#include "stage.h"

#include "check.h"
#include "edits.h"

static const bw_edit_opts LOOSE = {.loose = 1, .context = 3, .max_diff = 1 << 20};

/* Apply one edit; the new text (static) or NULL with *code set. */
static const char *apply(const char *data, bw_edit e, const bw_edit_opts *o,
                         int *code, bw_edit_out *keep) {
  static char buf[8192];
  bw_edit_out out;
  *code = bw_edit_apply(data, strlen(data), &e, 1, o, &out);
  if (keep) *keep = out;
  if (*code) return NULL;
  snprintf(buf, sizeof buf, "%.*s", (int)out.len, out.text);
  if (!keep) bw_edit_out_free(&out);
  return buf;
}

static void test_exact(void) {
  int rc;
  const char *r = apply("a\nb\nc\n", ed("b\n", "B\n"), &EXACT, &rc, NULL);
  CHECK(eq(r, "a\nB\nc\n"), "plain replace: %s", r);
  r = apply("one\r\ntwo\r\nthree\r\n", ed("one\ntwo\n", "1\n2\n2b\n"), &EXACT, &rc, NULL);
  CHECK(eq(r, "1\r\n2\r\n2b\r\nthree\r\n"), "LF old_text in a CRLF file stays CRLF: %s", r);
  r = apply("x\r\ny\ny2\r\nz\n", ed("y\ny2", "Y\nY2"), &EXACT, &rc, NULL);
  CHECK(eq(r, "x\r\nY\nY2\r\nz\n"), "mixed: span keeps its majority: %s", r);
  r = apply("a\r\nb\nc\r\n", ed("c", "C\nD"), &EXACT, &rc, NULL);
  CHECK(eq(r, "a\r\nb\nC\r\nD\r\n"), "mixed: new lines take the span's line ending: %s", r);
  r = apply("a\r\nb\nc\r\n", ed("b", "B1\nB2"), &EXACT, &rc, NULL);
  CHECK(eq(r, "a\r\nB1\nB2\nc\r\n"), "mixed: LF line stays LF: %s", r);
  r = apply("\xEF\xBB\xBFhead\nbody\n", ed("\xEF\xBB\xBFhead", "HEAD"), &EXACT, &rc, NULL);
  CHECK(eq(r, "\xEF\xBB\xBFHEAD\nbody\n"), "BOM kept, BOM in old_text ignored: %s", r);
  r = apply("\tif (x) {\n\t\ty();\n\t}\n", ed("\t\ty();", "\t\tz();\n\t\tw();"), &EXACT, &rc, NULL);
  CHECK(eq(r, "\tif (x) {\n\t\tz();\n\t\tw();\n\t}\n"), "tabs kept: %s", r);
  r = apply("caf\xC3\xA9 \xE2\x82\xAC na\xC3\xAFve", ed("\xE2\x82\xAC", "EUR"), &EXACT, &rc, NULL);
  CHECK(eq(r, "caf\xC3\xA9 EUR na\xC3\xAFve"), "multibyte edges: %s", r);
  r = apply("start middle end", ed("start", "S"), &EXACT, &rc, NULL);
  CHECK(eq(r, "S middle end"), "edit at file start: %s", r);
  r = apply("start middle end", ed("end", "E"), &EXACT, &rc, NULL);
  CHECK(eq(r, "start middle E"), "edit at file end, no final newline: %s", r);
  r = apply("a\nb", ed("\nb", ""), &EXACT, &rc, NULL);
  CHECK(eq(r, "a"), "delete the last line: %s", r);
  r = apply("a\r\nb\r\n", ed("\nb", "\nB"), &EXACT, &rc, NULL);
  CHECK(eq(r, "a\r\nB\r\n"), "old_text starting with a newline matches a CRLF whole: %s", r);
  r = apply("a\r\nb\n", ed("\nb", "\nB"), &EXACT, &rc, NULL);
  CHECK(eq(r, "a\r\nB\n"), "mixed: leading newline matches CRLF whole: %s", r);
  r = apply("x y x", ed("", "z"), &EXACT, &rc, NULL);
  CHECK(!r && rc == BW_INVALID_ARGUMENT, "empty old_text refused: %d", rc);
  r = apply("x y x", ed("y", "y"), &EXACT, &rc, NULL);
  CHECK(!r && rc == BW_INVALID_ARGUMENT, "old_text == new_text refused: %d", rc);
}

static void test_counts(void) {
  int rc;
  bw_edit_out out;
  const char *r = apply("x\ny\nx\nz\nx\n", ed("x\n", "X\n"), &EXACT, &rc, &out);
  CHECK(!r && rc == BW_AMBIGUOUS_TEXT && out.diag.matches == 3 &&
            out.diag.nlines == 3 && out.diag.lines[0] == 1 && out.diag.lines[2] == 5,
        "ambiguous lists every line: rc %d n %zu", rc, out.diag.matches);
  r = apply("aaa", ed("aa", "b"), &EXACT, &rc, NULL);
  CHECK(!r && rc == BW_AMBIGUOUS_TEXT, "overlapping places are ambiguous");
  bw_edit e = ed("x", "X");
  e.replace_all = 1;
  r = apply("x\ny\nx\nz\nx\n", e, &EXACT, &rc, NULL);
  CHECK(eq(r, "X\ny\nX\nz\nX\n"), "replace_all: %s", r);
  bw_edit two[2] = {ed("a", "b"), ed("b", "c")};
  const char *d = "a b";
  CHECK(bw_edit_apply(d, strlen(d), two, 2, &EXACT, &out) == BW_OK &&
            out.len == 3 && !memcmp(out.text, "b c", 3),
        "edits match the original, not each other's output");
  bw_edit_out_free(&out);
  bw_edit ov[2] = {ed("hello wor", "X"), ed("world", "Y")};
  d = "hello world";
  CHECK(bw_edit_apply(d, strlen(d), ov, 2, &EXACT, &out) == BW_OVERLAPPING_EDITS &&
            out.diag.edit == 0 && out.diag.other == 1,
        "overlapping edits refused");
  bw_edit adj[2] = {ed("hello ", "X"), ed("world", "Y")};
  CHECK(bw_edit_apply(d, strlen(d), adj, 2, &EXACT, &out) == BW_OK &&
            out.len == 2 && !memcmp(out.text, "XY", 2),
        "adjacent edits are fine");
  bw_edit_out_free(&out);
}

static void test_loose(void) {
  int rc;
  bw_edit_out out;
  const char *file = "def f():\n\tif x:   \n\t\treturn \xE2\x80\x9Cy\xE2\x80\x9D\n";
  const char *r = apply(file, ed("\tif x:\n", "\tif z:\n"), &EXACT, &rc, &out);
  CHECK(!r && rc == BW_NOT_FOUND_TEXT && out.diag.near_level == BW_LEVEL_RSTRIP &&
            out.diag.near_line == 2,
        "exact miss names the looser level: rc %d level %d line %zu", rc,
        out.diag.near_level, out.diag.near_line);
  r = apply(file, ed("\tif x:\n", "\tif z:\n"), &LOOSE, &rc, NULL);
  CHECK(eq(r, "def f():\n\tif z:\n\t\treturn \xE2\x80\x9Cy\xE2\x80\x9D\n"), "rstrip level: %s", r);
  /* a model sending spaces for tabs, and straight quotes */
  r = apply(file, ed("    if x:\n        return \"y\"\n", "    if x:\n        log()\n        return \"y\"\n"),
            &LOOSE, &rc, &out);
  CHECK(eq(r, "def f():\n\tif x:\n\t\tlog()\n\t\treturn \"y\"\n"),
        "unicode level, re-indented with tabs: %s", r);
  CHECK(r && out.diag.edit == 0, "ok");
  bw_edit_out_free(&out);
  bw_edit e = ed("  if x:\n    return \xE2\x80\x9Cy\xE2\x80\x9D", "  if y:\n    return 0");
  const char *d = "class A:\n    def f(self):\n        if x:\n            return \xE2\x80\x9Cy\xE2\x80\x9D\n";
  bw_edit_out o2;
  CHECK(bw_edit_apply(d, strlen(d), &e, 1, &LOOSE, &o2) == BW_OK && e.level == BW_LEVEL_INDENT &&
            o2.len > 0 && strstr(o2.text, "        if y:\n            return 0\n"),
        "indentation level re-indents by the found block: %s", o2.text ? o2.text : "(null)");
  bw_edit_out_free(&o2);
  r = apply("print(\xE2\x80\x98hi\xE2\x80\x99) # x\n", ed("print('hi')", "print('ho')"), &LOOSE, &rc, NULL);
  CHECK(eq(r, "print('ho') # x\n"), "unicode fold inside a line: %s", r);
  r = apply("x\n  b \ny\n\tb\t\n", ed("b\n", "B\n"), &LOOSE, &rc, &out);
  CHECK(!r && rc == BW_AMBIGUOUS_TEXT && out.diag.level == BW_LEVEL_INDENT,
        "a loose level with two places is an error: rc %d", rc);
  r = apply("alpha beta\ngamma\n", ed("alpha bet\ndelta\n", "x"), &EXACT, &rc, &out);
  CHECK(!r && rc == BW_NOT_FOUND_TEXT && out.diag.near_line == 1 &&
            out.diag.diverge_line == 1 && out.diag.differs,
        "nearest line and where the block differs: line %zu diverge %zu", out.diag.near_line,
        out.diag.diverge_line);
  r = apply("zzz\n", ed("completely different", "x"), &EXACT, &rc, &out);
  CHECK(!r && rc == BW_NOT_FOUND_TEXT && out.diag.near_line == 0, "nothing similar");
}

/* The wrong-place edit: an old_text indented less than the file
 * matched exactly inside the deeper indentation, and new_text's other
 * lines kept the shallower one. */
static void test_indent_place(void) {
  int rc;
  bw_edit_out out;
  const char *f = "function main() {\n  if (bad) {\n    process.exitCode = 2;\n    return;\n  }\n}\n";
  bw_edit e = ed("  process.exitCode = 2;\n", "  process.exitCode = 2;\n  log(\"bad\");\n");
  const char *r = apply(f, e, &EXACT, &rc, &out);
  CHECK(!r && rc == BW_NOT_FOUND_TEXT && out.diag.near_level == BW_LEVEL_INDENT &&
            out.diag.near_line == 3,
        "exact: a place inside the indentation is not found (near the indentation level): rc %d", rc);
  r = apply(f, e, &LOOSE, &rc, NULL);
  CHECK(eq(r, "function main() {\n  if (bad) {\n    process.exitCode = 2;\n    log(\"bad\");\n"
              "    return;\n  }\n}\n"),
        "loose: re-indented by the same delta, the added line too: %s", r);
  /* ends inside the next line's indentation */
  r = apply("a {\n    b;\n}\n", ed("{\n  ", "{\n  c;\n  "), &EXACT, &rc, NULL);
  CHECK(!r && rc == BW_NOT_FOUND_TEXT, "an end inside the indentation is not exact: rc %d", rc);
  /* one place in the indentation, one real: the real one is unique */
  r = apply("  x = 1;\n    x = 1;\n", ed("  x = 1;\n", "  x = 2;\n"), &EXACT, &rc, NULL);
  CHECK(eq(r, "  x = 2;\n    x = 1;\n"), "the whole-line place wins: %s", r);
  /* text from the first non-blank character on is still exact */
  r = apply("\t\tfoo();\n", ed("foo();", "bar();"), &EXACT, &rc, NULL);
  CHECK(eq(r, "\t\tbar();\n"), "a fragment after the indentation: %s", r);
  /* indentation itself is what a blank old_text is after */
  bw_edit ra = ed("    ", "\t");
  ra.replace_all = 1;
  r = apply("    a\n        b\n", ra, &EXACT, &rc, NULL);
  CHECK(eq(r, "\ta\n\t\tb\n"), "replace_all of spaces with a tab: %s", r);
  /* one level deeper than the file: the prefix is taken off every line */
  r = apply("\tif (a) {\n\t\tb();\n\t}\n", ed("\t\tif (a) {\n\t\t\tb();\n", "\t\tif (a) {\n\t\t\tb();\n\t\t\tc();\n\t\td();\n"),
            &LOOSE, &rc, NULL);
  CHECK(eq(r, "\tif (a) {\n\t\tb();\n\t\tc();\n\td();\n\t}\n"), "deeper old_text, prefix removed: %s", r);
  /* a new line shallower than what is taken off: refused */
  r = apply("\tif (a) {\n\t\tb();\n\t}\n", ed("\t\tif (a) {\n\t\t\tb();\n", "x();\n\t\tif (a) {\n\t\t\tb();\n"),
            &LOOSE, &rc, &out);
  CHECK(!r && rc == BW_AMBIGUOUS_TEXT && out.diag.reindent_line == 1 && out.diag.lines[0] == 1 &&
            !strcmp(out.diag.near_text, "x();"),
        "a line that cannot be re-indented is refused: rc %d line %zu", rc, out.diag.reindent_line);
  /* indents that change by different amounts, and a new line at neither */
  const char *g = "a:\n    b\n  c\n";
  r = apply(g, ed("a:\n  b\n    c\n", "a:\n  b\n    c\n      d\n"), &LOOSE, &rc, &out);
  CHECK(!r && rc == BW_AMBIGUOUS_TEXT && out.diag.reindent_line == 4 && out.diag.diverge_line == 2 &&
            !strcmp(out.diag.want_text, "  b") && !strcmp(out.diag.have_text, "    b"),
        "no single change: refused with where: rc %d line %zu diverge %zu", rc,
        out.diag.reindent_line, out.diag.diverge_line);
  /* ... but a new line at an indent old_text has takes the file's */
  r = apply(g, ed("a:\n  b\n    c\n", "a:\n  b2\n    c2\n"), &LOOSE, &rc, NULL);
  CHECK(eq(r, "a:\n    b2\n  c2\n"), "known indents map one to one: %s", r);
}

/* Issue 44: a one-line old_text found from after a line's indentation,
 * with new lines after it. Nothing says whether those are in the file's
 * terms or old_text's (then they need the line's indentation): exact
 * places them as written, the loose ladder refuses. */
static void test_after_indent(void) {
  int rc;
  bw_edit_out out;
  const char *f = "class A {\n    /**\n     * Loads.\n     */\n}\n";
  bw_edit e = ed("* Loads.\n", "* Loads.\n * @returns x\n");
  const char *r = apply(f, e, &LOOSE, &rc, &out);
  CHECK(!r && rc == BW_AMBIGUOUS_TEXT && out.diag.after_indent && out.diag.reindent_line == 2 &&
            out.diag.nlines == 1 && out.diag.lines[0] == 3 && out.diag.level == BW_LEVEL_EXACT &&
            !strcmp(out.diag.near_text, " * @returns x") && !strcmp(out.diag.have_text, "     * Loads."),
        "loose: refused, naming the line and new_text's line: rc %d line %zu", rc,
        out.diag.reindent_line);
  r = apply(f, e, &EXACT, &rc, NULL);
  CHECK(eq(r, "class A {\n    /**\n     * Loads.\n * @returns x\n     */\n}\n"),
        "exact places new_text as written: %s", r);
  r = apply(f, ed("* Loads.", "* Loads it."), &LOOSE, &rc, NULL);
  CHECK(eq(r, "class A {\n    /**\n     * Loads it.\n     */\n}\n"), "one line: no guess: %s", r);
  r = apply(f, ed("* Loads.\n     */", "* Loads.\n     * more\n     */"), &LOOSE, &rc, NULL);
  CHECK(eq(r, "class A {\n    /**\n     * Loads.\n     * more\n     */\n}\n"),
        "a second line that matched as the file has it: new_text is in the file's terms: %s", r);
  r = apply("{\n\tx();\n\n}\n", ed("x();\n\n", "x();\ny();\n\n"), &LOOSE, &rc, &out);
  CHECK(!r && rc == BW_AMBIGUOUS_TEXT && out.diag.after_indent, "blank later lines say nothing: rc %d", rc);
  r = apply("x = 1\nif a:\n    b()\n", ed("x = 1\n", "x = 1\n  y = 2\n"), &LOOSE, &rc, NULL);
  CHECK(eq(r, "x = 1\n  y = 2\nif a:\n    b()\n"), "a line with no indentation: no guess: %s", r);
  /* a one-line match inside a line with Unicode punctuation folded */
  r = apply("\tsay(\xE2\x80\x9Chi\xE2\x80\x9D); // greet\n", ed("say(\"hi\")", "say(\"hi\")\nsay(\"ho\")"), &LOOSE, &rc, &out);
  CHECK(!r && rc == BW_AMBIGUOUS_TEXT && out.diag.after_indent && out.diag.level == BW_LEVEL_UNICODE,
        "unicode fragment after the indentation: refused: rc %d", rc);
  /* a place only old_text's own indentation picked: refused on the ladder */
  const char *h = "if (a) {\n\t\t// claim\n}\nif (b) {\n\t// claim\n}\n";
  bw_edit c = ed("\t\t// claim\n", "\t\tvar x;\n\t\t// claim\n");
  r = apply(h, c, &LOOSE, &rc, &out);
  CHECK(!r && rc == BW_AMBIGUOUS_TEXT && out.diag.found_line == 2 && out.diag.found_level == BW_LEVEL_EXACT &&
            out.diag.level == BW_LEVEL_INDENT && out.diag.matches == 2 && out.diag.lines[0] == 2 &&
            out.diag.lines[1] == 5,
        "loose: the indentation alone chose among 2 places: refused: rc %d found %zu", rc,
        out.diag.found_line);
  r = apply(h, c, &EXACT, &rc, NULL);
  CHECK(eq(r, "if (a) {\n\t\tvar x;\n\t\t// claim\n}\nif (b) {\n\t// claim\n}\n"), "exact: bytes: %s", r);
  r = apply(h, ed("\t\t// claim\n}\nif (b)", "\t\t// claimed\n}\nif (b)"), &LOOSE, &rc, NULL);
  CHECK(eq(r, "if (a) {\n\t\t// claimed\n}\nif (b) {\n\t// claim\n}\n"), "unique at every level: placed: %s", r);
  r = apply(h, ed("claim", "CLAIM"), &LOOSE, &rc, &out);
  CHECK(!r && rc == BW_AMBIGUOUS_TEXT && !out.diag.found_line, "two exact places: the exact level says so");
  /* the refusal names its edit */
  bw_edit two[2] = {ed("class A {", "class B {"), e};
  rc = bw_edit_apply(f, strlen(f), two, 2, &LOOSE, &out);
  CHECK(rc == BW_AMBIGUOUS_TEXT && out.diag.edit == 1, "the second edit is named: rc %d edit %zu", rc,
        out.diag.edit);
}

static void test_diff(void) {
  const char *d = "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n13\n14\n15\n16\n17\n18\n19\n20\n";
  bw_edit e[2] = {ed("1\n2\n", "1\ntwo\n"), ed("\n18\n", "\n")};
  bw_edit_out out;
  CHECK(bw_edit_apply(d, strlen(d), e, 2, &EXACT, &out) == BW_OK, "two hunks");
  const char *want =
      "@@ -1,5 +1,5 @@\n 1\n-2\n+two\n 3\n 4\n 5\n"
      "@@ -15,6 +15,5 @@\n 15\n 16\n 17\n-18\n 19\n 20\n";
  CHECK(out.diff_len == strlen(want) && !memcmp(out.diff, want, out.diff_len),
        "diff:\n%.*s", (int)out.diff_len, out.diff);
  CHECK(out.first_line == 2 && out.added == 1 && out.removed == 2, "counts %zu %zu %zu",
        out.first_line, out.added, out.removed);
  bw_edit_out_free(&out);
  bw_edit n1 = ed("b", "B");
  const char *nofinal = "a\nb";
  CHECK(bw_edit_apply(nofinal, 3, &n1, 1, &EXACT, &out) == BW_OK &&
            out.diff_len == strlen("@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+B\n\\ No newline at end of file\n") &&
            !memcmp(out.diff, "@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+B\n\\ No newline at end of file\n", out.diff_len),
        "no final newline marker:\n%.*s", (int)out.diff_len, out.diff);
  bw_edit_out_free(&out);
  bw_edit small = ed("\n2\n", "\ntwo\n");
  bw_edit_opts cap = {.context = 3, .max_diff = 20};
  CHECK(bw_edit_apply(d, strlen(d), &small, 1, &cap, &out) == BW_OK && out.diff_truncated &&
            out.diff_len <= 20,
        "diff capped: %zu", out.diff_len);
  bw_edit_out_free(&out);
  bw_edit join = ed("a\n", "a ");
  const char *j = "a\nb\nc\n";
  CHECK(bw_edit_apply(j, strlen(j), &join, 1, &EXACT, &out) == BW_OK &&
            out.diff_len == strlen("@@ -1,3 +1,2 @@\n-a\n-b\n+a b\n c\n") &&
            !memcmp(out.diff, "@@ -1,3 +1,2 @@\n-a\n-b\n+a b\n c\n", out.diff_len),
        "a span that eats a newline joins the next line:\n%.*s", (int)out.diff_len, out.diff);
  bw_edit_out_free(&out);
}

static const char *insert(const char *data, size_t line, const char *text, int *rc) {
  static char buf[1024];
  bw_edit_out out;
  *rc = bw_insert_apply(data, strlen(data), line, text, strlen(text), &EXACT, &out);
  if (*rc) return NULL;
  snprintf(buf, sizeof buf, "%.*s", (int)out.len, out.text);
  bw_edit_out_free(&out);
  return buf;
}

static void test_insert(void) {
  int rc;
  CHECK(eq(insert("a\nb\n", 1, "x", &rc), "x\na\nb\n"), "insert at start");
  CHECK(eq(insert("a\nb\n", 2, "x\ny\n", &rc), "a\nx\ny\nb\n"), "insert in the middle");
  CHECK(eq(insert("a\nb\n", 3, "x", &rc), "a\nb\nx\n"), "append a line");
  CHECK(eq(insert("a\nb", 3, "x", &rc), "a\nb\nx"), "append to a file without a final newline");
  CHECK(eq(insert("a\r\nb\r\n", 2, "x\ny", &rc), "a\r\nx\r\ny\r\nb\r\n"), "CRLF file");
  CHECK(eq(insert("\xEF\xBB\xBF" "a\n", 1, "x", &rc), "\xEF\xBB\xBFx\na\n"), "after the BOM");
  CHECK(eq(insert("", 1, "x", &rc), "x\n"), "empty file");
  CHECK(!insert("a\n", 3, "x", &rc) && rc == BW_INVALID_ARGUMENT, "past the end");
  CHECK(!insert("a\n", 0, "x", &rc) && rc == BW_INVALID_ARGUMENT, "line 0");
}


/* ---- random edits checked against a plain splice and a patch of the diff ---- */

static unsigned rnd_state = 12345;
static unsigned rnd(unsigned n) {
  rnd_state = rnd_state * 1103515245u + 12345u;
  return (rnd_state >> 16) % n;
}

static size_t count_of(const char *h, size_t hn, const char *n, size_t nn) {
  size_t c = 0;
  for (size_t i = 0; i + nn <= hn; i++) c += !memcmp(h + i, n, nn);
  return c;
}

/* Apply a unified diff (our hunks) to old; the result in out. */
static int patch(const char *old, size_t on, const char *diff, size_t dn,
                 char *out, size_t *outn) {
  const char *lines[256];
  size_t lens[256], nl = 0, pos = 0, o = 0, cur = 0; /* cur: next old line */
  while (pos < on && nl < 256) {
    const char *q = memchr(old + pos, '\n', on - pos);
    size_t e = q ? (size_t)(q - old) + 1 : on;
    lines[nl] = old + pos;
    lens[nl++] = e - pos;
    pos = e;
  }
  size_t i = 0;
  int last_open = 0; /* the last emitted line lacks its newline */
  while (i < dn) {
    const char *q = memchr(diff + i, '\n', dn - i);
    size_t e = q ? (size_t)(q - diff) : dn;
    const char *l = diff + i;
    size_t ll = e - i;
    if (ll >= 2 && l[0] == '@' && l[1] == '@') {
      char head[64];
      size_t a, b;
      snprintf(head, sizeof head, "%.*s", (int)(ll < 63 ? ll : 63), l);
      if (sscanf(head, "@@ -%zu,%zu", &a, &b) != 2) return -1;
      size_t upto = b ? a - 1 : a;
      while (cur < upto) memcpy(out + o, lines[cur], lens[cur]), o += lens[cur++];
    } else if (ll >= 1 && (l[0] == ' ' || l[0] == '-')) {
      if (cur >= nl || lens[cur] - (lines[cur][lens[cur] - 1] == '\n') != ll - 1 ||
          memcmp(lines[cur], l + 1, ll - 1))
        return -2;
      if (l[0] == ' ') memcpy(out + o, lines[cur], lens[cur]), o += lens[cur];
      last_open = l[0] == ' ' && lines[cur][lens[cur] - 1] != '\n';
      cur++;
    } else if (ll >= 1 && l[0] == '+') {
      memcpy(out + o, l + 1, ll - 1);
      o += ll - 1;
      out[o++] = '\n';
      last_open = 2;
    } else if (ll >= 1 && l[0] == '\\') {
      if (last_open == 2) o--; /* the added line has no newline */
    } else {
      return -3;
    }
    i = e + 1;
  }
  while (cur < nl) memcpy(out + o, lines[cur], lens[cur]), o += lens[cur++];
  *outn = o;
  return 0;
}

/* Is pos strictly inside its line's leading spaces and tabs? */
static int in_indent(const char *s, size_t n, size_t pos) {
  if (pos >= n) return 0;
  size_t a = pos;
  while (a > 0 && s[a - 1] != '\n') a--;
  if (a == pos) return 0;
  for (size_t i = a; i <= pos; i++)
    if (s[i] != ' ' && s[i] != '\t') return 0;
  return 1;
}

static void test_random(void) {
  char file[512], old[128], neu[64], want[700], got[1400];
  int bad = 0, runs = 0;
  for (int t = 0; t < 20000 && bad < 5; t++) {
    size_t n = 0, lines = rnd(12);
    for (size_t l = 0; l < lines; l++) {
      for (size_t c = rnd(6); c > 0; c--) file[n++] = "ab \tc"[rnd(5)];
      if (l + 1 < lines || rnd(10) < 7) file[n++] = '\n';
    }
    if (n < 1) continue;
    size_t s0 = rnd((unsigned)n), e0 = s0 + 1 + rnd((unsigned)(n - s0));
    if (e0 - s0 >= sizeof old) continue;
    memcpy(old, file + s0, e0 - s0);
    if (count_of(file, n, old, e0 - s0) != 1) continue;
    size_t nn = rnd(8);
    for (size_t c = 0; c < nn; c++) neu[c] = "xy\n"[rnd(3)];
    if (nn == e0 - s0 && !memcmp(neu, old, nn)) continue;
    bw_edit e = {old, e0 - s0, neu, nn, 0, 0, 0, 0};
    bw_edit_opts o = {.context = rnd(4), .max_diff = 1 << 20};
    bw_edit_out out;
    runs++;
    if (in_indent(file, n, s0) || in_indent(file, n, e0)) {
      int only_blank = 1;
      for (size_t c = s0; c < e0; c++) only_blank &= file[c] == ' ' || file[c] == '\t';
      if (!only_blank) { /* a place inside the indentation is no exact place */
        int rc0 = bw_edit_apply(file, n, &e, 1, &o, &out);
        CHECK(rc0 == BW_NOT_FOUND_TEXT, "random edit %d inside the indentation: rc %d", t, rc0);
        if (rc0 == BW_OK) bw_edit_out_free(&out);
        continue;
      }
    }
    if (bw_edit_apply(file, n, &e, 1, &o, &out)) {
      bad++;
      CHECK(0, "random edit %d refused", t);
      continue;
    }
    size_t wn = 0;
    memcpy(want, file, s0), wn = s0;
    memcpy(want + wn, neu, nn), wn += nn;
    memcpy(want + wn, file + e0, n - e0), wn += n - e0;
    size_t gn = 0;
    int prc = patch(file, n, out.diff, out.diff_len, got, &gn);
    int ok = out.len == wn && !memcmp(out.text, want, wn) && prc == 0 && gn == wn &&
             !memcmp(got, want, wn);
    if (!ok) {
      bad++;
      CHECK(0, "random edit %d: patch rc %d\nfile: %.*s\nold: %.*s\nnew: %.*s\ndiff:\n%.*s", t,
            prc, (int)n, file, (int)(e0 - s0), old, (int)nn, neu, (int)out.diff_len, out.diff);
    }
    bw_edit_out_free(&out);
    /* the same edit on the file in CRLF: the result is the CRLF of want */
    char crlf[1100], wcrlf[1400];
    size_t cn = 0, wc = 0;
    for (size_t i = 0; i < n; i++) {
      if (file[i] == '\n') crlf[cn++] = '\r';
      crlf[cn++] = file[i];
    }
    for (size_t i = 0; i < wn; i++) {
      if (want[i] == '\n') wcrlf[wc++] = '\r';
      wcrlf[wc++] = want[i];
    }
    if (!memchr(file, '\n', n)) continue; /* no line ending to keep */
    int rc2 = bw_edit_apply(crlf, cn, &e, 1, &o, &out);
    if (rc2 || out.len != wc ||
        memcmp(out.text, wcrlf, wc)) {
      bad++;
      CHECK(0, "random CRLF edit %d rc %d\nfile: [%.*s]\nold: [%.*s]\nnew: [%.*s]\ngot: [%.*s]", t, rc2, (int)n, file,
            (int)(e0 - s0), old, (int)nn, neu, (int)out.len, out.text);
    }
    bw_edit_out_free(&out);
  }
  CHECK(bad == 0 && runs > 1000, "random edits: %d runs, %d bad", runs, bad);
  printf("# random edits: %d runs\n", runs);
}

int main(void) {
  test_exact();
  test_counts();
  test_loose();
  test_indent_place();
  test_after_indent();
  test_diff();
  test_insert();
  test_random();
  printf("%d passed, %d failed\n", passed, failed);
  return failed != 0;
}
