/*
 * httpanswer.c - the listener's answers, below the handlers that give
 * them (http.c, httppost.c): a whole response with a header or two, a
 * transport's refusal as a JSON-RPC error (logged with the tenant of the
 * request this thread answers, bwh_current), the client's address, what
 * it accepts, the store's 503.
 */
#include <arpa/inet.h>
#include <jansson.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "httpint.h"
#include "mhd.h"

enum MHD_Result bwh_reply(struct MHD_Connection *c, unsigned status,
                             const char *ctype, const char *body,
                             const char *hname, const char *hval) {
  struct MHD_Response *r = MHD_create_response_from_buffer(
      strlen(body), (void *)body, MHD_RESPMEM_MUST_COPY);
  if (!r) return MHD_NO;
  if (ctype) MHD_add_response_header(r, "Content-Type", ctype);
  if (hname) MHD_add_response_header(r, hname, hval);
  enum MHD_Result rc = MHD_queue_response(c, status, r);
  MHD_destroy_response(r);
  return rc;
}

/* The connection state of the request this thread answers (set by each
 * call of the handler): the access log's tenant of a refusal. */
_Thread_local const conn *bwh_current;

static const char *tenant_of_token(const bw_http *h, int token) {
  return token >= 0 ? bwh_tenant_name(h, h->o.tokens[token].tenant)
                    : h->o.n_tokens ? "-" : bwh_tenant_name(h, 0);
}

/* A JSON-RPC error answered by the transport: the request's id when it
 * has a usable one (else null), data when given (stolen). */
enum MHD_Result bwh_refuse_rpc(bw_http *h, struct MHD_Connection *c, unsigned status,
                                  const json_t *id, int code, const char *msg, json_t *data,
                                  const char *hname, const char *hval) {
  if (h && h->log) { /* every refusal: status, reason, tenant, address */
    char addr[INET6_ADDRSTRLEN];
    bwh_client_address(c, addr);
    bwh_log(h, "refused %u addr=%s tenant=%s: %s", status, addr,
            bwh_current && bwh_current->checked ? tenant_of_token(h, bwh_current->token) : "-", msg);
  }
  int usable = json_is_string(id) || json_is_integer(id);
  json_t *err = json_pack("{s:i,s:s}", "code", code, "message", msg);
  if (err && data) json_object_set(err, "data", data);
  json_decref(data);
  json_t *j = err ? json_pack("{s:s,s:O,s:o}", "jsonrpc", "2.0", "id",
                              usable ? (json_t *)id : json_null(), "error", err)
                  : NULL;
  char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;
  json_decref(j);
  enum MHD_Result rc = bwh_reply(c, status, "application/json",
                             text ? text : "{}", hname, hval);
  free(text);
  return rc;
}

enum MHD_Result bwh_refuse(bw_http *h, struct MHD_Connection *c, unsigned status,
                               int code, const char *msg, const char *hname,
                               const char *hval) {
  return bwh_refuse_rpc(h, c, status, NULL, code, msg, NULL, hname, hval);
}


int bwh_accepts(struct MHD_Connection *c, const char *type) {
  const char *a = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Accept");
  return a && (strstr(a, type) || strstr(a, "*/*"));
}

/* The client's address as text ("" if unknown). */
void bwh_client_address(struct MHD_Connection *c, char out[INET6_ADDRSTRLEN]) {
  out[0] = '\0';
  const union MHD_ConnectionInfo *i =
      MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
  const struct sockaddr *sa = i ? i->client_addr : NULL;
  if (sa && sa->sa_family == AF_INET)
    inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, out, INET6_ADDRSTRLEN);
  else if (sa && sa->sa_family == AF_INET6)
    inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, out, INET6_ADDRSTRLEN);
}

/* The deployment's store did not answer a question about a session. */
enum MHD_Result bwh_store_down(bw_http *h, struct MHD_Connection *c) {
  return bwh_refuse(h, c, MHD_HTTP_SERVICE_UNAVAILABLE, -32000,
                "Service Unavailable: STORE_UNAVAILABLE: the shared state store (Redis/Valkey), which "
                "holds this session, does not answer; retry",
                "Retry-After", "1");
}

