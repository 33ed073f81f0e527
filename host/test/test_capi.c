/*
 * test_capi.c - the embedding API (burrow.h) driven from C: open a host,
 * list tools, call tools, errors as JSON, the approval callback for a
 * policy's "ask", two hosts on two threads. Linked against libburrow.a.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "burrow.h"

static int passed, failed;

#define CHECK(cond, ...)                                                    \
  do {                                                                      \
    if (cond) passed++;                                                     \
    else {                                                                  \
      failed++;                                                             \
      printf("FAIL %s:%d: ", __FILE__, __LINE__);                           \
      printf(__VA_ARGS__);                                                  \
      printf("\n");                                                         \
    }                                                                       \
  } while (0)

static char dir[128];

static void put(const char *name, const char *text) {
  char p[256];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  FILE *f = fopen(p, "w");
  if (!f || fputs(text, f) < 0 || fclose(f)) exit(2);
}

static int asked;

static int approve(void *ud, const char *tool, const char *op,
                   const char *path, const char *reason) {
  asked++;
  CHECK(!strcmp(tool, "write_file") && !strcmp(op, "write"), "asked about %s %s", tool, op);
  CHECK(strstr(reason, "needs a yes") != NULL, "reason: %s", reason);
  return *(int *)ud && strcmp(path, "no.txt") != 0;
}

static void test_calls(void) {
  char *err = NULL;
  burrow_host *h = burrow_open(dir, &err);
  CHECK(h != NULL, "open: %s", err ? err : "");
  if (!h) return;
  char *tools = burrow_tools(h, "anthropic");
  CHECK(tools && strstr(tools, "\"input_schema\""), "anthropic tools");
  burrow_free(tools);
  char *res = NULL;
  CHECK(burrow_call(h, "write_file", "{\"path\":\"a.txt\",\"content\":\"hi\\n\"}", &res) == BURROW_OK,
        "write: %s", res);
  burrow_free(res);
  CHECK(burrow_call(h, "read_file", "{\"path\":\"a.txt\"}", &res) == BURROW_OK &&
            strstr(res, "1\\thi"), "read: %s", res);
  burrow_free(res);
  CHECK(burrow_call(h, "read_file", "{\"path\":\"../x\"}", &res) == BURROW_TOOL_ERROR &&
            strstr(res, "OUTSIDE_ROOT"), "outside: %s", res);
  burrow_free(res);
  CHECK(burrow_call(h, "read_file", "not json", &res) == BURROW_TOOL_ERROR &&
            strstr(res, "INVALID_ARGUMENT"), "bad json: %s", res);
  burrow_free(res);
  CHECK(burrow_call(NULL, "read_file", "{}", &res) == BURROW_USAGE, "NULL host");
  burrow_close(h);
}

static void test_approval(void) {
  put("ask.lua", "return { check = function(req)\n"
                 "  if req.operation == 'write' then return 'ask', 'writes needs a yes' end\n"
                 "  return 'allow' end }\n");
  char cfg[512];
  snprintf(cfg, sizeof cfg, "roots: [%s]\npolicies: [%s/ask.lua]\n", dir, dir);
  char *err = NULL, *res = NULL;
  burrow_host *h = burrow_open(cfg, &err);
  CHECK(h != NULL, "open with a policy: %s", err ? err : "");
  if (!h) return;
  CHECK(burrow_call(h, "write_file", "{\"path\":\"x.txt\",\"content\":\"x\"}", &res) == BURROW_TOOL_ERROR &&
            strstr(res, "approval needed"), "no callback: %s", res);
  burrow_free(res);
  int yes = 1;
  burrow_set_approval(h, approve, &yes);
  CHECK(burrow_call(h, "write_file", "{\"path\":\"y.txt\",\"content\":\"y\"}", &res) == BURROW_OK,
        "approved: %s", res);
  burrow_free(res);
  CHECK(burrow_call(h, "write_file", "{\"path\":\"no.txt\",\"content\":\"n\"}", &res) == BURROW_TOOL_ERROR &&
            strstr(res, "POLICY_DENIED"), "refused: %s", res);
  burrow_free(res);
  CHECK(asked == 2, "asked %d times", asked);
  burrow_close(h);
}

/* Two hosts on two threads work at the same time. */
static void *worker(void *arg) {
  (void)arg;
  burrow_host *h = burrow_open(dir, NULL);
  int ok = h != NULL;
  for (int i = 0; ok && i < 200; i++) {
    char *res = NULL;
    ok = burrow_call(h, "stat", "{\"path\":\"a.txt\"}", &res) == BURROW_OK;
    burrow_free(res);
  }
  burrow_close(h);
  return (void *)(intptr_t)ok;
}

static void test_threads(void) {
  pthread_t t[2];
  for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, worker, NULL);
  for (int i = 0; i < 2; i++) {
    void *ok;
    pthread_join(t[i], &ok);
    CHECK(ok != NULL, "thread %d", i);
  }
}

int main(void) {
  strcpy(dir, "/tmp/burrow-capi-XXXXXX");
  if (!mkdtemp(dir)) return 2;
  CHECK(strcmp(burrow_version(), BURROW_VERSION_STRING) == 0, "version");
  test_calls();
  test_approval();
  test_threads();
  char cmd[256];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0) return 2;
  printf("%d passed, %d failed\n", passed, failed);
  return failed != 0;
}
