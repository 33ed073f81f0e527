/*
 * httpera.c - which era of MCP a POST speaks, and the checks of the
 * stateless revision (2026-07-28) that HTTP owns.
 *
 * The session revisions (2025-11-25 and earlier) open a session with
 * initialize and name it in Mcp-Session-Id. A request of 2026-07-28
 * carries everything in itself: its revision in the MCP-Protocol-Version
 * header and again in params._meta, the client's capabilities in _meta,
 * its method in Mcp-Method and, for the methods that name a tool, prompt
 * or resource, that name in Mcp-Name. A proxy routes on the headers, the
 * server acts on the body, so the two must agree: a request whose headers
 * and body differ is refused (400, -32020) before any worker sees it,
 * and so is one that repeats a header the two could read differently.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core.h"
#include "httpint.h"
#include "mhd.h"

#define META_VERSION "io.modelcontextprotocol/protocolVersion"
#define META_CAPS "io.modelcontextprotocol/clientCapabilities"

static const char *const SESSION_ERA[] = {"2025-11-25", "2025-06-18", "2025-03-26",
                                          "2024-11-05", NULL};
static const char *const STATELESS[] = {"2026-07-28", NULL};

/* The methods of the stateless revision burrow serves; another is 404
 * (among them those it removed: initialize, ping, logging/setLevel,
 * resources/subscribe). */
static const char *const METHODS[] = {
    "server/discover",  "tools/list",     "tools/call",
    "resources/list",   "resources/read", "resources/templates/list",
    "prompts/list",     "prompts/get",    "completion/complete",
    "subscriptions/listen", "tasks/get",    "tasks/update",
    "tasks/cancel",
    /* the resource-operations extension (burrow.mcp.resource_ops) */
    "resources/stat",   "resources/create", "resources/update", "resources/delete", NULL};

static int listed(const char *const *list, const char *v) {
  for (int i = 0; v && list[i]; i++)
    if (!strcmp(list[i], v)) return 1;
  return 0;
}

int bwh_version_known(const char *v) {
  return listed(SESSION_ERA, v) || listed(STATELESS, v);
}

int bwh_version_stateless(const char *v) { return listed(STATELESS, v); }

json_t *bwh_versions(void) {
  json_t *a = json_array();
  for (int i = 0; STATELESS[i]; i++) json_array_append_new(a, json_string(STATELESS[i]));
  for (int i = 0; SESSION_ERA[i]; i++) json_array_append_new(a, json_string(SESSION_ERA[i]));
  return a;
}

/* A header's value without the optional whitespace around it (RFC 9110
 * 5.5), into out; 0 when it does not fit. */
static int trimmed(const char *v, char *out, size_t cap) {
  while (*v == ' ' || *v == '\t') v++;
  size_t n = strlen(v);
  while (n && (v[n - 1] == ' ' || v[n - 1] == '\t')) n--;
  if (n >= cap) return 0;
  memcpy(out, v, n);
  out[n] = '\0';
  return 1;
}

static void verdict(bwh_verdict *v, unsigned status, int code, const char *msg) {
  v->status = status;
  v->code = code;
  if (msg != v->msg) snprintf(v->msg, sizeof v->msg, "%s", msg);
}

/* Mcp-Name against the body's name: the value as sent, or the bytes of
 * its Base64 form "=?base64?...?=" (for names a header cannot carry). */
static int name_matches(const char *header, const char *body) {
  size_t n = strlen(header);
  if (n >= 12 && !strncmp(header, "=?base64?", 9) && !strcmp(header + n - 2, "?=")) {
    char *raw;
    size_t len;
    if (bw_base64_decode(header + 9, n - 11, &raw, &len)) return 0;
    int same = len == strlen(body) && !memcmp(raw, body, len);
    free(raw);
    return same;
  }
  return !strcmp(header, body);
}

/* The headers a proxy routes on, which must come once: of a repeated
 * one, libmicrohttpd's lookup (and so bwh_era) reads the first, HAProxy's
 * req.hdr() the last, so a rule "Mcp-Name: read_file" would pass a
 * request whose first Mcp-Name says write_file. */
static int routed(const char *key) {
  return !strcasecmp(key, "Mcp-Method") || !strcasecmp(key, "Mcp-Name") ||
         !strcasecmp(key, "MCP-Protocol-Version") || !strncasecmp(key, "Mcp-Param-", 10);
}

typedef struct once {
  json_t *seen; /* the routed names met so far, in lower case */
  bwh_verdict *v;
} once;

static enum MHD_Result once_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                   const char *value) {
  (void)kind;
  (void)value;
  once *o = cls;
  if (!key || !routed(key)) return MHD_YES;
  char lower[256];
  size_t n = 0;
  for (; key[n] && n < sizeof lower - 1; n++) lower[n] = (char)tolower((unsigned char)key[n]);
  lower[n] = '\0';
  if (!json_object_get(o->seen, lower)) {
    json_object_set_new(o->seen, lower, json_true());
    return MHD_YES;
  }
  snprintf(o->v->msg, sizeof o->v->msg, "Header mismatch: the %.100s header is repeated; send it once",
           key);
  verdict(o->v, 400, -32020, o->v->msg);
  return MHD_NO;
}

int bwh_headers_once(struct MHD_Connection *c, bwh_verdict *v) {
  memset(v, 0, sizeof *v);
  once o = {json_object(), v};
  if (!o.seen) {
    verdict(v, 500, -32603, "no memory");
    return 1;
  }
  MHD_get_connection_values(c, MHD_HEADER_KIND, once_header, &o);
  json_decref(o.seen);
  return v->status != 0;
}

void bwh_era(const char *version_h, const char *method_h, const char *name_h,
             const json_t *body, bwh_verdict *v) {
  memset(v, 0, sizeof *v);
  char version[64] = "", method[256] = "", name[4096] = "";
  int has_version = version_h && trimmed(version_h, version, sizeof version);
  const json_t *params = json_is_object(body) ? json_object_get(body, "params") : NULL;
  const json_t *meta = json_is_object(params) ? json_object_get(params, "_meta") : NULL;
  const json_t *mv = json_is_object(meta) ? json_object_get(meta, META_VERSION) : NULL;
  if (version_h && (!has_version || !bwh_version_known(version))) {
    snprintf(v->msg, sizeof v->msg, "Unsupported protocol version: %.40s (MCP-Protocol-Version)",
             has_version ? version : "(too long)");
    verdict(v, 400, -32022, v->msg);
    snprintf(v->requested, sizeof v->requested, "%s", has_version ? version : "");
    return;
  }
  v->modern = has_version ? bwh_version_stateless(version) : mv != NULL;
  if (!v->modern) { /* the session revisions: http.c's checks */
    if (has_version && json_is_string(mv) && strcmp(json_string_value(mv), version)) {
      snprintf(v->msg, sizeof v->msg,
               "Header mismatch: MCP-Protocol-Version says %.40s, params._meta says %.40s", version,
               json_string_value(mv));
      verdict(v, 400, -32020, v->msg);
    }
    return;
  }
  if (json_is_array(body))
    return verdict(v, 400, -32600,
                   "Invalid Request: batches are not part of MCP 2026-07-28; send one request per POST");
  const char *m = json_is_object(body) ? json_string_value(json_object_get(body, "method")) : NULL;
  if (!m)
    return verdict(v, 400, -32600,
                   "Invalid Request: a stateless POST carries one request or notification (with a method)");
  if (!has_version)
    return verdict(v, 400, -32020,
                   "Header mismatch: params._meta names a protocol version but the MCP-Protocol-Version header is missing");
  if (!json_is_object(body) || !json_object_get(body, "id")) return; /* a notification: dropped (202) */
  if (!json_is_string(mv)) {
    return verdict(v, 400, -32602,
                   "Invalid params: params._meta must carry \"" META_VERSION "\" (the request's protocol version)");
  }
  if (strcmp(json_string_value(mv), version)) {
    snprintf(v->msg, sizeof v->msg,
             "Header mismatch: MCP-Protocol-Version says %.40s, params._meta says %.40s", version,
             json_string_value(mv));
    return verdict(v, 400, -32020, v->msg);
  }
  if (!json_is_object(json_object_get(meta, META_CAPS)))
    return verdict(v, 400, -32602,
                   "Invalid params: params._meta must carry \"" META_CAPS "\" (an object; {} for none)");
  if (!method_h || !trimmed(method_h, method, sizeof method))
    return verdict(v, 400, -32020, "Header mismatch: the Mcp-Method header is required");
  if (strcmp(method, m)) {
    snprintf(v->msg, sizeof v->msg, "Header mismatch: Mcp-Method says %.60s, the body's method is %.60s",
             method, m);
    return verdict(v, 400, -32020, v->msg);
  }
  /* the resource-operations extension's methods: SEP-2243 asks no
   * Mcp-Name of them (SDKs send none), but one sent must name the uri */
  int ext_op = !strcmp(m, "resources/stat") || !strcmp(m, "resources/create") ||
               !strcmp(m, "resources/update") || !strcmp(m, "resources/delete");
  /* the tasks extension (SEP-2663) names its task in Mcp-Name too */
  const char *key = !strcmp(m, "tools/call") || !strcmp(m, "prompts/get") ? "name"
                    : !strcmp(m, "resources/read") || ext_op ? "uri"
                    : !strcmp(m, "tasks/get") || !strcmp(m, "tasks/update") || !strcmp(m, "tasks/cancel") ? "taskId"
                    : NULL;
  const char *bname = key && json_is_object(params) ? json_string_value(json_object_get(params, key)) : NULL;
  int has_name = name_h && trimmed(name_h, name, sizeof name);
  if (bname && !has_name && !ext_op) {
    snprintf(v->msg, sizeof v->msg, "Header mismatch: %s needs the Mcp-Name header (params.%s)", m, key);
    return verdict(v, 400, -32020, v->msg);
  }
  if (has_name && (!bname || !name_matches(name, bname))) {
    snprintf(v->msg, sizeof v->msg, "Header mismatch: Mcp-Name does not match params.%s", key ? key : "name");
    return verdict(v, 400, -32020, v->msg);
  }
  if (!listed(METHODS, m)) {
    snprintf(v->msg, sizeof v->msg, "Method not found: %.100s", m);
    return verdict(v, 404, -32601, v->msg);
  }
}
