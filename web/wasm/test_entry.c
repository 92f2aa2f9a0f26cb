/* wasm32 entry of the unit tests: the same suites as the native binary,
 * printing through a function the JS host supplies. */
#include "suites.h"
#include "tl_test.h"

__attribute__((import_module("env"), import_name("tl_host_write"))) void
tl_host_write(const char *text, size_t len);

static void write_host(const char *text, size_t len) {
  tl_host_write(text, len);
}

unsigned tl_wasm_run_tests(const char *filter);

/* filter may be 0 (run everything). Returns the number of failed cases. */
__attribute__((export_name("tl_wasm_run_tests"))) unsigned tl_wasm_run_tests(
    const char *filter) {
  return (unsigned)tl_test_run(tl_all_suites, tl_all_suites_count, filter,
                               write_host);
}
