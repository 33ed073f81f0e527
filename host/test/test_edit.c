/*
 * test_edit.c - C tests of the edit engine and the mutations (no Lua):
 * matching levels, line endings, BOM, diagnostics, the diff, insert, and
 * mkdir/remove/move/copy/append beneath a root on both resolver backends,
 * and the write lock: two forked writers racing compare-and-set; the tree
 * lock: a change whose judged path no longer reaches its directory, and a
 * change and a subtree operation that exclude each other. Prints one line per failed check and closes with "N passed, N failed".
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

/* The backend the roots of this run resolve with (each root names its
 * own: r.backend; the core has no process setting). */
static int test_backend = BW_OPENAT2;

static const bw_edit_opts EXACT = {.context = 3, .max_diff = 1 << 20};
static const bw_edit_opts LOOSE = {.loose = 1, .context = 3, .max_diff = 1 << 20};

static bw_edit ed(const char *old, const char *neu) {
  return (bw_edit){old, strlen(old), neu, strlen(neu), 0, 0, 0, 0};
}

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

static int eq(const char *got, const char *want) {
  return got && !strcmp(got, want);
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

/* ---- on files beneath a root ---- */

static char base[256];

static void sh(const char *fmt, const char *arg) {
  char cmd[2048];
  snprintf(cmd, sizeof cmd, fmt, arg, arg, arg, arg, arg, arg);
  if (system(cmd) != 0) {
    fprintf(stderr, "setup failed: %s\n", cmd);
    exit(2);
  }
}

static int exists(const char *rel) {
  char p[600];
  struct stat st;
  snprintf(p, sizeof p, "%s/%s", base, rel);
  return lstat(p, &st) == 0;
}

static char *slurp(const char *rel) {
  static char buf[4096];
  char p[600];
  snprintf(p, sizeof p, "%s/%s", base, rel);
  FILE *f = fopen(p, "rb");
  if (!f) return NULL;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  return buf;
}

static void fixture(void) {
  sh("rm -rf %s/ws %s/outside && mkdir -p %s/ws/sub %s/outside && cd %s && "
     "printf TOPSECRET > outside/secret.txt && printf 'one\\ntwo\\n' > ws/f.txt",
     base);
  sh("cd %s/ws && ln -s ../outside esc_updir && ln -s ../outside/new.txt dangling && "
     "ln -s f.txt link_in && ln %s/outside/secret.txt hl && mkfifo fifo && "
     "mkdir -p tree/a/b && printf x > tree/a/b/x && ln -s ../outside tree/esc && "
     "ln -s / tree/a/root && printf 'line\\n' > tree/t.txt && chmod 755 tree/t.txt",
     base);
}

static void test_files(bw_root *r) {
  bw_edit e = ed("two", "TWO");
  bw_edit_file_opts o = {.e = EXACT, .max_bytes = 1 << 20, .keep_original = 1 << 20};
  bw_edit_file_res res;
  CHECK(bw_edit_file(r, "f.txt", &e, 1, &o, &res) == BW_OK && eq(slurp("ws/f.txt"), "one\nTWO\n") &&
            res.original_len == 8,
        "edit_file writes");
  bw_edit_file_res_free(&res);
  e = ed("one", "ONE");
  o.expected_hash = "sha256:0000";
  CHECK(bw_edit_file(r, "f.txt", &e, 1, &o, &res) == BW_HASH_MISMATCH &&
            !strncmp(res.current_hash, "sha256:", 7) && eq(slurp("ws/f.txt"), "one\nTWO\n"),
        "edit_file expected_hash mismatch");
  o.expected_hash = NULL;
  o.dry_run = 1;
  CHECK(bw_edit_file(r, "f.txt", &e, 1, &o, &res) == BW_OK && eq(slurp("ws/f.txt"), "one\nTWO\n"),
        "dry run writes nothing");
  bw_edit_file_res_free(&res);
  o.dry_run = 0;
  bw_edit l = ed("one", "x");
  CHECK(bw_edit_file(r, "link_in", &l, 1, &o, &res) == BW_POLICY_DENIED, "edit through a link");
  bw_edit h = ed("TOP", "PWN");
  CHECK(bw_edit_file(r, "hl", &h, 1, &o, &res) == BW_POLICY_DENIED &&
            eq(slurp("outside/secret.txt"), "TOPSECRET"),
        "edit of a hard-linked file");
  CHECK(bw_edit_file(r, "esc_updir/secret.txt", &h, 1, &o, &res) == BW_OUTSIDE_ROOT,
        "edit outside");
  CHECK(bw_insert_file(r, "f.txt", 2, "mid", 3, &o, &res) == BW_OK &&
            eq(slurp("ws/f.txt"), "one\nmid\nTWO\n"),
        "insert_lines");
  bw_edit_file_res_free(&res);

  int created;
  CHECK(bw_mkdir(r, "d1", 0, &created) == BW_OK && created, "mkdir");
  CHECK(bw_mkdir(r, "d1", 0, &created) == BW_EEXIST, "mkdir existing");
  CHECK(bw_mkdir(r, "d1", 1, &created) == BW_OK && !created, "mkdir -p existing");
  CHECK(bw_mkdir(r, "d2/x/y/", 1, &created) == BW_OK && exists("ws/d2/x/y"), "mkdir -p");
  CHECK(bw_mkdir(r, "esc_updir/d", 1, &created) == BW_OUTSIDE_ROOT && !exists("outside/d"),
        "mkdir through a link");
  CHECK(bw_mkdir(r, "dangling", 0, &created) != BW_OK && !exists("outside/new.txt"),
        "mkdir on a dangling link");

  bw_append_res ar;
  CHECK(bw_append(r, "log.txt", "a\n", 2, 1, 1 << 20, &ar) == BW_OK && ar.created && ar.size == 2,
        "append creates");
  CHECK(bw_append(r, "log.txt", "b\n", 2, 1, 1 << 20, &ar) == BW_OK && !ar.created &&
            ar.old_size == 2 && eq(slurp("ws/log.txt"), "a\nb\n"),
        "append appends");
  CHECK(bw_append(r, "log.txt", "c\n", 2, 1, 5, &ar) == BW_TOO_LARGE, "append over the cap");
  CHECK(bw_append(r, "hl", "x", 1, 1, 1 << 20, &ar) == BW_POLICY_DENIED &&
            eq(slurp("outside/secret.txt"), "TOPSECRET"),
        "append to a hard link");
  CHECK(bw_append(r, "dangling", "x", 1, 1, 1 << 20, &ar) == BW_OUTSIDE_ROOT &&
            !exists("outside/new.txt"),
        "append to a dangling link");
  CHECK(bw_append(r, "fifo", "x", 1, 1, 1 << 20, &ar) == BW_NOT_REGULAR, "append to a FIFO");

  bw_copy_opts co = {.max_bytes = 1 << 20};
  bw_copy_res cr;
  CHECK(bw_copy(r, "tree", r, "tree2", &co, &cr) == BW_EISDIR, "copy a dir needs recursive");
  co.recursive = 1;
  CHECK(bw_copy(r, "tree", r, "tree2", &co, &cr) == BW_OK && cr.links == 2 && cr.files == 2 &&
            exists("ws/tree2/a/b/x"),
        "copy a tree: files %zu links %zu", cr.files, cr.links);
  struct stat st;
  char p[600];
  snprintf(p, sizeof p, "%s/ws/tree2/esc", base);
  CHECK(lstat(p, &st) == 0 && S_ISLNK(st.st_mode), "links are copied as links");
  snprintf(p, sizeof p, "%s/ws/tree2/t.txt", base);
  CHECK(stat(p, &st) == 0 && (st.st_mode & 0100), "exec bit kept");
  CHECK(bw_copy(r, "tree", r, "tree2", &co, &cr) == BW_EEXIST, "copy onto an existing tree");
  CHECK(bw_copy(r, "tree", r, "tree/inner", &co, &cr) == BW_OK && exists("ws/tree/inner/a/b/x") &&
            !exists("ws/tree/inner/inner"),
        "copy a tree into itself stops at the copy");
  co.recursive = 0;
  CHECK(bw_copy(r, "f.txt", r, "dangling", &co, &cr) != BW_OK && !exists("outside/new.txt"),
        "copy onto a dangling link");
  CHECK(bw_copy(r, "esc_updir/secret.txt", r, "stolen", &co, &cr) == BW_OUTSIDE_ROOT,
        "copy from outside");
  CHECK(bw_copy(r, "f.txt", r, "g.txt", &co, &cr) == BW_OK && eq(slurp("ws/g.txt"), "one\nmid\nTWO\n"),
        "copy a file");

  /* a merge (overwrite onto a directory) that would meet what it refuses
   * changes nothing: the check runs before any rename */
  sh("mkdir -p '%s/ws/ms/sub' '%s/ws/md/sub/x' && echo new > '%s/ws/ms/a' && echo new > '%s/ws/ms/sub/x' && echo old > '%s/ws/md/a'", base);
  co.recursive = 1;
  co.overwrite = 1;
  CHECK(bw_copy(r, "ms", r, "md", &co, &cr) == BW_EISDIR && eq(slurp("ws/md/a"), "old\n") &&
            !exists("ws/md/sub/x/x"),
        "a merge that meets a directory with a file changes nothing");
  sh("rm -rf '%s/ws/md/sub/x' && ln -s ../a '%s/ws/md/sub/x'", base);
  CHECK(bw_copy(r, "ms", r, "md", &co, &cr) == BW_POLICY_DENIED && eq(slurp("ws/md/a"), "old\n"),
        "a merge onto a symlink is refused, and changes nothing");
  sh("rm -f '%s/ws/md/sub/x'", base);
  CHECK(bw_copy(r, "ms", r, "md", &co, &cr) == BW_OK && eq(slurp("ws/md/a"), "new\n") &&
            eq(slurp("ws/md/sub/x"), "new\n"),
        "the merge, once nothing is refused");
  co.recursive = 0;
  co.overwrite = 0;

  CHECK(bw_move(r, "g.txt", r, "f.txt", 0) == BW_EEXIST, "move without overwrite");
  CHECK(bw_move(r, "g.txt", r, "dangling", 0) == BW_EEXIST && !exists("outside/new.txt"),
        "move onto a dangling link");
  CHECK(bw_move(r, "g.txt", r, "dangling", 1) == BW_POLICY_DENIED && !exists("outside/new.txt"),
        "move over a link with overwrite");
  CHECK(bw_move(r, "g.txt", r, "h.txt", 0) == BW_OK && exists("ws/h.txt") && !exists("ws/g.txt"),
        "move");
  CHECK(bw_move(r, "h.txt", r, "newdir/", 0) == BW_ENOTDIR, "move to a trailing slash");
  CHECK(bw_move(r, "h.txt", r, "esc_updir/x", 0) == BW_OUTSIDE_ROOT && !exists("outside/x"),
        "move out");
  CHECK(bw_move(r, "esc_updir/secret.txt", r, "stolen", 0) == BW_OUTSIDE_ROOT &&
            exists("outside/secret.txt"),
        "move in");
  CHECK(bw_move(r, ".", r, "x", 0) == BW_INVALID_ARGUMENT, "move the root");
  CHECK(bw_move(r, "link_in", r, "link2", 0) == BW_OK && exists("ws/f.txt"),
        "a link moves as a link");

  bw_remove_res rr;
  CHECK(bw_remove(r, ".", 1, NULL, NULL, &rr) == BW_INVALID_ARGUMENT, "remove the root");
  CHECK(bw_remove(r, "sub/..", 1, NULL, NULL, &rr) == BW_INVALID_ARGUMENT, "remove sub/..");
  CHECK(bw_remove(r, "tree", 0, NULL, NULL, &rr) == BW_EEXIST, "remove a full dir needs recursive");
  CHECK(bw_remove(r, "esc_updir/secret.txt", 0, NULL, NULL, &rr) == BW_OUTSIDE_ROOT, "remove outside");
  CHECK(bw_remove(r, "esc_updir", 0, NULL, NULL, &rr) == BW_OK && exists("outside/secret.txt"),
        "remove a link, not its target");
  CHECK(bw_remove(r, "tree", 1, NULL, NULL, &rr) == BW_OK && !exists("ws/tree") &&
            exists("outside/secret.txt"),
        "remove a tree with links out");
  CHECK(bw_remove(r, "h.txt", 0, "sha256:00", NULL, &rr) == BW_HASH_MISMATCH && exists("ws/h.txt"),
        "remove with a stale hash");
  CHECK(bw_remove(r, "fifo/", 0, NULL, NULL, &rr) == BW_ENOTDIR, "remove fifo/");
  CHECK(exists("outside/secret.txt") && !exists("outside/new.txt") && !exists("outside/x"),
        "outside untouched");

  /* a budget: a tree operation stops at its deadline or its cancel flag,
   * between entries, and counts what it had done */
  sh("cd %s/ws && mkdir -p big/a big/b && seq 1 6000 | sed 's|^|big/a/f|' | xargs touch && "
     "seq 1 6000 | sed 's|^|big/b/g|' | xargs touch", base);
  _Atomic int cancel = 1;
  bw_stop now = {.cancel = &cancel}, late = {.until_ms = bw_now_ms() - 1};
  CHECK(bw_remove(r, "big", 1, NULL, &now, &rr) == BW_EAGAIN && rr.files == 0 &&
            exists("ws/big/a/f1"),
        "a cancelled remove stops before the first entry");
  co = (bw_copy_opts){.recursive = 1, .max_bytes = 1 << 20, .stop = &late};
  CHECK(bw_copy(r, "big", r, "big2", &co, &cr) == BW_TOO_LARGE && cr.files == 0,
        "a copy past its deadline stops: %zu files", cr.files);
  bw_stop soon = {.until_ms = bw_now_ms() + 40};
  int rc = bw_remove(r, "big", 1, NULL, &soon, &rr);
  CHECK(rc == BW_TOO_LARGE && rr.files > 0 && rr.files < 12000 && exists("ws/big"),
        "a remove stops part-way at its deadline: %d, %zu of 12000 files", rc, rr.files);
  CHECK(bw_remove(r, "big", 1, NULL, NULL, &rr) == BW_OK && !exists("ws/big"),
        "the rest removed without a budget");
}

/* ---- the write lock: compare-and-set across processes ---- */

enum { CAS_ROUNDS = 300 };

/* One of two writer processes: CAS_ROUNDS increments of the counter in
 * cas.txt (read, add one, write with expected_hash = the hash read), then
 * CAS_ROUNDS lines of its own put before "#end" in log.txt by bw_edit_file
 * without expected_hash. Sends {wins, edits} down the pipe. */
static void cas_writer(bw_root *r, char tag, int out) {
  int report[2] = {0, 0};
  for (int i = 0; i < CAS_ROUNDS; i++) {
    char *data, hash[BW_HASH_STR], text[32];
    size_t len;
    if (bw_read_copy(r, "cas.txt", 1 << 20, &data, &len)) _exit(3);
    snprintf(text, sizeof text, "%.*s", (int)len, data);
    if (bw_sha256(data, len, hash)) _exit(3);
    free(data);
    int n = snprintf(text, sizeof text, "%ld\n", strtol(text, NULL, 10) + 1);
    bw_write_opts wo = {.expected_hash = hash};
    bw_write_res wr;
    int rc = bw_write_file(r, "cas.txt", text, (size_t)n, &wo, &wr);
    if (rc == BW_OK) report[0]++;
    else if (rc != BW_HASH_MISMATCH) _exit(4);
  }
  for (int i = 0; i < CAS_ROUNDS; i++) {
    char neu[32];
    snprintf(neu, sizeof neu, "%c%d\n#end\n", tag, i);
    bw_edit e = ed("#end\n", neu);
    bw_edit_file_opts o = {.e = EXACT, .max_bytes = 1 << 20};
    bw_edit_file_res res;
    if (bw_edit_file(r, "log.txt", &e, 1, &o, &res) == BW_OK) {
      report[1]++;
      bw_edit_file_res_free(&res);
    }
  }
  _exit(write(out, report, sizeof report) == sizeof report ? 0 : 5);
}

static void test_cas(bw_root *r) {
  sh("printf '0\\n' > %s/ws/cas.txt && printf '#begin\\n#end\\n' > %s/ws/log.txt && "
     "mkdir -p %s/ws/casdir",
     base);
  char ws[300];
  snprintf(ws, sizeof ws, "%s/ws", base);
  bw_write_opts wo = {.lock_wait_ms = 100};
  bw_write_res wr;
  int other = open(ws, O_RDONLY | O_DIRECTORY | O_CLOEXEC); /* another writer */
  CHECK(other >= 0 && flock(other, LOCK_EX) == 0, "hold the directory's lock");
  CHECK(bw_write_file(r, "cas.txt", "9\n", 2, &wo, &wr) == BW_EAGAIN && eq(slurp("ws/cas.txt"), "0\n"),
        "a lock held past the wait: EAGAIN, the file unchanged");
  close(other);

  bw_dir_lock lk;
  CHECK(bw_lock_parent(r, "cas.txt", 0, &lk) == BW_OK, "lock the parent");
  wo.held = &lk;
  CHECK(bw_write_file(r, "cas.txt", "0\n", 2, &wo, &wr) == BW_OK,
        "a write under the caller's lock does not wait for itself");
  CHECK(bw_write_file(r, "casdir/x.txt", "x", 1, &wo, &wr) == BW_EAGAIN && !exists("ws/casdir/x.txt"),
        "a held lock of another directory is refused");
  bw_unlock_dir(&lk);
  bw_unlock_dir(&lk); /* idempotent */

  int p[2];
  CHECK(pipe(p) == 0, "pipe");
  pid_t kids[2];
  for (int k = 0; k < 2; k++) {
    fflush(stdout);
    kids[k] = fork();
    if (kids[k] == 0) {
      close(p[0]);
      cas_writer(r, (char)('A' + k), p[1]);
    }
  }
  close(p[1]);
  int wins = 0, edits = 0, report[2], clean = 1;
  for (int k = 0; k < 2; k++) {
    int st;
    if (read(p[0], report, sizeof report) == sizeof report) {
      wins += report[0];
      edits += report[1];
    }
    clean &= waitpid(kids[k], &st, 0) == kids[k] && WIFEXITED(st) && WEXITSTATUS(st) == 0;
  }
  close(p[0]);
  CHECK(clean, "both writers ran to the end");
  long final = strtol(slurp("ws/cas.txt"), NULL, 10);
  CHECK(final == wins && wins >= CAS_ROUNDS, "no double wins: %d wins, the counter at %ld", wins, final);
  char *data;
  size_t len;
  int missing = 0;
  CHECK(bw_read_copy(r, "log.txt", 1 << 20, &data, &len) == BW_OK, "read log.txt");
  for (int k = 0; k < 2 && data; k++)
    for (int i = 0; i < CAS_ROUNDS; i++) {
      char line[32];
      int n = snprintf(line, sizeof line, "\n%c%d\n", 'A' + k, i);
      char *at = memmem(data, len, line, (size_t)n);
      missing += !at || memmem(at + 1, len - (size_t)(at + 1 - data), line, (size_t)n);
    }
  CHECK(edits == 2 * CAS_ROUNDS && missing == 0,
        "no lost edits: %d of %d done, %d not in the file exactly once", edits, 2 * CAS_ROUNDS, missing);
  free(data);
}

/* ---- the tree lock: no change lands in a tree while it is judged ---- */

/* A write view of rel, as a tool gets it: the handle judged now. */
static int view_of(bw_root *r, const char *rel, bw_handle *h, bw_root *v, const char **name) {
  int rc = bw_resolve_handle(r, 1, 0, rel, BW_NOFOLLOW, h);
  if (rc) return rc;
  bw_handle_view(h, r, BW_VIEW_WRITE, v, name);
  return BW_OK;
}

static void test_tree_lock(bw_root *r) {
  sh("rm -rf %s/ws/t %s/ws/t2 %s/ws/vault && mkdir -p %s/ws/t/d/h", base);
  bw_handle h;
  bw_root v;
  const char *name;
  bw_write_opts wo = {.lock_wait_ms = 100};
  bw_write_res wr;
  int created;
  bw_append_res ar;

  /* judged as t/d/x, then t/d renamed: the judged path no longer reaches it */
  CHECK(view_of(r, "t/d/x", &h, &v, &name) == BW_OK, "judge t/d/x");
  sh("mv %s/ws/t/d %s/ws/t/moved", base);
  CHECK(bw_write_file(&v, name, "x", 1, &wo, &wr) == BW_EAGAIN && !exists("ws/t/moved/x"),
        "a write whose directory moved after the judgement: EAGAIN, nothing landed");
  CHECK(bw_append(&v, name, "x", 1, 0, 100, &ar) == BW_EAGAIN && !exists("ws/t/moved/x"),
        "an append likewise");
  CHECK(bw_mkdir(&v, name, 0, &created) == BW_EAGAIN && !exists("ws/t/moved/x"), "a mkdir likewise");
  bw_handle_close(&h);
  /* a write replacing a file: the old file stays, whole */
  sh("printf old > %s/ws/t/moved/r", base);
  sh("mv %s/ws/t/moved %s/ws/t/d", base);
  CHECK(view_of(r, "t/d/r", &h, &v, &name) == BW_OK, "judge t/d/r");
  sh("mv %s/ws/t/d %s/ws/t/moved", base);
  CHECK(bw_write_file(&v, name, "new", 3, &wo, &wr) == BW_EAGAIN && eq(slurp("ws/t/moved/r"), "old"),
        "a replace whose directory moved: EAGAIN, the old file in place");
  bw_handle_close(&h);
  sh("mv %s/ws/t/moved %s/ws/t/d", base);

  /* judged as t/d/h/x, then t/d (the parent's parent) renamed */
  CHECK(view_of(r, "t/d/h/x", &h, &v, &name) == BW_OK, "judge t/d/h/x");
  sh("mv %s/ws/t/d %s/ws/vault", base);
  CHECK(bw_write_file(&v, name, "x", 1, &wo, &wr) == BW_EAGAIN && !exists("ws/vault/h/x"),
        "a write whose ancestor moved: EAGAIN, nothing landed");
  sh("mv %s/ws/vault %s/ws/t/d", base);
  /* ... and back where it was judged: it lands */
  CHECK(bw_write_file(&v, name, "x", 1, &wo, &wr) == BW_OK && exists("ws/t/d/h/x"),
        "the same write once the path reaches its directory again");
  bw_handle_close(&h);

  /* a subtree operation holds its top: a change inside waits, then EAGAIN */
  int top;
  int tfd = openat(r->fd, "t", O_PATH | O_DIRECTORY | O_CLOEXEC);
  CHECK(tfd >= 0 && bw_lock_tree(tfd, "d", 0, &top) == BW_OK, "hold t/d as a move would");
  CHECK(view_of(r, "t/d/h/y", &h, &v, &name) == BW_OK, "judge t/d/h/y");
  CHECK(bw_write_file(&v, name, "y", 1, &wo, &wr) == BW_EAGAIN && !exists("ws/t/d/h/y"),
        "a write below a held subtree waits, then EAGAIN");
  bw_handle_close(&h);
  CHECK(view_of(r, "t/d/y", &h, &v, &name) == BW_OK, "judge t/d/y");
  CHECK(bw_write_file(&v, name, "y", 1, &wo, &wr) == BW_EAGAIN && !exists("ws/t/d/y"),
        "a write into a held subtree's top waits, then EAGAIN");
  CHECK(bw_write_file(r, "t/d/y", "y", 1, &wo, &wr) == BW_EAGAIN && !exists("ws/t/d/y"),
        "so does a write by root and path (the directory's own lock)");
  close(top);
  CHECK(bw_write_file(&v, name, "y", 1, &wo, &wr) == BW_OK && exists("ws/t/d/y"),
        "released: it lands");
  bw_handle_close(&h);

  /* a write in progress holds its chain: the subtree waits for it */
  bw_dir_lock lk;
  CHECK(view_of(r, "t/d/h/z", &h, &v, &name) == BW_OK, "judge t/d/h/z");
  CHECK(bw_lock_parent(&v, name, 0, &lk) == BW_OK, "a write's lock on t/d/h, its chain held");
  CHECK(bw_lock_tree(tfd, "d", 100, &top) == BW_EAGAIN, "a move of t/d waits for it, then EAGAIN");
  bw_unlock_dir(&lk);
  CHECK(bw_lock_tree(tfd, "d", 100, &top) == BW_OK, "released: the move takes t/d");
  close(top);
  bw_handle_close(&h);

  /* a commit holds its destination's chain: a destination moved after the
     judgement takes nothing in, and the source goes back */
  sh("mkdir -p %s/ws/t/src %s/ws/t/dp && echo s > %s/ws/t/src/s", base);
  bw_handle hs, hd;
  bw_root vs, vd;
  const char *sname, *dname;
  bw_stage st;
  bw_stage_init(&st, 0, 0, 0, NULL);
  CHECK(view_of(r, "t/src", &hs, &vs, &sname) == BW_OK && view_of(r, "t/dp/new", &hd, &vd, &dname) == BW_OK,
        "judge t/src and t/dp/new");
  CHECK(bw_stage_move(&vs, sname, &vd, dname, &st) == BW_OK, "stage the move");
  sh("mv %s/ws/t/dp %s/ws/t/dp2", base);
  CHECK(bw_stage_commit(&st) == BW_EAGAIN && !exists("ws/t/dp2/new") && exists("ws/t/src/s"),
        "its destination moved after the judgement: EAGAIN, nothing landed, the source back");
  bw_stage_free(&st);
  bw_handle_close(&hs);
  bw_handle_close(&hd);

  /* a link put on the way is never followed by the chain */
  CHECK(view_of(r, "t/d/h/w", &h, &v, &name) == BW_OK, "judge t/d/h/w");
  sh("mv %s/ws/t/d %s/ws/t2 && ln -s ../t2 %s/ws/t/d", base);
  CHECK(bw_write_file(&v, name, "w", 1, &wo, &wr) == BW_EAGAIN && !exists("ws/t2/h/w"),
        "t/d now a link to where the directory went: EAGAIN, nothing landed");
  bw_handle_close(&h);
  close(tfd);
}

static void test_readonly(void) {
  char ws[300];
  snprintf(ws, sizeof ws, "%s/ws", base);
  bw_root r;
  if (bw_root_open(&r, ws, NULL, 1)) return;
  r.backend = test_backend;
  bw_edit e = ed("one", "x");
  bw_edit_file_opts o = {.e = EXACT, .max_bytes = 1 << 20};
  bw_edit_file_res res;
  int created;
  bw_remove_res rr;
  bw_append_res ar;
  CHECK(bw_edit_file(&r, "f.txt", &e, 1, &o, &res) == BW_READ_ONLY_ROOT, "ro edit");
  CHECK(bw_mkdir(&r, "zz", 1, &created) == BW_READ_ONLY_ROOT, "ro mkdir");
  CHECK(bw_remove(&r, "f.txt", 0, NULL, NULL, &rr) == BW_READ_ONLY_ROOT, "ro remove");
  CHECK(bw_append(&r, "f.txt", "x", 1, 0, 100, &ar) == BW_READ_ONLY_ROOT, "ro append");
  CHECK(bw_move(&r, "f.txt", &r, "g", 0) == BW_READ_ONLY_ROOT, "ro move");
  bw_root_close(&r);
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
  strcpy(base, "/tmp/burrow-edit-XXXXXX");
  if (!mkdtemp(base)) return 2;
  for (int backend = 0; backend < 2; backend++) {
    test_backend = backend ? BW_WALK : BW_OPENAT2;
    printf("# backend %s\n", test_backend == BW_WALK ? "walk" : "openat2");
    fixture();
    char ws[300];
    snprintf(ws, sizeof ws, "%s/ws", base);
    bw_root r;
    CHECK(bw_root_open(&r, ws, NULL, 0) == BW_OK, "root open");
    r.backend = test_backend;
    test_files(&r);
    test_cas(&r);
    test_tree_lock(&r);
    bw_root_close(&r);
    test_readonly();
  }
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf %s", base);
  if (system(cmd) != 0) return 2;
  printf("%d passed, %d failed\n", passed, failed);
  return failed != 0;
}
