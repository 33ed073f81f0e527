/*
 * rpcid.c - JSON-RPC request ids as values, and the answer to a ping
 * (rpcid.h): one comparison and one reply for both transports.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rpcid.h"

void bw_rpcid_clear(bw_rpcid *r) {
  free(r->s);
  memset(r, 0, sizeof *r);
}

void bw_rpcid_move(bw_rpcid *b, bw_rpcid *a) {
  bw_rpcid_clear(b);
  *b = *a;
  memset(a, 0, sizeof *a);
}

void bw_rpcid_from_string(bw_rpcid *r, const char *s, size_t len) {
  bw_rpcid_clear(r);
  if (!(r->s = malloc(len ? len : 1))) return;
  memcpy(r->s, s, len);
  r->len = len;
  r->type = BW_RPCID_STR;
}

void bw_rpcid_from_int(bw_rpcid *r, long long i) {
  bw_rpcid_clear(r);
  r->type = BW_RPCID_INT;
  r->i = i;
}

void bw_rpcid_from_real(bw_rpcid *r, double d) {
  bw_rpcid_clear(r);
  r->type = BW_RPCID_REAL;
  r->d = d;
}

void bw_rpcid_from_json(bw_rpcid *r, const json_t *j) {
  bw_rpcid_clear(r);
  if (json_is_integer(j)) bw_rpcid_from_int(r, (long long)json_integer_value(j));
  else if (json_is_real(j)) bw_rpcid_from_real(r, json_real_value(j));
  else if (json_is_string(j)) bw_rpcid_from_string(r, json_string_value(j), json_string_length(j));
}

void bw_rpcid_from_text(bw_rpcid *r, const char *json) {
  bw_rpcid_clear(r);
  json_t *j = json ? json_loads(json, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL) : NULL;
  if (j) bw_rpcid_from_json(r, j);
  json_decref(j);
}

int bw_rpcid_equal(const bw_rpcid *a, const bw_rpcid *b) {
  if (a->type != b->type || a->type == BW_RPCID_NONE) return 0;
  if (a->type == BW_RPCID_INT) return a->i == b->i;
  if (a->type == BW_RPCID_REAL) return a->d == b->d;
  return a->len == b->len && !memcmp(a->s, b->s, a->len);
}

void bw_rpcgone_add(bw_rpcgone *g, bw_rpcid *r) {
  if (r->type == BW_RPCID_NONE) return;
  bw_rpcid_move(&g->id[g->next], r);
  g->next = (g->next + 1) % BW_RPCGONE_MAX;
}

int bw_rpcgone_take(bw_rpcgone *g, const bw_rpcid *r) {
  int found = 0;
  for (int i = 0; i < BW_RPCGONE_MAX; i++) /* unused slots are NONE: equal nothing */
    if (bw_rpcid_equal(&g->id[i], r)) {
      bw_rpcid_clear(&g->id[i]);
      found = 1;
    }
  return found;
}

void bw_rpcgone_clear(bw_rpcgone *g) {
  for (int i = 0; i < BW_RPCGONE_MAX; i++) bw_rpcid_clear(&g->id[i]);
  g->next = 0;
}

char *bw_rpc_pong(const json_t *id, size_t *len) {
  char *text = json_dumps(id ? id : json_null(), JSON_ENCODE_ANY | JSON_COMPACT);
  if (!text) return NULL;
  size_t cap = strlen(text) + 64;
  char *out = malloc(cap);
  int n = out ? snprintf(out, cap, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{}}", text) : -1;
  free(text);
  if (n < 0 || (size_t)n >= cap) {
    free(out);
    return NULL;
  }
  *len = (size_t)n;
  return out;
}
