/*
 * edit.h - the edit engine (edit.c, with its matching ladder in match.c
 * and its diff in diff.c) and the other mutations beneath a root
 * (mutate.c). Plain C over bytes and root fds: no Lua here. Functions
 * return a bw_code and fill out-parameters, as in core.h.
 */
#ifndef BURROW_EDIT_H
#define BURROW_EDIT_H

#include "core.h"

/* ---- matching and splicing (edit.c) ---- */

/* Matching levels, strictest first; match = "loose" tries them in order. */
enum {
  BW_LEVEL_EXACT = 0, /* bytes (an LF old_text matches CRLF lines) */
  BW_LEVEL_RSTRIP,    /* whole lines, trailing whitespace ignored */
  BW_LEVEL_INDENT,    /* whole lines, indentation ignored, new_text re-indented */
  BW_LEVEL_UNICODE,   /* and Unicode punctuation folded (quotes, dashes, NBSP) */
  BW_LEVELS
};
const char *bw_level_name(int level);

typedef struct bw_edit {
  const char *old_text;
  size_t old_len;
  const char *new_text;
  size_t new_len;
  int replace_all;
  size_t count; /* out: replacements made */
  int level;    /* out: the level that matched */
  size_t line;  /* out: 1-based line of the first match */
} bw_edit;

enum { BW_DIAG_LINES = 20, BW_DIAG_TEXT = 160 };

/* Why an edit failed, for a message that teaches. Lines are 1-based. */
typedef struct bw_edit_diag {
  size_t edit;                  /* the failing edit (0-based) */
  size_t other;                 /* OVERLAPPING_EDITS: the edit it overlaps */
  int level;                    /* AMBIGUOUS_TEXT: the level that found several */
  size_t matches;               /* AMBIGUOUS_TEXT: how many places */
  size_t lines[BW_DIAG_LINES];  /* AMBIGUOUS_TEXT: the first of their lines */
  size_t nlines;
  size_t near_line;             /* NOT_FOUND_TEXT: nearest candidate, 0 = none */
  int near_level;               /* a looser level that matches there, or -1 */
  int near_percent;             /* how similar the nearest line is */
  char near_text[BW_DIAG_TEXT]; /* the file's line there */
  size_t diverge_line;          /* first file line where the block differs */
  char want_text[BW_DIAG_TEXT]; /* old_text's line there */
  char have_text[BW_DIAG_TEXT]; /* the file's line there */
  const char *differs;          /* what differs there ("indentation", ...) */
  size_t reindent_line;         /* AMBIGUOUS_TEXT: new_text's line (1-based) that
                                   cannot be re-indented without guessing (its
                                   text in near_text; diverge_line, want_text,
                                   have_text: where old's indents disagree) */
  size_t found_line;            /* AMBIGUOUS_TEXT on the loose ladder: old_text
                                   is at this line with its own indentation
                                   (found_level: exact or trailing_whitespace),
                                   but the indentation level finds it at every
                                   line of lines[]; 0 otherwise */
  int found_level;
  int after_indent;             /* AMBIGUOUS_TEXT with reindent_line: old_text
                                   matched lines[0] only from after that line's
                                   indentation (the line in have_text), and
                                   nothing says whether new_text's later lines
                                   are in the file's terms or old_text's */
} bw_edit_diag;

typedef struct bw_edit_opts {
  int loose;       /* try the ladder past the exact level */
  size_t context;  /* lines of diff context */
  size_t max_diff; /* diff bytes kept (whole lines); the rest is cut */
  const bw_stop *stop; /* asked before each edit is matched (may be NULL):
                          a cancel or the time budget ends the computation,
                          nothing is written */
  size_t index_min; /* edits from which their exact places are found in one
                       pass (bw_exact_index); 0: BW_INDEX_MIN */
} bw_edit_opts;

typedef struct bw_edit_out {
  char *text; /* the new content (malloc'd) */
  size_t len;
  char *diff; /* unified hunks ("@@ ..."), no file headers; NUL-terminated */
  size_t diff_len;
  int diff_truncated;
  size_t first_line; /* first changed line */
  size_t added, removed;
  size_t total_lines; /* lines of the original */
  size_t placed;      /* bytes of new text placed (per replacement) */
  bw_edit_diag diag;
} bw_edit_out;

/* Apply every edit to data (each matched against the original; all or
 * nothing). Line endings, BOM and the bytes outside the matched spans are
 * kept; new_text takes the line ending of the span it replaces. */
int bw_edit_apply(const char *data, size_t len, bw_edit *e, size_t n,
                  const bw_edit_opts *o, bw_edit_out *out);
/* Insert text as lines before line (1-based; total + 1 appends). */
int bw_insert_apply(const char *data, size_t len, size_t line, const char *text,
                    size_t tlen, const bw_edit_opts *o, bw_edit_out *out);
void bw_edit_out_free(bw_edit_out *out);
/* new re-indented by the change that turns old's lines into block's (the
 * same lines, indented otherwise: the indentation level's rule), as LF
 * text; BW_AMBIGUOUS_TEXT with *bad = new's line (1-based) that cannot
 * be placed without guessing. For line matchers outside this engine
 * (codex's apply_patch). */
int bw_reindent(const char *old, size_t olen, const char *block, size_t blen,
                const char *neu, size_t nlen, char **out, size_t *out_len,
                size_t *bad);

/* The same on a file beneath a root: read, apply, then an atomic
 * compare-and-set write against the hash of what was read. */
typedef struct bw_edit_file_opts {
  bw_edit_opts e;
  const char *expected_hash; /* NULL or "sha256:<hex>" */
  int dry_run;               /* compute, write nothing */
  size_t max_bytes;          /* largest file edited (max_file_size) */
  size_t keep_original;      /* copy the old bytes out up to this size */
  /* Asked once the edit is computed, before anything is written, with the
   * bytes it places (each replacement counted: a replace_all of N places
   * counts N times): 0 to write, else a code (nothing is written). */
  int (*commit)(void *ud, size_t bytes);
  void *commit_ud;
  const char *charset; /* the file's encoding, or NULL: detected (charset.c) */
  const char *charsets; /* the fallback list detection ends with (NULL: the default) */
} bw_edit_file_opts;

typedef struct bw_edit_file_res {
  bw_edit_out out;
  size_t old_size;
  char old_hash[BW_HASH_STR];
  char hash[BW_HASH_STR];
  char current_hash[BW_HASH_STR]; /* HASH_MISMATCH: what is there now */
  char *original;                 /* the old bytes when kept, else NULL */
  size_t original_len;
  char charset[48];               /* the encoding read and written back */
  int charset_failed;             /* the failure is the encoding's, not an edit's */
} bw_edit_file_res;

int bw_edit_file(const bw_root *r, const char *rel, bw_edit *e, size_t n,
                 const bw_edit_file_opts *o, bw_edit_file_res *res);
int bw_insert_file(const bw_root *r, const char *rel, size_t line,
                   const char *text, size_t tlen, const bw_edit_file_opts *o,
                   bw_edit_file_res *res);
void bw_edit_file_res_free(bw_edit_file_res *res);

/* A regular file's bytes in memory of our own (malloc'd: a mapping could
 * shrink under its user), at most max bytes. */
int bw_read_copy(const bw_root *r, const char *rel, size_t max, char **data,
                 size_t *len);

/* ---- inside the engine: shared by edit.c, match.c and diff.c ---- */

enum { EOL_NONE, EOL_LF, EOL_CRLF, EOL_MIXED };
#define NO_LINE ((size_t)-1) /* a match that is not whole lines */
#define NO_POS ((size_t)-1)  /* no match at this position */

/* A growable buffer; oom sticks, so callers check once at the end. */
typedef struct sbuf {
  char *p;
  size_t len, cap;
  int oom;
} sbuf;

void bw_sb_put(sbuf *b, const void *s, size_t n);
void bw_sb_putc(sbuf *b, char c);

typedef struct slice {
  const char *p;
  size_t n;
} slice;

/* The file as lines. */
typedef struct view {
  const char *s; /* the body: the bytes after a BOM */
  size_t n;
  size_t bom;
  int eol;
  size_t *ls; /* line starts; ls[nl] == n */
  size_t nl;
} view;

/* End of line i's text: before its "\n" or "\r\n". */
size_t bw_line_end(const view *v, size_t i);
/* The line holding pos (nl for the end of a file ending in a newline). */
size_t bw_line_of(const view *v, size_t pos);
/* Does the file's last line lack a newline? */
int bw_file_ends_open(const view *v);
/* LF text with every "\n" written as eol (malloc'd). */
char *bw_eol_copy(const char *s, size_t n, const char *eol, size_t *out);

/* One edit's texts, made ready to match. */
typedef struct pat {
  char *old; /* old_text with LF line endings and no BOM */
  size_t olen;
  char *neu; /* new_text likewise */
  size_t nlen;
  char *old_crlf; /* old in CRLF, for CRLF files */
  size_t old_crlf_len;
  char *neu_crlf;
  size_t neu_crlf_len;
  slice *lines; /* old's lines (its final newline excluded) */
  size_t k;
  int trail_nl;  /* old ends with a newline */
  slice *norm;   /* old's lines at the level in use */
  sbuf normbuf;  /* bytes of folded lines */
  int norm_level;
  size_t *occ;   /* with occ_ready: every place old (as the file's line
                  * endings write it) starts, in order (bw_exact_index) */
  size_t occ_n, occ_cap;
  int occ_ready;
} pat;

typedef struct match {
  size_t start, end;
  size_t line; /* first file line of a whole-line match, else NO_LINE */
} match;

typedef struct mlist {
  match *m;
  size_t n, cap;
} mlist;

/* s without trailing (and with left, leading) horizontal whitespace. */
slice bw_trim(const char *s, size_t n, int left);
/* s's indentation: its leading spaces and tabs. */
slice bw_lead(const char *s, size_t n);
/* The exact places of many edits' old texts found in one pass over the
 * file, not one pass each (a call of 5,000 edits read an 8.6 MB file
 * 5,000 times): for n >= min patterns in a file of one line
 * ending style, each pattern's places go to its occ, which find_exact
 * then reads. Nothing is indexed (each searches alone, as before) for a
 * mixed file, past BW_INDEX_MAX places in all, past 8 times the bytes of
 * the file and the patterns compared (patterns sharing their first bytes
 * in a file full of them), or when stopped. */
enum { BW_INDEX_MIN = 8, BW_INDEX_MAX = 1 << 20 };
int bw_exact_index(const view *v, pat *p, size_t n, size_t min, const bw_stop *stop);
/* Every place p matches at level into ml (disjoint: replace_all's places). */
int bw_find_level(const view *v, pat *p, int level, int disjoint, mlist *ml);
/* Why p is not in the file at levels up to tried (NOT_FOUND_TEXT). */
int bw_diagnose(const view *v, pat *p, int tried, bw_edit_diag *d);
/* One line for a message into dst (BW_DIAG_TEXT bytes). */
void bw_diag_excerpt(char *dst, const char *s, size_t n);
/* The lines of several matches (AMBIGUOUS_TEXT). */
void bw_list_lines(const view *v, const mlist *ml, bw_edit_diag *d);

/* A matched byte range and what replaces it. */
typedef struct span {
  size_t start, end;
  const char *repl;
  size_t rlen;
  int owned;
  size_t edit;
} span;

typedef struct spans {
  span *s;
  size_t n, cap;
} spans;

/* The unified hunks of the spans (sorted, disjoint) into out->diff. */
int bw_make_diff(const view *v, const spans *sp, const bw_edit_opts *o,
                 bw_edit_out *out);

/* ---- other mutations (mutate.c) ---- */

/* What the mutations (mutate.c), the staged subtree operations (stage.c)
 * and the atomic write share, in tree.c below all three (a directory's
 * names: dir.c; bw_write_all: write.c): a mutation's errno as a code (EINVAL, EBUSY, EXDEV, ENOTEMPTY worded);
 * whether st (of dirfd/name, "" for dirfd itself) is on r's own mount;
 * a directory's fsync; the parent and final name of a mutation's object
 * (why: the refusal for the root, "." and ".."); a directory's names
 * ("." and ".." and staged names left out); rename without replacing
 * (link and unlink for files where the filesystem has no
 * RENAME_NOREPLACE); a tree's removal by fds. */
int bw_mut_errno(int e);
int bw_same_mount(const bw_root *r, int dirfd, const char *name,
                  const struct stat *st);
int bw_sync_dir(int dirfd);
int bw_parent_of(const bw_root *r, const char *rel, int *dirfd,
                 char name[BW_NAME_MAX + 1], int *trailing, const char *why);
/* The names of the directory open at fd ("." and ".." and staged trees
 * left out; dir.c): with BW_NAMES_HIDDEN the dot names too, with
 * BW_NAMES_SORTED in strcmp order. Free with bw_free_names. */
enum { BW_NAMES_HIDDEN = 1, BW_NAMES_SORTED = 2 };
int bw_read_names(int fd, int flags, char ***out, size_t *count);
void bw_free_names(char **names, size_t n);
/* All n bytes of p to fd, EINTR retried (write.c). */
int bw_write_all(int fd, const char *p, size_t n);
int bw_rename_noreplace(int sdir, const char *sname, int ddir,
                        const char *dname, const struct stat *st);

/* mkdir; parents = mkdir -p. *created is 0 when it already existed. */
int bw_mkdir(const bw_root *r, const char *rel, int parents, int *created);

typedef struct bw_remove_res {
  size_t files; /* non-directories removed (links count here) */
  size_t dirs;
} bw_remove_res;

/* Remove a file, a link (never its target) or, with recursive, a tree.
 * Never follows links, never crosses a mount, refuses the root itself. An
 * expected_hash makes removing a regular file compare-and-set. stop (may
 * be NULL) is asked before each entry of a tree: a stopped removal leaves
 * the rest in place and res counts what went. */
int bw_remove(const bw_root *r, const char *rel, int recursive,
              const char *expected_hash, const bw_stop *stop,
              bw_remove_res *res);

/* Empty and remove the directory (parent, name) through fds of its own. */
int bw_remove_tree(const bw_root *r, int parent, const char *name,
                   const bw_stop *stop, bw_remove_res *res);

/* rename; RENAME_NOREPLACE unless overwrite. A link moves as a link. */
int bw_move(const bw_root *rs, const char *src, const bw_root *rd,
            const char *dst, int overwrite);

typedef struct bw_copy_opts {
  int overwrite;
  int recursive;
  size_t max_bytes;    /* largest file copied */
  const bw_stop *stop; /* asked before each entry of a tree (may be NULL);
                          a stopped copy leaves what it made, counted in res */
} bw_copy_opts;

typedef struct bw_copy_res {
  size_t files, dirs, links, skipped;
  size_t bytes;
  char hash[BW_HASH_STR]; /* a single file's content hash */
} bw_copy_res;

/* Copy a file, or with recursive a tree (links copied as links, FIFOs and
 * devices skipped, mounts not entered). Writes go through bw_write_file.
 * copy.c: a tree through the stager, anything else bw_copy_file. */
int bw_copy(const bw_root *rs, const char *src, const bw_root *rd,
            const char *dst, const bw_copy_opts *o, bw_copy_res *res);
/* The same for one file (mutate.c): a directory is EISDIR without
 * recursive, and with it (it became one after bw_copy looked) EAGAIN. */
int bw_copy_file(const bw_root *rs, const char *src, const bw_root *rd,
                 const char *dst, const bw_copy_opts *o, bw_copy_res *res);

typedef struct bw_append_res {
  int created;
  size_t old_size, size;
  char hash[BW_HASH_STR]; /* of the whole file after the append */
} bw_append_res;

/* Append with O_APPEND on the resolved file; create it when absent. */
int bw_append(const bw_root *r, const char *rel, const void *data, size_t len,
              int create_dirs, size_t max_bytes, bw_append_res *res);

#endif
