/*
 * httpmetrics.h - Prometheus metrics of `burrow mcp --http` (httpmetrics.c):
 * /metrics on a listener of its own (http.metrics), never on the MCP one.
 * What the listener counts (sessions, streams, queues, running calls) is
 * read under its lock at each scrape; what the Lua workers know (a call's
 * tool and outcome, a policy's denial, an approval) they report through
 * the functions below, from the same point that writes the audit line.
 * Every label is bounded: tenants and tools from the configuration, codes
 * and policies capped, never an agent's string.
 */
#ifndef BURROW_HTTPMETRICS_H
#define BURROW_HTTPMETRICS_H

#include <stddef.h>

#include "http.h"

typedef struct bw_metrics bw_metrics;

typedef struct bw_metrics_opts {
  const char *host;  /* address to bind: loopback unless allow_remote */
  int port;          /* 0: any free port (bw_metrics_port) */
  int allow_remote;  /* a non-loopback address may be bound */
  const char *const *tools; /* every tool name a tenant serves: the tool label's values */
  int n_tools;
  const char *const *policies; /* every policy label a tenant loads */
  int n_policies;
} bw_metrics_opts;

/* Start the listener for h (started, not yet freed); NULL and a message
 * in err on failure (a non-loopback host without allow_remote). */
bw_metrics *bw_metrics_start(bw_http *h, const bw_metrics_opts *o, char *err, size_t errlen);
int bw_metrics_port(const bw_metrics *m);
/* The listener stops (before bw_http_free); the counters stay for the
 * workers still running until bw_metrics_free. */
void bw_metrics_stop(bw_metrics *m);
void bw_metrics_free(bw_metrics *m);

/* From any worker thread; tenant: the listener's tenant index. */
/* One call of a configured tool (another name counts as unknown):
 * outcome "ok", "denied" or "error"; code its stable code ("OK" when ok);
 * seconds from its start to its answer. */
void bw_metrics_call(bw_metrics *m, int tenant, const char *tool, const char *outcome,
                     const char *code, double seconds);
/* A tools/call naming no tool this tenant serves. */
void bw_metrics_unknown_tool(bw_metrics *m, int tenant);
/* A policy (its label) denied a request. */
void bw_metrics_denial(bw_metrics *m, int tenant, const char *policy);
/* A policy's ask ended: "approved", "denied", "unavailable", "not_asked". */
void bw_metrics_approval(bw_metrics *m, int tenant, const char *result);

#endif
