/* plan init --oracle numpy (docs/promotion.md): the forward golden of the
 * artifact's own weights from the project's independent NumPy float64
 * oracle (tools/oracle/qwen3_ref.py --slm), so that the documented path
 * registers a `forward` claim (every capture point of the golden's
 * positions against float64, the report's forward chart) and a `greedy`
 * continuation without a hand-written oracle call. The oracle is Python
 * with Debian's NumPy (/usr/bin/python3); it reads the checkpoint's
 * config.json from the source directory and the weights from the
 * artifact, decoded as docs/quant.md says. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "promote.h"
#include "promote_bench.h"

#define ORACLE_PYTHON "/usr/bin/python3"
/* The prompt: 32 ids of the project's prose, captured at its first,
 * middle and last positions, and an 8-token greedy continuation. */
#define ORACLE_TOKENS 32
#define ORACLE_POSITIONS "0,15,31"
#define ORACLE_GREEDY "8"
/* Above this much tensor data `--oracle auto` leaves the oracle out: in
 * float64 NumPy its prompt and continuation take minutes on the 0.6B
 * shape (seconds on the demo model's 50 MB); --oracle numpy runs it
 * anyway. */
#define ORACLE_AUTO_MAX_BYTES (256u << 20)

/* Whether Debian's python3 imports numpy here. */
static bool numpy_runs(void) {
  char *argv[] = {ORACLE_PYTHON, "-c", "import numpy", NULL}, *text = NULL, err[256];
  int status = 0;
  bool ok = access(ORACLE_PYTHON, X_OK) == 0 &&
            tl_spawn_read(ORACLE_PYTHON, argv, &text, &status, err, sizeof err) == TL_OK &&
            WIFEXITED(status) && WEXITSTATUS(status) == 0;
  free(text);
  return ok;
}

tl_status tl_plan_numpy_golden(const tl_native_model *m, const char *root, const char *source,
                               const char *slm_path, const char *out, bool required, bool *made,
                               char *note, size_t note_cap, char *err, size_t err_cap) {
  char script[4096], ids_text[ORACLE_TOKENS * 12 + 1];
  char *argv[18], *text = NULL;
  uint32_t *ids = NULL;
  size_t len = 0;
  int status = 0, argc = 0;
  tl_status st;
  *made = false;
  snprintf(script, sizeof script, "%.4000s/tools/oracle/qwen3_ref.py", root);
  bool large = !required && m->tensors.data_len > ORACLE_AUTO_MAX_BYTES;
  if (source == NULL || large || access(script, R_OK) != 0 || !numpy_runs()) {
    const char *why = source == NULL ? "it needs --source HF_DIR (the checkpoint's config.json)"
                      : large ? "a model this size takes the float64 oracle minutes (--oracle "
                                "numpy runs it)"
                      : access(script, R_OK) != 0 ? "tools/oracle/qwen3_ref.py is not here"
                                                  : ORACLE_PYTHON " has no numpy";
    if (required) {
      snprintf(err, err_cap, "--oracle numpy: %s", why);
      return TL_ERR_UNSUPPORTED_FEATURE;
    }
    snprintf(note, note_cap, "no NumPy oracle golden: %s", why);
    return TL_OK;
  }
  if ((st = tl_plan_prose_ids(m, ORACLE_TOKENS, &ids, err, err_cap)) != TL_OK) return st;
  for (size_t i = 0; i < ORACLE_TOKENS; i++)
    len += (size_t)snprintf(ids_text + len, sizeof ids_text - len, "%s%u", i ? " " : "", ids[i]);
  free(ids);
  argv[argc++] = ORACLE_PYTHON;
  argv[argc++] = script;
  argv[argc++] = (char *)source;
  argv[argc++] = "--slm";
  argv[argc++] = (char *)slm_path;
  /* the artifact's digests were verified when plan init opened it; in
   * pure Python they would be most of the oracle's time */
  argv[argc++] = "--no-slm-digests";
  argv[argc++] = "--ids";
  argv[argc++] = ids_text;
  argv[argc++] = "--positions";
  argv[argc++] = ORACLE_POSITIONS;
  argv[argc++] = "--greedy";
  argv[argc++] = ORACLE_GREEDY;
  argv[argc++] = "-o";
  argv[argc++] = (char *)out;
  argv[argc] = NULL;
  st = tl_spawn_read(ORACLE_PYTHON, argv, &text, &status, err, err_cap);
  free(text);
  if (st != TL_OK) return st;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    snprintf(err, err_cap,
             "the NumPy oracle failed (exit %d): run %s %s --slm %s --ids ... -o %s to see why",
             WIFEXITED(status) ? WEXITSTATUS(status) : -1, script, source, slm_path, out);
    return TL_ERR_IO;
  }
  *made = true;
  snprintf(note, note_cap, "NumPy oracle golden %s (%d ids, positions %s, %s greedy)", out,
           ORACLE_TOKENS, ORACLE_POSITIONS, ORACLE_GREEDY);
  return TL_OK;
}
