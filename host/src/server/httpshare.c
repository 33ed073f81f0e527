/*
 * httpshare.c - sessions every instance serves: with a deployment's store
 * (opts.store: Redis or Valkey behind several instances), a session's
 * record lives there (the Lua worker writes it: lua/burrow/mcp/sessionstore.lua)
 * and every request of a session asks the store first (one round trip):
 * one this instance has never seen is served like any other once the
 * store has it for the request's token, one the store no longer has
 * (deleted through another instance, expired) is 404 here too. No sticky
 * proxy: any instance takes any request of any session. The record's
 * version goes with the request to the worker, which reads the record
 * again only when it is not the one it holds.
 *
 * The record is the store's "session/<id>" under the session's tenant; its
 * first line names the token that opened it ("burrow-session 1 <token id>"
 * or "-" without tokens), the session's state follows as JSON. Only the
 * first line is read here; the worker reads the rest.
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "httpint.h"
#include "state.h"

#define SHARE_MAGIC "burrow-session 1 "

int bwh_shared(const bw_http *h) { return h->o.store != NULL; }

/* A session id as bwh_session_new makes them (32 lowercase hex digits):
 * anything else is no key of ours, never sent to the store. */
static int id_ok(const char *sid) {
  size_t n = 0;
  for (; sid[n]; n++)
    if (n >= 32 || !((sid[n] >= '0' && sid[n] <= '9') || (sid[n] >= 'a' && sid[n] <= 'f'))) return 0;
  return n == 32;
}

/* The token id a record names: the first 16 hex digits of its sha256 (an
 * OAuth principal's: of iss and sub), as lua/burrow/transport/http.lua's principal;
 * "-" without authentication. */
void bwh_token_id(const bw_http *h, int token, const bw_oauth_who *who, char out[17]) {
  if (token < 0) {
    snprintf(out, 17, "-");
    return;
  }
  snprintf(out, 17, "%.16s", who->set ? who->id : h->o.tokens[token].sha256);
}

static int tenant_of(const bw_http *h, int token) {
  return token >= 0 ? h->o.tokens[token].tenant : 0;
}

/* Does the store hold session sid for this token? 1 yes (its record's
 * version in *version), 0 no, -1 the store did not answer. */
static int held(bw_http *h, int token, const bw_oauth_who *who, const char *sid,
                uint64_t *version) {
  if (h->checker && atomic_load(&h->checker->ok) == 0) return -1; /* known down: no wait */
  char key[48], want[17];
  snprintf(key, sizeof key, "session/%s", sid);
  bwh_token_id(h, token, who, want);
  char *val = NULL;
  size_t len = 0;
  if (bw_state_get(h->o.store, bwh_tenant_name(h, tenant_of(h, token)), key, &val, &len,
                   version) != BW_OK)
    return -1;
  int ok = 0;
  size_t m = strlen(SHARE_MAGIC), w = strlen(want);
  if (val && len > m + w && !memcmp(val, SHARE_MAGIC, m) && !memcmp(val + m, want, w) &&
      val[m + w] == '\n')
    ok = 1;
  free(val);
  return ok;
}

int bwh_share_check(bw_http *h, int token, const bw_oauth_who *who, const char *addr,
                    const char *sid, uint64_t *version) {
  *version = 0;
  if (!sid || !bwh_shared(h)) return 0;
  pthread_mutex_lock(&h->mu);
  session *s = bwh_session_find(h, sid);
  int listen = s && (s->listen || s->stateless); /* never in the store */
  pthread_mutex_unlock(&h->mu);
  if (listen) return 0;
  if (!id_ok(sid)) return 404;
  int r = held(h, token, who, sid, version); /* outside the lock: a round trip to the store */
  if (r < 0) return 503;
  pthread_mutex_lock(&h->mu);
  s = bwh_session_find(h, sid);
  if (!r) {
    /* ended on another instance (deleted, or expired there): here too */
    if (s && bwh_session_owned(s, token, who)) bwh_session_close(h, s, "gone from the store");
    pthread_mutex_unlock(&h->mu);
    return 404;
  }
  if (!s) { /* another instance's session: served here from now on too */
    s = bwh_session_new(h, token, who, addr, 0);
    if (s) {
      snprintf(s->id, sizeof s->id, "%s", sid);
      bwh_log(h, "session %.8s adopted from the store addr=%s tenant=%s", s->id, addr,
              bwh_tenant_name(h, s->tenant));
    }
  }
  pthread_mutex_unlock(&h->mu);
  return 0;
}

void bwh_share_forget(bw_http *h, int token, const char *sid) {
  if (!sid || !bwh_shared(h) || !id_ok(sid)) return;
  char key[48];
  snprintf(key, sizeof key, "session/%s", sid);
  int deleted = 0;
  /* the caller checked the token (the session was found for it) */
  (void)bw_state_del(h->o.store, bwh_tenant_name(h, tenant_of(h, token)), key, 0, &deleted);
  bwh_evlog_forget(h, tenant_of(h, token), sid); /* its streams' events (httpevlog.c) */
}
