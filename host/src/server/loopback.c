/*
 * loopback.c - is a host loopback? The one answer the listener's Host and
 * bind checks (http.c), the metrics listener (httpmetrics.c) and an OAuth
 * issuer's plain-http exception (oauth.c) share: a file below them all.
 */
#include <arpa/inet.h>
#include <string.h>
#include <strings.h>

#include "http.h"

int bw_http_loopback(const char *host) {
  if (!strcasecmp(host, "localhost") || !strcmp(host, "::1") ||
      !strcmp(host, "[::1]"))
    return 1;
  struct in_addr a;
  return inet_pton(AF_INET, host, &a) == 1 && (ntohl(a.s_addr) >> 24) == 127;
}
