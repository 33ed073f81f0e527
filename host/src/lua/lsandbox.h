/*
 * lsandbox.h - what the policy sandbox's two files share (binding side):
 * the sandbox's state and budget (lsandbox.c) and the library functions
 * charged by the work they do (lsbcharge.c). Not a public header.
 */
#ifndef BURROW_LSANDBOX_H
#define BURROW_LSANDBOX_H

#include <lua.h>
#include <stddef.h>
#include <stdint.h>

enum { STOP_BYTES = 256 };

/* What one instruction unit of the budget buys inside a library call:
 * about the time a VM instruction takes (a few ns). */
enum {
  ALLOC_BYTES = 128, /* bytes allocated (copies, concatenation, results) */
  SCAN_BYTES = 16,   /* bytes parsed or decoded (tonumber, utf8, format) */
  PATTERN_STEPS = 16, /* steps of a pattern function's bound (a step is 0.2-0.7 ns) */
  PLAIN_BYTES = 16,  /* bytes a plain find searches (memmem: up to 4 ns a byte on near-matches) */
};

/* What a match costs gsub beyond the matcher, in steps: a replacement
 * function's call with up to 32 captures (its own work is counted as it
 * runs), a lookup per table of a replacement table's __index chain, the
 * bytes of a replacement string (scanned, escapes expanded); and pushing
 * gmatch's captures. */
enum { CALL_STEPS = 16, CAPTURE_STEPS = 4 * 32 };

typedef struct sandbox {
  lua_State *S;
  size_t used, limit;
  long budget, left;   /* instruction units per call, and what is left */
  long since_clock;    /* units charged by library calls since the clock was read */
  int64_t ms, deadline; /* the time limit per call (ms), and when this call's ends */
  char stop[STOP_BYTES]; /* why the call stops, once it must ("" until then) */
  lua_Integer epoch;   /* counts the calls: what a gmatch iterator paid for */
} sandbox;

/* Every thread of the sandbox finds its sandbox in its extra space (a
 * new thread copies the main thread's). */
static inline sandbox *sb_of(lua_State *S) {
  return *(sandbox **)lua_getextraspace(S);
}

/* Take n units off what is left; at worst -1, so it cannot wrap. */
static inline void take(sandbox *sb, double n) {
  if (n >= (double)sb->left + 1) sb->left = sb->left < 0 ? sb->left : -1;
  else if (n > 0) sb->left -= (long)n;
}

/* The kinds of cost a charged library function pays (bw_sb_push_charged). */
enum {
  C_ARGS,   /* the arguments: one unit each, and their strings' bytes */
  C_BYTE,   /* string.byte: the values pushed */
  C_REP,    /* string.rep: the copies (the bytes are allocated) */
  C_CONCAT, /* table.concat: the elements in [i, j] */
  C_UNPACK, /* table.unpack: the elements in [i, j] */
  C_MOVE,   /* table.move: the elements moved */
  C_INSERT, /* table.insert: the elements shifted */
  C_REMOVE, /* table.remove: the elements shifted */
  C_SORT,   /* table.sort: n log n comparisons */
  C_UTF8,   /* utf8.len, utf8.codepoint, utf8.offset: the bytes decoded */
  C_CODES,  /* utf8.codes' iterator: the continuation bytes skipped */
  C_FIND,   /* the pattern functions: the bound of their work (patcost.c) */
  C_MATCH,
  C_GMATCH,
  C_GSUB,
  C_STEP,   /* gmatch's iterator: what its gmatch paid, once per call */
};

/* Whether the call must stop (the budget spent, or with clock the time);
 * sb->stop says why. */
int bw_sb_over(sandbox *sb, int clock);
/* Stop the call for good, raising sb->stop. */
void bw_sb_halt(lua_State *S, sandbox *sb);
/* Pay units of work a library function is about to do, or stop. */
void bw_sb_charge(lua_State *S, double units);

/* Replace the function on top of S by its charged closure. */
void bw_sb_push_charged(lua_State *S, int kind);
/* utf8.codes with its iterator charged (upvalue 1: the stock function). */
int bw_sb_charged_codes(lua_State *S);
/* size("100MB") -> 100000000, the host's size syntax, for options. */
int bw_sb_size(lua_State *S);


#endif
