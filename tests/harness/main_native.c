/* Native entry of the unit-test binary: `unit_tests [FILTER]`. */
#include <stdio.h>

#include "suites.h"
#include "tl_test.h"

static void write_stdout(const char *text, size_t len) {
  fwrite(text, 1, len, stdout);
  fflush(stdout);
}

int main(int argc, char **argv) {
  const char *filter = argc > 1 ? argv[1] : NULL;
  if (argc > 2) {
    fprintf(stderr, "usage: %s [FILTER]\n", argv[0]);
    return 2;
  }
  return tl_test_run(tl_all_suites, tl_all_suites_count, filter,
                     write_stdout) == 0
             ? 0
             : 1;
}
