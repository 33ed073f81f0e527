/*
 * search.h - burrow's search core: a parallel directory walker that opens
 * everything through directory fds beneath a root (walk.c), gitignore
 * semantics (ignore.c), a glob matcher and the glob search (glob.c), the
 * literals a regex requires and their SIMD scan (prefilter.c), and PCRE2
 * content search behind that prefilter (grep.c; large files mapped and
 * searched in chunks, grepmap.c). Plain C, no Lua;
 * functions return a bw_code like the rest of the core.
 */
#ifndef BURROW_SEARCH_H
#define BURROW_SEARCH_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>
#include <time.h>

#include "core.h"

/* ---- glob matcher (glob.c) ---- */

typedef struct bw_glob bw_glob;

enum {
  BW_GLOB_BRACES = 1,     /* {a,b} alternatives (globs, not gitignore) */
  BW_GLOB_CASEFOLD = 2,   /* ASCII case-insensitive */
  BW_GLOB_DIR_ITSELF = 4, /* a trailing "**" may match no segment (minimatch) */
};

/* Compile a pattern of '/'-separated segments with *, ?, [...], ** and
 * (with BW_GLOB_BRACES) {a,b}. A trailing "**" needs at least one segment
 * (a/ then ** is what is inside a, not a itself) unless BW_GLOB_DIR_ITSELF.
 * At most 4096 bytes, 64 KiB once the braces are expanded. NULL on a
 * malformed pattern, with a static reason in *why. */
bw_glob *bw_glob_compile(const char *pat, size_t len, int flags,
                         const char **why);
void bw_glob_free(bw_glob *g);
/* 0 when bw_glob_compile would compile the pattern, else -1 with its
 * reason in *why: the same answer, without building it when it has no
 * {a,b} (rules.c's literal patterns, checked at every start). */
int bw_glob_check(const char *pat, size_t len, int flags, const char **why);
/* Does the whole path (no leading "/") match? */
int bw_glob_match(const bw_glob *g, const char *path);
/* The same for path[0, len), which need not end in a NUL. */
int bw_glob_matchn(const bw_glob *g, const char *path, size_t len);
/* Could a path below directory dir still match? */
int bw_glob_viable(const bw_glob *g, const char *dir);
/* Is the pattern a single segment (no '/')? */
int bw_glob_is_basename(const bw_glob *g);
/* The leading literal directories every match lies below ("src/lib" for
 * "src/lib/" "*.c"), "" if none; returns its length. */
size_t bw_glob_prefix(const bw_glob *g, char *out, size_t size);
/* Does a segment start with '.' (the pattern names hidden entries)? */
int bw_glob_names_hidden(const bw_glob *g);

/* ---- declared path rules (rules.c) ---- */

/* Policies' path rules, compiled once and matched inside walker threads:
 * a walk skips (and counts) every entry a direct read would deny. */
enum { BW_OP_READ = 1, BW_OP_LIST = 2, BW_OP_WRITE = 4, BW_OP_DELETE = 8 };

typedef struct bw_rules bw_rules; /* immutable once built; matching is thread-safe */

bw_rules *bw_rules_new(void);
/* Add one rule: patterns and excepts are globs of the matcher above (**,
 * *, ?, [...], {a,b}) matched against the whole in-root path ("a/b/c", no
 * leading "./" or "/"; the root itself is "."). ops is a mask of BW_OP_*;
 * casefold folds ASCII case; id (>= 0) is what bw_rules_match returns.
 * Returns 0 or a bw_code, with a static reason in *why on a bad pattern
 * (bw_rules_bad_index says which). */
int bw_rules_add(bw_rules *rs, const char *const *patterns, int npat,
                 const char *const *excepts, int nexc, int ops, int casefold,
                 int id, const char **why);
/* The index of the pattern (or -(index + 1) of the except) the last
 * failed bw_rules_add on this thread refused. */
int bw_rules_bad_index(void);
/* The id of the first rule (in the order added) that matches path[0, len)
 * for op: one pattern matches and no except does. -1 if none. */
int bw_rules_match(const bw_rules *rs, const char *path, size_t len, int op);
/* Limit the rule added last to the objects of one root (root >= 0, the
 * caller's index of it), where a walk meets several (bw_nest). */
void bw_rules_scope(bw_rules *rs, int root);
/* bw_rules_match for an object of root (a rule scoped to another root
 * does not match it; root < 0: unknown, every rule may match). */
int bw_rules_match_in(const bw_rules *rs, int root, const char *path, size_t len, int op);
/* Number of rules added. */
int bw_rules_count(const bw_rules *rs);
/* The in-root path rules see for the directory rel that a walk starts
 * from: base ("." the root) without "./" or slashes at either end, or,
 * when base is NULL, rel made canonical; "" for the root. out holds
 * BW_PATH_MAX + 1 bytes; *len gets its length. */
int bw_rules_start(const bw_root *r, const char *rel, const char *base,
                   char *out, size_t *len);
void bw_rules_free(bw_rules *rs);

/* ---- gitignore rules (ignore.c) ---- */

typedef struct bw_ignore bw_ignore;

/* Parse the text of one ignore file. NULL if it has no rules. */
bw_ignore *bw_ignore_parse(const char *text, size_t len);
/* Add the rules of another file with lower precedence (info/exclude
 * below .gitignore below .ignore); frees more. */
bw_ignore *bw_ignore_merge(bw_ignore *high, bw_ignore *more);
void bw_ignore_free(bw_ignore *ig);
/* 1 ignored, -1 re-included by a negation, 0 no rule matched; path is
 * relative to the ignore file's directory. */
int bw_ignore_match(const bw_ignore *ig, const char *path, int is_dir);
/* Read name in dirfd as an ignore file: regular files only, opened with
 * O_NOFOLLOW|O_NONBLOCK after an lstat, at most 1 MiB. NULL if absent. */
bw_ignore *bw_ignore_load(int dirfd, const char *name);

/* ---- the walker (walk.c) ---- */

typedef struct bw_wentry {
  int dirfd;         /* the directory holding it, open for reading */
  const char *name;
  const char *path;  /* relative to the walk's start ("" for the start) */
  char type;         /* 'f' file, 'd' dir, 'l' symlink, 'o' other */
  int worker;        /* 0 .. threads-1 */
} bw_wentry;

/* Called on worker threads for every entry that is not hidden or ignored.
 * Return 1 to descend into a directory, 0 to go on, -1 to stop the whole
 * walk (every worker). */
typedef int (*bw_visit_fn)(void *arg, const bw_wentry *e);

typedef struct bw_walk_stats {
  _Atomic size_t dirs, entries;
  _Atomic size_t unreadable; /* directories that could not be opened */
  _Atomic int cancelled;     /* stopped by cancel or progress */
  _Atomic size_t skipped_policy; /* entries the rules hid (a directory once) */
} bw_walk_stats;

typedef struct bw_walk_opts {
  int threads;               /* 0 = one per core (at most 12) */
  int include_hidden;
  int respect_ignore;        /* .gitignore (in a git repo), .ignore, .git/info/exclude */
  const _Atomic int *cancel; /* raised from outside: stop (may be NULL) */
  bw_visit_fn visit;
  void *arg;
  /* progress: called on the calling thread every interval_ms */
  int (*progress)(void *progress_arg, size_t dirs, size_t entries);
  void *progress_arg;
  int interval_ms;
  bw_walk_stats *stats;      /* counters (may be NULL) */
  const char *below;         /* literal dirs under rel to start at, never
                                through a link (glob's prefix); or NULL */
  /* Policy rules: every entry whose in-root path they deny for reading is
   * skipped before ignore rules or visit see it (a directory is not
   * entered) and counted in stats->skipped_policy. The start is not
   * checked; the literal dirs of below are. May be NULL. */
  const bw_rules *rules;
  const char *base;          /* in-root path of rel ("." the root); NULL:
                                rel made canonical (bw_canonical) */
  bw_nest *nest;             /* other roots' directories: below one, the
                                rules see its in-root paths (or NULL) */
  /* Entries whose in-root path these match (after rules and ignore files)
   * are neither visited nor entered until judge, called on the calling
   * thread (between waits, in batches of those met meanwhile), sets
   * allow[i] for each of the n; the worker that met one waits for its
   * verdict, holding nothing more than the directories it walks. An
   * allowed one is visited then (a directory walked, its own entries held
   * back in turn), a refused one is counted in stats->skipped_policy. judge returns 0, or a BW_* code that stops the
   * walk and is its result. Without judge, every such entry is refused.
   * A policy's check_paths: check() is asked before anything is opened,
   * in the one walk. NULL: none. */
  const bw_rules *defer;
  int (*judge)(void *judge_arg, const bw_wjudge *items, size_t n, unsigned char *allow);
  void *judge_arg;
} bw_walk_opts;

/* Walk the directory rel beneath the root with opts->threads workers,
 * calling visit for each entry. Directories and files are opened relative
 * to their parent's fd with O_NOFOLLOW; symlinks are reported, never
 * followed; other mounts are never entered. Returns once every worker is
 * done, or stopped (cancel, visit -1, a non-zero progress return). */
int bw_walk_run(const bw_root *r, const char *rel, const bw_walk_opts *o);
/* Number of workers a walk with threads=0 uses. */
int bw_walk_threads(int requested);

/* Open name in dirfd for reading if it is a regular file on the root's
 * mount: O_RDONLY|O_NOFOLLOW|O_NONBLOCK, then fstat/statx verified. */
int bw_open_regular(const bw_root *r, int dirfd, const char *name,
                    struct stat *st, int *fd);

/* Compare paths component-wise ('/' sorts before every other byte), the
 * order list_dir shows. */
int bw_path_cmp(const char *a, const char *b);

/* A sorted, capped set of results shared by workers: items are kept in
 * path order, and once `limit` units are held, anything sorting after the
 * last kept item is dropped and walks may prune it, so the answer is the
 * first `limit` units in path order, whatever the thread timing. */
typedef struct bw_item {
  char *path;
  size_t units; /* matches (or 1 for a file) */
} bw_item;

typedef struct bw_topn {
  pthread_mutex_t mu;
  bw_item **v;
  size_t n, cap, units, limit;
  _Atomic int full; /* set once, never cleared: read without the lock while 0 */
  int dropped;
  void (*free_item)(bw_item *);
} bw_topn;

void bw_topn_init(bw_topn *t, size_t limit, void (*free_item)(bw_item *));
/* Add an item (owned from now on); BW_ENOMEM if it could not be kept. */
int bw_topn_add(bw_topn *t, bw_item *it);
/* Would a path (and so anything below it) sort after the cap? */
int bw_topn_beyond(bw_topn *t, const char *path);
int bw_topn_is_full(bw_topn *t); /* the limit reached: adding may drop a kept item */
/* 1 if the set is full and path sorts after its last item: a walk in path
 * order would not have reached it. Nothing is marked dropped. */
int bw_topn_past(bw_topn *t, const char *path);
void bw_topn_free(bw_topn *t);

/* ---- required literals and the prefilter scan (prefilter.c) ---- */

enum { BW_MAX_LITS = 16, BW_MAX_LIT_LEN = 255 };

enum {
  BW_LITS_LITERAL = 1,   /* the pattern is a fixed string, not a regex */
  BW_LITS_CASELESS = 2,
  BW_LITS_MULTILINE = 4, /* matches may span lines: never pure */
};

/* One literal ready to scan for; next and from are a per-scan cache. */
typedef struct bw_lit {
  const unsigned char *s;
  size_t len;
  size_t i1, i2;                /* offsets of the two rarest bytes */
  unsigned char t1, t2, m1, m2; /* target and OR-mask (0x20 folds case) */
  int fold;
  size_t next;                  /* cached next hit, or (size_t)-1 */
  size_t from;                  /* where it was searched from, or (size_t)-1 */
} bw_lit;

/* Every match of the pattern contains one of lit[0..n). lit points into s:
 * a bw_lits is filled in place and never copied. */
typedef struct bw_lits {
  bw_lit lit[BW_MAX_LITS];
  int n;    /* 0: no prefilter worth running; the regex goes alone */
  int pure; /* a hit on the literal is the match: no regex needed */
  unsigned char s[BW_MAX_LITS][BW_MAX_LIT_LEN];
} bw_lits;

/* The prefilter of a pattern (BW_LITS_* flags). The pattern holds no NUL.
 * Syntax the parser does not model leaves n at 0, never a wrong literal. */
void bw_lits_init(bw_lits *l, const char *pat, size_t len, int flags);
/* A scan's own copy of the literals v[0..l->n), with nothing cached. */
void bw_lits_reset(bw_lit *v, const bw_lits *l);
/* The first hit of any of v[0..n) in h[from, len), or (size_t)-1. Each
 * literal's last answer is kept: it stays valid while from has not
 * passed it, so calls with growing from scan each byte about once. */
size_t bw_lits_next(bw_lit *v, int n, const unsigned char *h, size_t len,
                    size_t from);

/* ---- grep (grep.c) ---- */

enum { BW_GREP_CONTENT = 0, BW_GREP_FILES = 1, BW_GREP_COUNT = 2 };

/* Files from BW_GREP_MAP_MIN bytes are mapped (and split into chunks of
 * about BW_GREP_CHUNK, searched by several threads); smaller ones are read
 * into the worker's buffer: scanning a mapping's pages measured slower
 * than reading them (docs/benchmarks.md, grep on four shapes of corpus). */
enum { BW_GREP_CHUNK = 8 << 20, BW_GREP_MAP_MIN = 2 * BW_GREP_CHUNK };
/* In files mode the first match ends a file: a mapping touches only the
 * pages before it, where a read takes the whole file. */
enum { BW_GREP_FILES_MAP_MIN = 1 << 20 };

typedef struct bw_grep_opts {
  const char *pattern;
  size_t pattern_len;
  int literal, ignore_case, multiline;
  int mode;                 /* BW_GREP_* */
  size_t before, after;     /* context lines */
  size_t max_results;       /* matches (content) or files (files, count) */
  size_t max_file_size;     /* larger files are skipped and listed */
  size_t max_line;          /* longer lines are cut (bytes) */
  size_t max_skipped;       /* names kept per skipped list */
  const char *const *include; /* globs a file must match one of (or NULL) */
  size_t n_include;
  const char *const *exclude; /* globs that skip files and directories */
  size_t n_exclude;
  size_t max_ms;            /* wall-time budget of the whole search (0: none) */
  size_t max_bytes;         /* bytes read over all files (0: none) */
  /* Files of map_min bytes or more are mapped, not read (0: the default,
   * BW_GREP_MAP_MIN, or BW_GREP_FILES_MAP_MIN in files mode); a mapped
   * file of twice chunk_size or more is split into chunks of about
   * chunk_size searched by several threads (0: the default,
   * BW_GREP_CHUNK). Tests set them small to cross chunk edges. */
  size_t map_min, chunk_size;
  size_t chunk_margin; /* bytes read either side of a chunk (0: 64 KiB); tests set it small */
  size_t stream_block; /* bytes a large read file takes per read() after its first MiB
                          (0: 256 KiB); tests set it small to cut lines */
  const char *charsets; /* the fallback list of text that is not UTF-8 (charset.c; NULL: the default) */
  /* A cursor (content mode): only matches at or after line from_line of
   * from_path (a path as results have it, before the prefix), in path
   * order, are looked for: what sorts before is not walked. NULL: all. */
  const char *from_path;
  size_t from_line;
  bw_walk_opts walk;        /* threads, hidden, ignore, cancel, progress */
} bw_grep_opts;

/* Why a search ended before its end (bw_grep_res.limit). */
enum { BW_GREP_LIMIT_TIME = 1, BW_GREP_LIMIT_BYTES = 2 };

typedef struct bw_gline {
  size_t line;       /* 1-based */
  size_t off, len;   /* in the file's text, or segs[seg - 1] */
  char kind;         /* 'm' match, 'b' before, 'a' after */
  unsigned char seg; /* 0: text; a file searched in chunks names its chunk's */
} bw_gline;

/* Blocks of kept match text, freed all at once (stash.c). The newest
 * block may grow (bw_stash_grow with last NULL starts one); want < old
 * shrinks it. NULL when no memory. */
typedef struct bw_stash {
  struct bw_stash_chunk *head;
} bw_stash;
void *bw_stash_grow(bw_stash *s, void *last, size_t old, size_t want);
void bw_stash_take(bw_stash *to, bw_stash *from); /* from's chunks, to to */
void bw_stash_free(bw_stash *s);

typedef struct bw_gfile {
  bw_item item;   /* path, units */
  size_t count;   /* matching lines (count mode: all of them) */
  bw_gline *lines;
  size_t nlines, lcap;
  char *text;
  size_t tlen, tcap;
  bw_stash *stash; /* NULL: lines and text are malloc'd; else in stash[0] and [1] */
  const char **segs; /* malloc'd, or NULL: the chunks' texts (grepmap.c) */
} bw_gfile;

/* A kept line's bytes (len of them). */
static inline const char *bw_gline_text(const bw_gfile *f, const bw_gline *l) {
  return (l->seg ? f->segs[l->seg - 1] : f->text) + l->off;
}

typedef struct bw_grep_res {
  bw_gfile **files;  /* sorted by path */
  size_t nfiles;
  char **skipped_binary, **skipped_size; /* sorted, at most max_skipped */
  size_t listed_binary, listed_size;     /* names in those lists */
  size_t n_binary, n_size;               /* how many there were */
  size_t searched;   /* files read */
  size_t unreadable; /* files or directories that could not be opened */
  size_t skipped_policy; /* entries the walk's rules hid (a directory once) */
  size_t bytes;      /* read from the files searched */
  size_t chunked;    /* files searched in chunks by several threads */
  size_t streamed;   /* files read and searched in blocks (grep.c, stream_file) */
  /* files and count modes: the matching files and their matching lines
   * over the whole walk, listed or not (the walk is not pruned at the
   * list's cap); all of them unless cancelled or limit */
  size_t found_files, found_matches;
  int truncated, cancelled;
  int limit;         /* 0, or the budget that ended it: BW_GREP_LIMIT_* */
  bw_stash stash;    /* the files' lines and text, where kept in a stash */
} bw_grep_res;

/* Search files below rel. The pattern is compiled once (PCRE2 with JIT,
 * or a plain literal); a catastrophic pattern fails the call with
 * INVALID_ARGUMENT instead of running away. The cancel flag and the
 * budget (max_ms, max_bytes) end it early with what was found so far:
 * cancelled or limit set, and truncated. */
int bw_grep(const bw_root *r, const char *rel, const bw_grep_opts *o,
            bw_grep_res *res);
void bw_grep_res_free(bw_grep_res *res);
#ifdef BW_GREP_TEST_HOOK
/* In the test build of grep.c only (host/test/test_grep.c, compiled with
 * -DBW_GREP_TEST_HOOK; no installed file has it): called with a file's
 * path right after grep maps it (NULL: nothing), so a test can shrink it
 * under the search. */
extern void (*bw_grep_mapped_hook)(const char *path);
#endif

/* ---- content matches chosen and written as a reply (grepwire.c) ---- */

/* prefix + path as results name a file (a searched file itself, path "",
 * is the prefix without its trailing "/"); its length, written to out
 * (room for it) unless NULL. */
size_t bw_grep_path(const char *prefix, const char *path, char *out);

/* What one line of a content result (a match or a context line) costs
 * against max_result_bytes: its path, its text and 16 for the rest. The
 * one rule: bw_gsel cuts a search's matches by it, and core.grep_cut
 * (lsearch.c) cuts match tables by it when a policy has hidden some. */
static inline size_t bw_gline_cost(size_t path_len, size_t text_len) {
  return path_len + text_len + 16;
}

/* The matches a content result gives, in order: at most max (0: all);
 * with max_bytes (0: no cap) each match costs its lines' bw_gline_cost,
 * and the first that would pass the budget ends the result (cut), never
 * the very first. */
typedef struct bw_gsel {
  const bw_grep_res *r;
  const char *prefix;
  size_t room, budget;
  int capped, cut;
  size_t file, line; /* where the next match is looked for */
  size_t plen;       /* the current file's path length */
  size_t n;          /* matches given so far */
  size_t last_file;  /* file + 1 of the last match given, 0: none */
} bw_gsel;

/* One match: its file and line indices, before lines [b, m), the match
 * m, after lines (m, a). */
typedef struct bw_gpick {
  const bw_gfile *f;
  size_t b, m, a;
  int first_of_file; /* the first match given from this file */
} bw_gpick;

void bw_gsel_init(bw_gsel *s, const bw_grep_res *r, const char *prefix, size_t max,
                  size_t max_bytes);
/* 1 and the next match in *p, or 0 at the end (s->cut: the budget ended it) */
int bw_gsel_next(bw_gsel *s, bw_gpick *p);

/* The chosen matches as the bytes the JSON encoder gives for grep's table
 * form: json, the `matches` array; text (want_text), the lines as
 * a result shows them (bw_gtext below: "\n" between, none after), escaped as
 * the inside of a JSON string, text_raw its unescaped length. */
typedef struct bw_grep_wire_out {
  char *json, *text; /* malloc'd */
  size_t json_len, text_len, text_raw;
  size_t n; /* matches written */
  int cut;  /* max_bytes ended them */
} bw_grep_wire_out;

/* Where a search capped after `shown` matches (as bw_gsel picks them)
 * resumes: the first match not shown, *file (an index in r->files) and
 * *line; or, when the kept results hold no further match, the line after
 * the last one shown. 0 if there is neither. Exact only for a search
 * that walked to its end (not cancelled, no budget stop): then the kept
 * files are the first in path order. */
int bw_grep_resume(const bw_grep_res *r, size_t shown, size_t *file, size_t *line);

int bw_grep_wire(const bw_grep_res *r, const char *prefix, size_t max, size_t max_bytes,
                 int context, int want_text, bw_grep_wire_out *w);
void bw_grep_wire_free(bw_grep_wire_out *w);

/* grep's files or counts list as a reply (files and count modes): json,
 * the array as the encoder writes the table form (strings, or objects
 * {"count":N,"path":P}: keys sorted); text (want_text), the render's lines
 * (P, or P:N), "\n" between, escaped as the inside of a JSON string,
 * text_raw its unescaped length. paths are the names as shown (prefixed);
 * counts NULL for the files list. */
int bw_grep_list_wire(char *const *paths, const size_t *lens, const long long *counts,
                      size_t n, int want_text, bw_grep_wire_out *w);

/* What a name costs in a files or counts list against max_result_bytes
 * (grep.lua cut the tables by these): its length + 1, or + 12 with a count. */
static inline size_t bw_glist_cost(size_t path_len, int counts) {
  return path_len + (counts ? 12 : 1);
}

/* grep's lines as a result shows them, written by one renderer whatever
 * holds the matches (a search's picks above, a result's match tables:
 * lsearch.c): path:N:text for a match, path-N-text for a context line,
 * "--" before a match with context whose lines do not run on from the
 * last (a new path, or a gap); "\n" between lines, none after. With esc,
 * escaped as the inside of a JSON string (raw: the unescaped length). */
typedef struct bw_obuf {
  char *p;
  size_t n, cap;
} bw_obuf;

/* The writers' buffer (grepwire.c): room for extra more bytes (0 or
 * BW_ENOMEM); appends unchecked, room reserved before; a number; s
 * escaped as the inside of a JSON string (jsonesc.c), reserving itself. */
int bw_obuf_reserve(bw_obuf *o, size_t extra);
static inline void bw_obuf_put(bw_obuf *o, const void *s, size_t n) {
  memcpy(o->p + o->n, s, n);
  o->n += n;
}
#define BW_OB_LIT(o, s) bw_obuf_put(o, s, sizeof(s) - 1)
void bw_obuf_int(bw_obuf *o, long long v);
int bw_obuf_escape(bw_obuf *o, const char *s, size_t n);

typedef struct bw_gstr {
  const char *s;
  size_t len;
} bw_gstr;

typedef struct bw_gtext {
  bw_obuf buf;           /* the text */
  size_t raw;            /* its unescaped length */
  int esc, started;
  long long last_line;   /* the last line written */
  char *path, *ep;       /* the last path, and as lines write it */
  size_t plen, pcap, elen, ecap;
  bw_gstr *scratch;      /* a pick's lines (bw_grep_wire) */
  size_t nscratch;
} bw_gtext;

void bw_gtext_init(bw_gtext *t, int esc);
/* room for n more bytes at once (a first guess); 0 or BW_ENOMEM */
int bw_gtext_reserve(bw_gtext *t, size_t n);
/* One match at line `line` of path: lines holds its nb before lines, the
 * match and its na after lines, in order; context: it was asked with
 * context (the "--" rule). 0 or BW_ENOMEM. */
int bw_gtext_match(bw_gtext *t, const char *path, size_t plen, long long line,
                   const bw_gstr *lines, size_t nb, size_t na, int context);
/* The text (malloc'd, NULL when empty), its length and unescaped length;
 * t is freed. */
char *bw_gtext_take(bw_gtext *t, size_t *len, size_t *raw);
void bw_gtext_free(bw_gtext *t);

/* ---- glob search (glob.c) ---- */

typedef struct bw_glob_opts {
  int types;          /* bit set: 1 file, 2 dir, 4 symlink, 8 other */
  int by_mtime;       /* sort newest first instead of by path */
  size_t max_results;
  size_t count_limit; /* stop collecting (mtime sort) here */
  bw_walk_opts walk;
} bw_glob_opts;

typedef struct bw_gitem {
  bw_item item;
  char type;
  long long size;
  struct timespec mtime;
} bw_gitem;

typedef struct bw_glob_res {
  bw_gitem **items;
  size_t n;
  size_t skipped_policy; /* entries the walk's rules hid (a directory once) */
  int truncated, cancelled;
} bw_glob_res;

/* Entries below rel whose path relative to rel matches pattern. The walk
 * starts at the pattern's literal directory prefix and prunes directories
 * no match can lie below. */
int bw_glob_search(const bw_root *r, const char *rel, const char *pattern,
                   size_t len, const bw_glob_opts *o, bw_glob_res *res);
void bw_glob_res_free(bw_glob_res *res);

/* ---- glob's entries written as a reply (globwire.c) ---- */

typedef struct bw_glob_wire_out {
  char *json;        /* the entries array, a JSON value */
  size_t json_len;
  char *text;        /* the listing, escaped (with want_text) */
  size_t text_len, text_raw;
  size_t n;          /* entries written */
  int cut;           /* max_bytes cut the list */
} bw_glob_wire_out;

/* r's entries, their paths prefix + path, as the `entries` array JSON
 * the encoder writes and (want_text) the listing glob renders; past
 * max_bytes (a path costs its length + 1) the rest is cut, never the
 * first. 0 or BW_ENOMEM. */
int bw_glob_wire(const bw_glob_res *r, const char *prefix, size_t max_bytes,
                 int want_text, bw_glob_wire_out *w);
void bw_glob_wire_free(bw_glob_wire_out *w);

#endif
