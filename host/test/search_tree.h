/*
 * search_tree.h - what the search core's two C tests (test_search.c, the
 * walk and glob; test_grep.c, grep) share: a temporary tree with links out
 * of it, a FIFO, ignore files, hidden and binary files, a directory of 300
 * files (setup), the backend each root resolves with, a shell step run in
 * the tree (sh), and grep's options for a test (gopts). Included by each
 * test once, after check.h.
 */
#ifndef BURROW_TEST_SEARCH_TREE_H
#define BURROW_TEST_SEARCH_TREE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search.h"

/* The backend the roots of this run resolve with (each root names its
 * own: r.backend; the core has no process setting). */
static int test_backend = BW_OPENAT2;

static char base[256];

static void sh(const char *fmt) {
  char cmd[4096];
  snprintf(cmd, sizeof cmd, "cd %s && %s", base, fmt);
  if (system(cmd) != 0) {
    fprintf(stderr, "setup failed: %s\n", cmd);
    exit(2);
  }
}

static void setup(void) {
  strcpy(base, "/tmp/burrow-search-XXXXXX");
  if (!mkdtemp(base)) exit(2);
  sh("mkdir -p ws/src/sub ws/lib ws/.hidden ws/build ws/many outside && "
     "printf 'TOPSECRET needle\\n' > outside/secret.txt && "
     "printf 'one\\ntwo needle\\nthree\\nfour\\nfive needle\\nsix\\n' > ws/src/a.c && "
     "printf 'needle first\\n' > ws/src/sub/b.h && "
     "printf 'NEEDLE upper\\nnothing\\n' > ws/lib/c.txt && "
     "printf 'needle hidden\\n' > ws/.hidden/h.txt && "
     "printf 'needle built\\n' > ws/build/out.o && "
     "printf 'bin\\0needle\\n' > ws/src/bin.dat && "
     "head -c 5000 /dev/zero | tr '\\0' 'x' > ws/src/big.txt && "
     "printf 'needle\\n' >> ws/src/big.txt && "
     "mkdir ws/.git && printf 'build/\\n*.o\\n' > ws/.gitignore && "
     "printf 'c.txt\\n' > ws/lib/.ignore && "
     "ln -s ../outside ws/esc_updir && ln -s / ws/esc_dir && "
     "ln -s /proc/self/root ws/proc_link && ln -s src ws/link_in && "
     "ln -s loop2 ws/loop1 && ln -s loop1 ws/loop2 && mkfifo ws/fifo");
  sh("cd ws/many && for i in $(seq 1 300); do printf 'x\\nneedle %d\\n' $i > f$i.txt; done");
  sh("mkdir bins && cd bins && for i in $(seq 1 40); do n=$(printf %02d $i); "
     "if [ $((i % 2)) = 1 ]; then printf 'x\\0needle\\n' > b$n.dat; "
     "else printf 'needle %s\\n' $n > b$n.txt; fi; done");
}

static bw_grep_opts gopts(const char *pat) {
  bw_grep_opts o;
  memset(&o, 0, sizeof o);
  o.pattern = pat;
  o.pattern_len = strlen(pat);
  o.max_results = 1000;
  o.max_file_size = 1 << 20;
  o.max_line = 2000;
  o.max_skipped = 100;
  o.walk.threads = 2;
  o.walk.respect_ignore = 1;
  return o;
}

#endif
