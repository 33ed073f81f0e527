/*
 * test_core.c - C tests of the core (no Lua): path mapping, both resolver
 * backends, reads, atomic writes, listing, text scanning, base64. Prints one line
 * per failed check and closes with "N passed, N failed".
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core.h"
#include "counter.h"

#include "check.h"

/* The backend the roots of this run resolve with (each root names its
 * own: r.backend; the core has no process setting). */
static int test_backend = BW_OPENAT2;

static char base[256];

static void sh(const char *fmt, const char *arg) {
  char cmd[1024];
  snprintf(cmd, sizeof cmd, fmt, arg, arg, arg, arg);
  if (system(cmd) != 0) {
    fprintf(stderr, "setup failed: %s\n", cmd);
    exit(2);
  }
}

static void setup(void) {
  strcpy(base, "/tmp/burrow-core-XXXXXX");
  if (!mkdtemp(base)) exit(2);
  sh("cd %s && mkdir -p ws/sub/deeper outside && printf TOPSECRET > "
     "outside/secret.txt && printf 'hello\\nworld\\n' > ws/file.txt && "
     "printf 'in sub\\n' > ws/sub/file.txt",
     base);
  sh("cd %s/ws && ln -s sub/file.txt link_in && ln -s /etc/passwd esc_abs && "
     "ln -s ../outside esc_updir && ln -s ../outside/new.txt dangling_out && "
     "ln -s self self && mkfifo fifo && ln -s ../file.txt sub/up_in && "
     "ln %s/outside/secret.txt hl",
     base);
}

static int map(bw_root *r, const char *path, char *rel) {
  int idx;
  return bw_map_path(r, 1, path, strlen(path), &idx, rel);
}

static int read_code(bw_root *r, const char *path) {
  char rel[BW_PATH_MAX + 1];
  int rc = map(r, path, rel);
  if (rc) return rc;
  bw_buf b;
  struct stat st;
  rc = bw_read_file(r, rel, 1 << 20, &b, &st);
  if (rc == BW_OK) bw_buf_free(&b);
  return rc;
}

static void test_map(bw_root *r) {
  char rel[BW_PATH_MAX + 1], p[512];
  CHECK(map(r, "", rel) == BW_INVALID_ARGUMENT, "empty path");
  CHECK(bw_map_path(r, 1, "a\0b", 3, &(int){0}, rel) == BW_INVALID_ARGUMENT,
        "NUL in path");
  CHECK(map(r, "~/.bashrc", rel) == BW_INVALID_ARGUMENT, "tilde");
  CHECK(map(r, "C:\\x", rel) == BW_INVALID_ARGUMENT, "drive letter");
  snprintf(p, sizeof p, "%s/ws_evil/x", base);
  CHECK(map(r, p, rel) == BW_OUTSIDE_ROOT, "prefix sibling");
  snprintf(p, sizeof p, "%s/ws/sub/file.txt", base);
  CHECK(map(r, p, rel) == BW_OK && !strcmp(rel, "sub/file.txt"), "abs: %s",
        rel);
  snprintf(p, sizeof p, "%s/ws", base);
  CHECK(map(r, p, rel) == BW_OK && !strcmp(rel, "."), "mount itself");
  CHECK(map(r, "/etc/passwd", rel) == BW_OUTSIDE_ROOT, "outside abs");
  char longname[300];
  memset(longname, 'a', 299);
  longname[299] = '\0';
  CHECK(map(r, longname, rel) == BW_INVALID_ARGUMENT, "long component");
}

static void test_resolve(bw_root *r) {
  CHECK(read_code(r, "file.txt") == BW_OK, "plain read");
  CHECK(read_code(r, "sub/../file.txt") == BW_OK, "dotdot inside");
  CHECK(read_code(r, "link_in") == BW_OK, "in-root link");
  CHECK(read_code(r, "sub/up_in") == BW_OK, "in-root up link");
  CHECK(read_code(r, "../outside/secret.txt") == BW_OUTSIDE_ROOT, "dotdot");
  CHECK(read_code(r, "esc_abs") == BW_OUTSIDE_ROOT, "abs link");
  CHECK(read_code(r, "esc_updir/secret.txt") == BW_OUTSIDE_ROOT, "dir link");
  CHECK(read_code(r, "self") == BW_ELOOP, "loop");
  CHECK(read_code(r, "fifo") == BW_NOT_REGULAR, "fifo");
  CHECK(read_code(r, "sub") == BW_EISDIR, "dir");
  CHECK(read_code(r, "file.txt/") == BW_ENOTDIR, "trailing slash");
  CHECK(read_code(r, "missing") == BW_ENOENT, "missing");
}

static void test_write(bw_root *r) {
  bw_write_opts o = {.create_dirs = 1};
  bw_write_res res;
  char fresh[64];
  snprintf(fresh, sizeof fresh, "new/%s/a.txt", test_backend == BW_WALK ? "walk" : "openat2");
  CHECK(bw_write_file(r, fresh, "abc", 3, &o, &res) == BW_OK &&
            res.created,
        "create with dirs");
  CHECK(bw_write_file(r, "dangling_out", "x", 1, &o, &res) == BW_OUTSIDE_ROOT,
        "dangling link");
  CHECK(bw_write_file(r, "hl", "x", 1, &o, &res) == BW_POLICY_DENIED,
        "hard link");
  CHECK(bw_write_file(r, "esc_updir/new.txt", "x", 1, &o, &res) ==
            BW_OUTSIDE_ROOT,
        "write through dir link");
  CHECK(bw_write_file(r, ".", "x", 1, &o, &res) == BW_EISDIR, "write root");
  o.expected_hash = "absent";
  CHECK(bw_write_file(r, "file.txt", "x", 1, &o, &res) == BW_HASH_MISMATCH,
        "absent on existing");
  char p[512];
  snprintf(p, sizeof p, "%s/outside/new.txt", base);
  CHECK(access(p, F_OK) != 0, "nothing created outside");
}

static void test_text(void) {
  bw_text_info in;
  const char *t = "a\r\nb\nc";
  bw_text_scan(t, strlen(t), &in);
  CHECK(in.lines == 3 && in.lf == 2 && in.crlf == 1, "scan counts");
  CHECK(!strcmp(bw_newline_kind(&in), "mixed"), "mixed");
  bw_lines l;
  CHECK(bw_number_lines(t, strlen(t), 2, 10, 2000, 1000, &l) == BW_OK, "lines");
  CHECK(l.out_len == 8 && !memcmp(l.out, "2\tb\n3\tc\n", 8), "numbered");
  free(l.out);
  /* a cursor's page (bw_lines_at): it ends in the line it cuts, and the
   * next resumes inside it, under the same number */
  const char *u = "ab\ncdefgh\nij\n";
  CHECK(bw_lines_at(u, strlen(u), 0, 1, 10, 3, 1000, 0, &l) == BW_OK, "lines_at");
  const char *want = "1\tab\n2\tcde [... line truncated: 3 of 6 bytes shown]\n";
  CHECK(l.out_len == strlen(want) && !memcmp(l.out, want, l.out_len), "cut ends the page");
  CHECK(l.next == 2 && l.next_byte == 6 && l.mid_line && l.last == 2, "resumes in line 2 at byte 6");
  free(l.out);
  CHECK(bw_lines_at(u, strlen(u), 6, 2, 10, 3, 1000, 0, &l) == BW_OK &&
            l.out_len == 11 && !memcmp(l.out, "2\tfgh\n3\tij\n", 11),
        "the rest of line 2, then on");
  CHECK(l.next == 0 && l.next_byte == strlen(u) && !l.mid_line, "to the end");
  free(l.out);
  CHECK(bw_number_lines(u, strlen(u), 1, 10, 3, 1000, &l) == BW_OK && l.next == 0 && !l.mid_line,
        "by line: a cut line does not end the page");
  free(l.out);
  /* the vector counts and the line skip against a plain loop: random
   * texts of CR, LF and letters, every length to 9000 bytes (the blocks,
   * their tails, a CR at a block's edge), and the page a deep offset starts */
  static char buf[9000];
  unsigned seed = 12345, bad = 0;
  for (size_t n = 0; n < sizeof buf; n += 1 + n / 7) {
    for (size_t i = 0; i < n; i++) {
      seed = seed * 1103515245u + 12345u;
      unsigned r = (seed >> 16) % 8;
      buf[i] = r == 0 ? '\n' : r == 1 ? '\r' : (char)('a' + r);
    }
    size_t lf = 0, crlf = 0;
    for (size_t i = 0; i < n; i++) {
      lf += buf[i] == '\n';
      crlf += buf[i] == '\n' && i > 0 && buf[i - 1] == '\r';
    }
    bw_text_scan(buf, n, &in);
    bad += in.lf != lf || in.crlf != crlf || in.lines != lf + (n > 0 && buf[n - 1] != '\n');
    if (n < 4000) continue; /* the skip: every line of texts past a block */
    size_t at = 0; /* where line `first` starts */
    for (size_t first = 1; first <= lf + 1 && at < n; first++) {
      size_t e = at;
      while (e < n && buf[e] != '\n') e++;
      size_t tl = e > at && buf[e - 1] == '\r' ? e - at - 1 : e - at; /* a CR before the end goes */
      char want[256]; /* lines here are short: a newline is 1 byte in 8 */
      int wl = snprintf(want, sizeof want, "%zu\t%.*s\n", first, (int)tl, buf + at);
      memset(&l, 0, sizeof l);
      if (bw_number_lines(buf, n, first, 1, 1 << 20, 1 << 20, &l) != BW_OK ||
          l.out_len != (size_t)wl || memcmp(l.out, want, (size_t)wl)) {
        bad++;
        fprintf(stderr, "# line %zu of %zu bytes: want [%s] got [%.*s]\n", first, n, want,
                (int)l.out_len, l.out);
      }
      free(l.out);
      at = e + 1;
    }
  }
  CHECK(bad == 0, "vector line counts and skips agree with a plain loop (%u wrong)", bad);
}

/* bw_page_lines against bw_number_lines: for each text, start, limit and
 * caps, the same page (first, last, next, truncated, cut lines), each
 * line's text the numbered row without "N\t" and its newline. */
static int page_agrees(const char *t, size_t n, size_t first, size_t limit,
                       size_t max_line, size_t max_bytes) {
  bw_lines num, page;
  memset(&page, 0, sizeof page);
  int ok = bw_number_lines(t, n, first, limit, max_line, max_bytes, &num) == BW_OK &&
           bw_page_lines(t, n, first, limit, max_line, max_bytes, &page) == BW_OK;
  ok = ok && num.first == page.first && num.last == page.last && num.next == page.next &&
       num.truncated == page.truncated && num.cut_lines == page.cut_lines &&
       page.rows == (page.first ? page.last - page.first + 1 : 0);
  size_t at = 0, from = 0;
  for (size_t k = 0; ok && k < page.rows; k++) {
    char want[64];
    int wl = snprintf(want, sizeof want, "%zu\t", page.first + k);
    size_t len = page.ends[k] - from;
    ok = at + (size_t)wl + len + 1 <= num.out_len && !memcmp(num.out + at, want, (size_t)wl) &&
         !memcmp(num.out + at + wl, page.out + from, len) && num.out[at + wl + len] == '\n';
    at += (size_t)wl + len + 1;
    from = page.ends[k];
  }
  ok = ok && at == num.out_len && from == page.out_len;
  free(num.out);
  free(page.out);
  free(page.ends);
  return ok;
}

/* bw_lines_count against the page written (text, and JSON): every field
 * read_file tells before it prints (lines, cursor, cut, bytes) the same,
 * nothing written. at: BW_LINES_BY_LINE or a cursor's byte on line first. */
static int count_agrees(const char *t, size_t n, size_t at, size_t first, size_t limit,
                        size_t max_line, size_t max_bytes) {
  bw_lines cnt, txt, js;
  int ok = bw_lines_count(t, n, at, first, limit, max_line, max_bytes, &cnt) == BW_OK &&
           bw_lines_at(t, n, at, first, limit, max_line, max_bytes, 0, &txt) == BW_OK &&
           bw_lines_at(t, n, at, first, limit, max_line, max_bytes, 1, &js) == BW_OK;
  for (int k = 0; ok && k < 2; k++) {
    const bw_lines *w = k ? &js : &txt;
    ok = cnt.first == w->first && cnt.last == w->last && cnt.next == w->next &&
         cnt.next_byte == w->next_byte && cnt.mid_line == w->mid_line &&
         cnt.truncated == w->truncated && cnt.cut_lines == w->cut_lines &&
         cnt.raw_len == w->raw_len;
  }
  ok = ok && cnt.out == NULL && cnt.out_len == 0 && cnt.raw_len == txt.out_len;
  free(txt.out);
  free(js.out);
  return ok;
}

static void test_page_lines(void) {
  static const char *texts[] = {
      "", "a", "a\n", "a\r\nb\r\nc", "\xEF\xBB\xBF" "bom\nx\n", "tab\there\n\n\nend",
      "caf\xC3\xA9 cr\xC3\xA8me br\xC3\xBBl\xC3\xA9" "e\nshort\n", "lone\rcr\n\r\n",
      "0123456789abcdefghij0123456789abcdefghij0123456789\n1\n2\n3\n4\n5\n6\n7\n8\n9\n",
  };
  static const size_t caps[][2] = {{2000, 1 << 20}, {4, 1 << 20}, {2000, 12}, {5, 30}, {2000, 70}};
  unsigned bad = 0;
  for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++)
    for (size_t c = 0; c < sizeof caps / sizeof caps[0]; c++)
      for (size_t first = 0; first <= 12; first++)
        for (size_t limit = 1; limit <= 13; limit += 3)
          if (!page_agrees(texts[i], strlen(texts[i]), first, limit, caps[c][0], caps[c][1])) {
            bad++;
            fprintf(stderr, "# text %zu caps %zu first %zu limit %zu\n", i, c, first, limit);
          }
  CHECK(bad == 0, "bw_page_lines pages as bw_number_lines numbers (%u differ)", bad);
  bad = 0;
  for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++)
    for (size_t c = 0; c < sizeof caps / sizeof caps[0]; c++)
      for (size_t first = 0; first <= 12; first++)
        for (size_t limit = 1; limit <= 13; limit += 3) {
          size_t n = strlen(texts[i]);
          int ok = count_agrees(texts[i], n, BW_LINES_BY_LINE, first, limit, caps[c][0], caps[c][1]);
          /* a cursor at each byte of the text, on line 1 (the count
           * only has to agree with the write, whatever line it names) */
          for (size_t at = 0; ok && first == 1 && at <= n; at++)
            ok = count_agrees(texts[i], n, at, 1, limit, caps[c][0], caps[c][1]);
          if (!ok) {
            bad++;
            fprintf(stderr, "# count: text %zu caps %zu first %zu limit %zu\n", i, c, first, limit);
          }
        }
  CHECK(bad == 0, "bw_lines_count tells the page bw_lines_at writes (%u differ)", bad);
  bw_lines page;
  const char *t = "x\ty\r\n\xEF\xBB\xBFnot a bom here\nlast";
  CHECK(bw_page_lines(t, strlen(t), 1, 10, 6, 1 << 20, &page) == BW_OK && page.rows == 3 &&
            page.ends[0] == 3 && !memcmp(page.out, "x\ty", 3) && page.cut_lines == 1 &&
            !strncmp(page.out + 3, "\xEF\xBB\xBFnot a [... line truncated: 8 of 17 bytes shown]last",
                     page.out_len - 3),
        "lines as data: tab kept, CR of CRLF dropped, a cut line's marker, a BOM past line 1 kept");
  free(page.out);
  free(page.ends);
}

/* Strict base64: what decodes, what is refused and where (issue 10). */
static void test_base64(void) {
  static const struct {
    const char *in;
    const char *out; /* NULL: refused */
    size_t at;       /* offset named in the refusal */
  } cases[] = {
      {"", "", 0},          {"QQ==", "A", 0},     {"QUE=", "AA", 0},
      {"QUFB", "AAA", 0},   {" QU\r\nFB\tQQ\n=\n= \n", "AAAA", 0},
      {"QQ=====", NULL, 4}, {"QQ=A", NULL, 3},    {"QQ!!", NULL, 2},
      {"QQ==QUFB", NULL, 4}, {"Q===", NULL, 1},   {"====", NULL, 0},
      {"QUFBQ", NULL, 5},   {"QUFBQQ", NULL, 6},  {"QR==", NULL, 1},
      {"QUF=", NULL, 2},    {"QUFB-_==", NULL, 4}, {"QQ=", NULL, 3},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const char *in = cases[i].in;
    size_t n = 99, dn = 99;
    char *d = NULL;
    int rs = bw_base64_size(in, strlen(in), &n);
    int rd = bw_base64_decode(in, strlen(in), &d, &dn);
    if (cases[i].out) {
      size_t want = strlen(cases[i].out);
      CHECK(rs == BW_OK && n == want, "size of \"%s\": %d %zu", in, rs, n);
      CHECK(rd == BW_OK && dn == want && !memcmp(d, cases[i].out, want),
            "decode \"%s\"", in);
    } else {
      char at[32];
      snprintf(at, sizeof at, "offset %zu", cases[i].at);
      CHECK(rs == BW_INVALID_ARGUMENT && strstr(bw_detail(), at),
            "size of \"%s\" refused at %zu: %s", in, cases[i].at,
            rs ? bw_detail() : "accepted");
      CHECK(rd == BW_INVALID_ARGUMENT && strstr(bw_detail(), at),
            "decode of \"%s\" refused at %zu", in, cases[i].at);
    }
    if (rd == BW_OK) free(d);
  }
  /* a NUL inside the text is a bad byte, not the end */
  size_t n;
  CHECK(bw_base64_size("QQ\0=", 4, &n) == BW_INVALID_ARGUMENT &&
            strstr(bw_detail(), "offset 2 (byte 0x00)"),
        "NUL refused");
  /* every byte value round-trips through encode, across OpenSSL's chunks */
  size_t len = 3 * (1 << 20) + 7;
  unsigned char *raw = malloc(len);
  char *enc = NULL, *dec = NULL;
  size_t enc_len = 0, dec_len = 0;
  for (size_t i = 0; raw && i < len; i++) raw[i] = (unsigned char)(i * 131 + i / 7);
  CHECK(raw && bw_base64_encode(raw, len, &enc, &enc_len) == BW_OK, "encode");
  CHECK(enc && bw_base64_size(enc, enc_len, &n) == BW_OK && n == len,
        "exact size of a large encoding: %zu", n);
  CHECK(enc && bw_base64_decode(enc, enc_len, &dec, &dec_len) == BW_OK &&
            dec_len == len && !memcmp(dec, raw, len),
        "large round trip");
  free(raw);
  free(enc);
  free(dec);
}

typedef struct sum_job {
  const bw_buf *b;
  char hash[BW_HASH_STR];
} sum_job;

static int sum_run(void *arg) {
  sum_job *j = arg;
  return bw_sha256(j->b->data, j->b->len, j->hash);
}

/* P1-14: a mapped file truncated under us is an EIO, not a SIGBUS. */
static void test_sigbus(bw_root *r) {
  char path[400];
  snprintf(path, sizeof path, "%s/ws/big.bin", base);
  FILE *f = fopen(path, "w");
  for (int i = 0; f && i < 4 << 20; i++) fputc('a' + i % 26, f);
  if (f) fclose(f);
  bw_buf b;
  struct stat st;
  CHECK(bw_read_file(r, "big.bin", 8 << 20, &b, &st) == BW_OK && b.mapped,
        "large file is mapped");
  if (!b.mapped) return;
  sum_job j = {&b, ""};
  CHECK(bw_guard(sum_run, &j) == BW_OK, "guarded hash of an intact file");
  CHECK(truncate(path, 0) == 0, "truncate");
  CHECK(bw_guard(sum_run, &j) == BW_EIO, "shrunk mapping gives EIO");
  CHECK(bw_guard(sum_run, &j) == BW_EIO, "and again: the guard is re-armed");
  bw_buf_free(&b);
  /* mapped lazily, cut short, then asked for all its pages (as read_file's
     whole-file passes do): the prefault fails quietly, the pass is EIO */
  f = fopen(path, "w");
  for (int i = 0; f && i < 4 << 20; i++) fputc('a' + i % 26, f);
  if (f) fclose(f);
  CHECK(bw_map_file(r, "big.bin", 8 << 20, &b, &st) == BW_OK && b.mapped, "mapped lazily");
  if (!b.mapped) return;
  CHECK(truncate(path, 4096) == 0, "truncate to one page");
  bw_buf_prefault(&b, 0, b.len);
  j.b = &b;
  CHECK(bw_guard(sum_run, &j) == BW_EIO, "prefault of a shrunk lazy mapping, then EIO");
  bw_buf_free(&b);
  unlink(path);
}

/* P2-10: with openat2 refused by a seccomp filter (ENOSYS or EPERM), the
 * openat2 backend falls back to the walk for good and every case holds. */
static void test_fallback(int err) {
  pid_t pid = fork();
  if (pid == 0) {
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_openat2, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (unsigned)err),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {sizeof f / sizeof f[0], f};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
        prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog))
      _exit(3);
    char ws[300];
    snprintf(ws, sizeof ws, "%s/ws", base);
    bw_root r;
    if (bw_root_open(&r, ws, NULL, 0)) _exit(4);
    r.backend = BW_OPENAT2; /* the backend whose fallback this is */
    test_resolve(&r);
    CHECK(!strcmp(bw_backend_name(), "walk"), "fell back to the walk");
    bw_root_close(&r);
    fflush(stdout);
    _exit(failed ? 1 : 0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
        "seccomp %s: fallback child exit %d", err == ENOSYS ? "ENOSYS" : "EPERM",
        WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

/* HMAC-SHA256 against RFC 4231's vectors (cases 1, 2 and 6: a key longer
 * than the block), and the constant-time compare. */
static void test_hmac(void) {
  static const struct { const char *key; size_t klen; const char *msg; const char *mac; } v[] = {
      {"\x0b\x0b\x0b\x0b\x0b\x0b\x0b\x0b\x0b\x0b\x0b\x0b\x0b\x0b\x0b\x0b\x0b\x0b\x0b\x0b", 20, "Hi There",
       "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"},
      {"Jefe", 4, "what do ya want for nothing?",
       "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"},
      {NULL, 131, "Test Using Larger Than Block-Size Key - Hash Key First",
       "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"},
  };
  unsigned char big[131];
  memset(big, 0xaa, sizeof big);
  for (size_t i = 0; i < sizeof v / sizeof *v; i++) {
    unsigned char mac[32];
    char hex[65];
    CHECK(bw_hmac_sha256(v[i].key ? v[i].key : (const char *)big, v[i].klen, v[i].msg,
                         strlen(v[i].msg), mac) == BW_OK, "hmac %zu", i);
    for (int k = 0; k < 32; k++) snprintf(hex + 2 * k, 3, "%02x", mac[k]);
    CHECK(!strcmp(hex, v[i].mac), "hmac vector %zu: %s", i, hex);
  }
  CHECK(bw_equal_ct("abc", 3, "abc", 3) && !bw_equal_ct("abc", 3, "abd", 3) &&
            !bw_equal_ct("abc", 3, "ab", 2) && bw_equal_ct("", 0, "", 0),
        "equal_ct");
}

/* A key marked once: first use, replay, a mark that expired; a full store
 * takes an expired mark's slot, never a quota counter's. */
static void test_once(void) {
  char path[400];
  snprintf(path, sizeof path, "%s/once.db", base);
  bw_counters *c = NULL;
  CHECK(bw_counters_open(path, &c) == BW_OK, "open the store");
  if (!c) return;
  int first = -1;
  CHECK(bw_counter_once(c, "once:a", 200, 100, &first) == BW_OK && first == 1, "first use");
  CHECK(bw_counter_once(c, "once:a", 200, 150, &first) == BW_OK && first == 0, "a replay before expiry");
  CHECK(bw_counter_once(c, "once:a", 400, 201, &first) == BW_OK && first == 1, "after its expiry: new");
  CHECK(bw_counter_once(c, "plain", 200, 100, &first) != BW_OK, "only once: keys");
  int64_t value = 0;
  int added = 0;
  CHECK(bw_counter_add(c, "quota", 0, 5, -1, &value, &added) == BW_OK && value == 5, "a quota counter beside");
  char key[32];
  int rc = BW_OK;
  for (int i = 0; i < BW_COUNTER_RECORDS && rc == BW_OK; i++) { /* fill it: marks that expire at 300 */
    snprintf(key, sizeof key, "once:f%d", i);
    rc = bw_counter_once(c, key, 300, 100, &first);
  }
  CHECK(rc == BW_TOO_LARGE, "the store fills up: %d", rc);
  CHECK(bw_counter_once(c, "once:late", 900, 250, &first) == BW_TOO_LARGE, "full while every mark is live");
  CHECK(bw_counter_once(c, "once:late", 900, 301, &first) == BW_OK && first == 1,
        "an expired mark's slot is taken");
  CHECK(bw_counter_add(c, "quota", 0, 1, -1, &value, &added) == BW_OK && value == 6, "the quota counter kept");
  bw_counters_close(c);
}

int main(void) {
  setup();
  test_hmac();
  test_once();
  for (int backend = 0; backend < 2; backend++) {
    test_backend = backend ? BW_WALK : BW_OPENAT2;
    char ws[300];
    snprintf(ws, sizeof ws, "%s/ws", base);
    bw_root r;
    CHECK(bw_root_open(&r, ws, NULL, 0) == BW_OK, "root open");
    r.backend = test_backend;
    printf("# backend %s\n", test_backend == BW_WALK ? "walk" : "openat2");
    test_map(&r);
    test_resolve(&r);
    test_write(&r);
    test_sigbus(&r);
    bw_root_close(&r);
  }
  test_text();
  test_page_lines();
  test_base64();
  fflush(stdout);
  test_fallback(ENOSYS);
  test_fallback(EPERM);
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf %s", base);
  if (system(cmd) != 0) return 2;
  printf("%d passed, %d failed\n", passed, failed);
  return failed != 0;
}
