/*
 * bench/init_floor.c - the floor of bench/startup.mjs: a static C program
 * that only answers MCP's `initialize`. It reads one line from stdin and
 * writes one result with the same id, so spawn -> answer times the
 * process start, a pipe round trip and nothing else: what no server can
 * beat. startup.mjs builds it (`cc -O2 -static`) and times it beside
 * burrow in the same run.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(void) {
  char line[65536];
  if (!fgets(line, sizeof line, stdin)) return 1;
  const char *id = strstr(line, "\"id\":");
  int n = 0;
  if (id) sscanf(id + 5, "%d", &n);
  char out[512];
  int len = snprintf(out, sizeof out,
                     "{\"jsonrpc\":\"2.0\",\"id\":%d,\"result\":{\"protocolVersion\":\"2025-06-18\","
                     "\"capabilities\":{\"tools\":{}},\"serverInfo\":{\"name\":\"floor\",\"version\":\"1\"}}}\n",
                     n);
  if (write(1, out, (size_t)len) != len) return 1;
  /* like a server, stay until the client closes stdin (or kills us) */
  while (read(0, line, sizeof line) > 0) {}
  return 0;
}
