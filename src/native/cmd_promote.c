/* tinylm plan init / tinylm promote (docs/promotion.md): a registered
 * plan run on an artifact and lane into the evidence store, one
 * comparison receipt per claim and a promotion receipt whose decision is
 * their conjunction. */
#define _DEFAULT_SOURCE /* readlink, realpath, gmtime_r, PATH_MAX */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cbor_doc.h"
#include "cli.h"
#include "clock.h"
#include "file.h"
#include "hash/sha256.h"
#include "promote.h"
#include "promote_bench.h"
#include "promote_plan.h"
#include "promote_receipt.h"
#include "promote_sign.h"
#include "receipt.h"
#include "verify.h"

#ifndef TL_BUILD_ID
#define TL_BUILD_ID "unknown"
#endif

/* The executable's own bytes name the build: two binaries of one commit
 * that differ anywhere (a patch, another compiler) have other ids, so
 * one's receipts never read as current for the other. Hashed once per
 * process. */
const char *tl_promote_build_id(char *err, size_t err_cap) {
  static char id[sizeof "sha256:" + 64];
  tl_file_view v;
  uint8_t digest[32];
  tl_status st;
  if (id[0] != '\0') return id;
  if (tl_file_open_regular("/proc/self/exe", &v, err, err_cap) != TL_OK) return NULL;
  st = tl_file_sha256(&v, digest);
  tl_file_close_view(&v);
  if (st != TL_OK) {
    snprintf(err, err_cap, "/proc/self/exe: hashing the executable failed");
    return NULL;
  }
  memcpy(id, "sha256:", 7);
  tl_hex_encode(digest, 32, id + 7);
  return id;
}

const char *tl_promote_build_describe(void) { return TL_BUILD_ID; }

static const char plan_usage[] =
    "usage: tinylm plan init MODEL.slm [-o PLAN.json] [--lane scalar|fast]\n"
    "                        [--source HF_DIR] [--oracle auto|numpy|none]\n"
    "                        [--golden FILE]... [--reader-json FILE]\n"
    "                        [--no-benchmark] [--force] [--json]\n"
    "  writes a conformance plan (tinylm.plan/1, docs/promotion.md) for MODEL:\n"
    "  the artifact's checks, its EOS set, the shipped tokenizer and template\n"
    "  goldens when the artifact's sources are theirs, the sampler's known\n"
    "  answers, the transformers goldens of its checkpoint (tests/golden/\n"
    "  transformers), each --golden FILE (a tinylm.golden/1 document, e.g. from\n"
    "  tools/oracle/qwen3_ref.py --slm MODEL), the independent reader's view\n"
    "  (--reader-json: tools/slm_inspect.py MODEL --json), multi-turn cases and a\n"
    "  stochastic claim: the lane's draws replayed by a reference sampler and its\n"
    "  distributions against the other native lane's, on the 8 prompts of the\n"
    "  shipped pool where the model's next-token entropy is highest, the replay\n"
    "  of every capture point of a long prompt, and the weights bound to their\n"
    "  source: --source HF_DIR re-converted must give every tensor bit for bit\n"
    "  (without it that claim is not run and the plan does not promote)\n"
    "  --oracle O     numpy: the forward golden of MODEL's own weights from the\n"
    "                 NumPy float64 oracle (tools/oracle/qwen3_ref.py, with\n"
    "                 --source's config.json), written beside the plan\n"
    "                 (PLAN.numpy-golden.cbor)\n"
    "                 and registered as --golden is; auto (default): numpy when\n"
    "                 --source is given, /usr/bin/python3 has numpy and the\n"
    "                 model's tensors are at most 256 MiB; none\n"
    "  -o PLAN.json   default MODEL.plan.json beside MODEL; --force replaces it\n"
    "  --lane L       the lane the plan registers (default fast)\n"
    "  --no-benchmark no benchmark step (by default prompts of 16 to 4096 tokens,\n"
    "                 1024 on the scalar lane, as the model's context allows)\n";

static const char promote_usage[] =
    "usage: tinylm promote PLAN.json --store DIR [--lane scalar|fast] [-t N]\n"
    "                      [--reuse] [--no-benchmark] [--progress] [--sign KEY] [--json]\n"
    "       tinylm promote show RECEIPT [--store DIR] [--public] [--trust KEY.pub] [--json]\n"
    "       tinylm promote status --store DIR [--plan PLAN] [--artifact MODEL.slm] [--json]\n"
    "       tinylm promote keygen -o KEY [--force] [--json]\n"
    "  runs every claim of PLAN on its artifact and lane, keeps every raw output\n"
    "  and one comparison receipt per claim in the append-only store DIR, and\n"
    "  writes the promotion receipt: promoted when every claim passed\n"
    "  --lane L   must be the plan's lane (a plan registers one)\n"
    "  -t N       threads of the fast lane (not part of any identity)\n"
    "  --reuse    judge numerical claims again from the store's raw outputs of\n"
    "             the same artifact, build, lane and cases (no inference) when\n"
    "             only their tolerance policy changed\n"
    "  --no-benchmark  skip the plan's benchmark step (no claim depends on it)\n"
    "  --progress the stochastic claim's progress and ETA also when stderr is\n"
    "             not a terminal\n"
    "  --sign KEY  sign the promotion receipt with KEY (promote keygen): a\n"
    "             tinylm.signature/1 receipt in the store\n"
    "  exit 0 promoted, 1 not promoted, 2 usage or an unusable plan or store\n";

/* ------------------------------------------------------------------------ */
/* Shared                                                                   */

/* The project's directory, for the shipped case sets: the working
 * directory when it holds them, else ../../ from build/<cfg>/tinylm. */
static void project_root(char *buf, size_t cap) {
  char exe[PATH_MAX];
  ssize_t n;
  if (access("tests/golden/transformers/manifest.json", R_OK) == 0) {
    snprintf(buf, cap, ".");
    return;
  }
  n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) {
    snprintf(buf, cap, ".");
    return;
  }
  exe[n] = '\0';
  if (strrchr(exe, '/') != NULL) *strrchr(exe, '/') = '\0';
  if ((size_t)snprintf(buf, cap, "%.4000s/../..", exe) >= cap) snprintf(buf, cap, ".");
}

static tl_status file_sha256(const char *path, uint8_t id[32], char *err, size_t cap) {
  tl_file_view v;
  tl_status st = tl_file_open_regular(path, &v, err, cap);
  if (st != TL_OK) return st;
  st = tl_file_sha256(&v, id);
  tl_file_close_view(&v);
  return st;
}

/* Now, UTC, to the second (the run record's times). */
static void utc_now(char *out, size_t cap) {
  time_t now = time(NULL);
  struct tm tm;
  gmtime_r(&now, &tm);
  strftime(out, cap, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static json_t *hex32(const uint8_t id[32]) {
  char h[65];
  tl_hex_encode(id, 32, h);
  return json_string(h);
}

/* The artifact's metadata as JSON (byte strings as hex). */
static json_t *metadata_json(const tl_native_model *m, char *err, size_t cap) {
  const tl_slm_section *meta;
  json_t *out = NULL;
  if (tl_slm_find(&m->slm, TL_SLM_METADATA, &meta) != TL_OK) {
    snprintf(err, cap, "the artifact has no metadata section");
    return NULL;
  }
  if (tl_cbor_to_json(meta->data, meta->len, &out, err, cap) != TL_OK) return NULL;
  return out;
}

/* The chain of custody the report shows (tinylm.custody/1, docs/report.md):
 * where the artifact came from (its sources with their SHA-256, the
 * acquisition when it was pulled), how it was made, and what ran it. Put
 * into the store; the run record names it. */
static tl_status put_custody(tl_store *store, const tl_session *s, const char *slm_path,
                             const uint8_t artifact[32], const char *build_id, uint8_t id[32],
                             char *err, size_t cap) {
  json_t *meta = metadata_json(&s->model, err, cap), *doc;
  char *text;
  tl_status st;
  if (meta == NULL) return TL_ERR_INVALID_MODEL;
  doc = json_pack("{s:s,s:{s:o,s:s,s:I,s:O*,s:O*,s:O*,s:O*,s:O*,s:O*},s:{s:s,s:s,s:s,s:s,s:s,s:i}}",
                  "format", "tinylm.custody/1", "artifact", "id", hex32(artifact), "path",
                  slm_path, "bytes", (json_int_t)s->model.slm.len, "sources",
                  json_object_get(meta, "sources"), "acquisition",
                  json_object_get(meta, "acquisition"), "converter",
                  json_object_get(meta, "converter"), "quantization",
                  json_object_get(meta, "quantization"), "config_sha256",
                  json_object_get(meta, "config_sha256"), "chat_template",
                  json_object_get(meta, "chat_template"), "runtime", "build_id", build_id,
                  "build_describe", tl_promote_build_describe(), "lane",
                  s->lane.fast ? "fast" : "scalar", "profile", tl_native_lane_profile(&s->lane),
                  "isa", tl_native_lane_isa(&s->lane), "threads",
                  (int)tl_native_lane_threads(&s->lane));
  json_decref(meta);
  text = doc ? tl_plan_canonical(doc) : NULL;
  st = text ? tl_store_put(store, "custody", (const uint8_t *)text, strlen(text), id, err, cap)
            : TL_ERR_OUT_OF_MEMORY;
  if (text == NULL) snprintf(err, cap, "out of memory");
  free(text);
  json_decref(doc);
  return st;
}

/* ------------------------------------------------------------------------ */
/* plan init                                                                */

/* The source checkpoint's model.safetensors digest, as the ledger names it. */
static const char *source_weights_sha256(const json_t *meta) {
  size_t i;
  json_t *s;
  json_array_foreach(json_object_get(meta, "sources"), i, s) {
    const char *name = json_string_value(json_object_get(s, "name"));
    if (name != NULL && strcmp(name, "model.safetensors") == 0)
      return json_string_value(json_object_get(s, "sha256"));
  }
  return NULL;
}

/* Who produced a golden's values: its own producer field says. */
#define GOLDEN_ORACLE "the goldens' producers (tinylm.golden/1 producer field)"

/* forward/greedy claims: the transformers goldens of this checkpoint and
 * every --golden given. A lossy quantisation is judged on continuations
 * only against goldens of the source weights (the profiles bound
 * arithmetic, not quantisation); --golden files are taken as goldens of
 * the artifact's own weights. */
static tl_status numeric_claims(const json_t *meta, const char *root, const char *const *extra,
                                size_t n_extra, json_t *claims, char *note, size_t note_cap,
                                char *err, size_t cap) {
  char path[PATH_MAX];
  json_error_t je;
  json_t *manifest, *fwd = json_array(), *gr = json_array();
  const char *weights = source_weights_sha256(meta);
  const char *quant = json_string_value(
      json_object_get(json_object_get(meta, "quantization"), "requested"));
  bool lossy = quant != NULL && (strcmp(quant, "q8") == 0 || strcmp(quant, "q4") == 0);
  size_t i;
  json_t *g;
  snprintf(path, sizeof path, "%.3900s/tests/golden/transformers/manifest.json", root);
  manifest = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
  if (manifest == NULL) {
    snprintf(note, note_cap, "no transformers goldens (%.120s: %.80s)", path, je.text);
  } else {
    size_t matched = 0;
    json_array_foreach(json_object_get(manifest, "goldens"), i, g) {
      const char *ck = json_string_value(
          json_object_get(json_object_get(g, "checkpoint"), "model.safetensors"));
      char file[PATH_MAX];
      json_t *ref;
      if (weights == NULL || ck == NULL || strcmp(ck, weights) != 0) continue;
      matched++;
      snprintf(file, sizeof file, "%.3800s/tests/golden/transformers/%.200s", root,
               json_string_value(json_object_get(g, "file")));
      {
        char real[PATH_MAX];
        if (realpath(file, real) != NULL) snprintf(file, sizeof file, "%s", real);
      }
      ref = json_pack("{s:{s:s,s:s},s:s}", "golden", "path", file, "sha256",
                      json_string_value(json_object_get(g, "sha256")), "label",
                      json_string_value(json_object_get(g, "label")));
      if (!lossy) json_array_append_new(fwd, tl_plan_case(json_deep_copy(ref)));
      json_array_append_new(gr, tl_plan_case(ref));
    }
    snprintf(note, note_cap,
             "%zu transformers golden(s) of this checkpoint%s", matched,
             matched && lossy ? " (continuations only: the artifact is quantised)" : "");
    json_decref(manifest);
  }
  for (i = 0; i < n_extra; i++) {
    uint8_t id[32];
    char real[PATH_MAX], hex[65];
    tl_status st = file_sha256(extra[i], id, err, cap);
    if (st != TL_OK) return st;
    if (realpath(extra[i], real) == NULL) snprintf(real, sizeof real, "%s", extra[i]);
    tl_hex_encode(id, 32, hex);
    json_array_append_new(fwd, tl_plan_case(json_pack("{s:{s:s,s:s},s:s}", "golden", "path",
                                                      real, "sha256", hex, "label", real)));
    json_array_append_new(gr, tl_plan_case(json_pack("{s:{s:s,s:s},s:s}", "golden", "path", real,
                                                     "sha256", hex, "label", real)));
  }
  if (json_array_size(fwd) > 0)
    json_array_append_new(claims, json_pack("{s:s,s:s,s:s,s:s,s:n,s:n,s:o}", "name", "forward",
                                            "kind", "forward", "level", "numerical", "oracle",
                                            GOLDEN_ORACLE, "tolerance", "design", "cases", fwd));
  else
    json_decref(fwd);
  if (json_array_size(gr) > 0)
    json_array_append_new(claims, json_pack("{s:s,s:s,s:s,s:s,s:n,s:n,s:o}", "name", "greedy",
                                            "kind", "greedy", "level", "numerical", "oracle",
                                            GOLDEN_ORACLE, "tolerance", "design", "cases", gr));
  else
    json_decref(gr);
  return TL_OK;
}

/* The weights bound to their source (docs/promotion.md, `source_binding`):
 * the checkpoint directory --source names, re-converted with the
 * artifact's quantisation; without one the claim is registered and fails
 * as not run, so that the decision says what is missing. */
static tl_status source_claim(const json_t *meta, const char *source, json_t *claims, char *err,
                              size_t err_cap) {
  const char *quant = json_string_value(
      json_object_get(json_object_get(meta, "quantization"), "requested"));
  char real[PATH_MAX];
  json_t *cases = json_array(), *c;
  if (quant == NULL) quant = "source";
  if (source != NULL && realpath(source, real) == NULL) {
    snprintf(err, err_cap, "--source %s: %s", source, strerror(errno));
    json_decref(cases);
    return TL_ERR_IO;
  }
  c = source ? json_pack("{s:s,s:s}", "source", real, "quant", quant)
             : json_pack("{s:n,s:s}", "source", "quant", quant);
  json_array_append_new(cases, tl_plan_case(c));
  json_array_append_new(claims, json_pack(
      "{s:s,s:s,s:s,s:s,s:n,s:n,s:o}", "name", "source_binding", "kind", "source_binding",
      "level", "mechanical", "oracle", "the converter run again on the source checkpoint",
      "tolerance", "design", "cases", cases));
  return TL_OK;
}

/* The replay of every capture point (docs/promotion.md, `replay`): one
 * prompt as long as the model's context allows, up to 1024 positions, so
 * that RoPE and the cache are exercised where long prompts put them. */
static tl_status replay_claim(const tl_native_model *m, const json_t *meta, json_t *claims,
                              char *err, size_t err_cap) {
  json_int_t max_pos = json_integer_value(json_object_get(
      json_object_get(json_object_get(meta, "config"), "config"), "max_position_embeddings"));
  uint32_t tokens = max_pos > 1025 ? 1024 : max_pos > 2 ? (uint32_t)max_pos - 1 : 2;
  json_t *c = NULL, *cases;
  tl_status st = tl_plan_replay_case(m, tokens, &c, err, err_cap);
  if (st != TL_OK) return st;
  cases = json_array();
  json_array_append_new(cases, c);
  json_array_append_new(claims, json_pack(
      "{s:s,s:s,s:s,s:s,s:s,s:n,s:o}", "name", "replay", "kind", "replay", "level", "numerical",
      "oracle", "each stage recomputed in float64 from the lane's own captured inputs",
      "tolerance", TL_REPLAY_PROFILE, "design", "cases", cases));
  return TL_OK;
}

/* The project's default conversations for the sequence claims. */
static json_t *messages(const char *user) {
  return json_pack("[{s:s,s:s}]", "role", "user", "content", user);
}

static void sequence_claims(json_t *claims) {
  json_t *mt = json_array();
  json_array_append_new(mt, tl_plan_case(json_pack(
      "{s:o,s:s,s:i,s:b}", "messages", messages("What is 347 + 58?"), "next_user",
      "And what is 12 + 30?", "max_new", 24, "enable_thinking", 0)));
  json_array_append_new(mt, tl_plan_case(json_pack(
      "{s:o,s:s,s:i,s:b}", "messages", messages("What is the capital of Japan?"), "next_user",
      "And of Kenya?", "max_new", 24, "enable_thinking", 0)));
  json_array_append_new(claims, json_pack(
      "{s:s,s:s,s:s,s:s,s:n,s:n,s:o}", "name", "multiturn", "kind", "multiturn", "level",
      "multiturn", "oracle", "the same lane recomputing the whole conversation", "tolerance",
      "design", "cases", mt));
}

/* plan init's notes, one after another. */
static void printf_note(char *note, size_t cap, const char *more) {
  size_t len = strlen(note);
  snprintf(note + len, cap - len, "%s%s", len ? "; " : "", more);
}

int tl_cmd_plan(int argc, char **argv) {
  const char *model_path = NULL, *out_path = NULL, *reader = NULL, *lane = "fast";
  const char *source = NULL, *oracle = "auto";
  char oracle_golden[PATH_MAX], oracle_note[PATH_MAX + 128] = "";
  const char *goldens[64];
  size_t n_goldens = 0;
  bool json = false, force = false, benchmark = true;
  char err[1024], root[PATH_MAX], defpath[PATH_MAX], note[640] = "";
  tl_native_model m;
  uint8_t artifact[32];
  json_t *meta = NULL, *plan = NULL, *claims;
  tl_status st;
  int rc;
  json = tl_cli_wants_json(argc, argv);
  if (argc < 2 || strcmp(argv[1], "init") != 0) {
    if (argc >= 2 && strcmp(argv[1], "--help") == 0) {
      fputs(plan_usage, stdout);
      return TL_EXIT_OK;
    }
    return tl_cli_usage(json, "tinylm plan init MODEL.slm ...\n%s", plan_usage);
  }
  for (int i = 2; i < argc; i++) {
    int u;
    if (strcmp(argv[i], "--help") == 0) {
      fputs(plan_usage, stdout);
      return TL_EXIT_OK;
    } else if (strcmp(argv[i], "--json") == 0) {
    } else if (strcmp(argv[i], "--force") == 0) {
      force = true;
    } else if (strcmp(argv[i], "--no-benchmark") == 0) {
      benchmark = false;
    } else if (strcmp(argv[i], "-o") == 0) {
      if ((u = tl_cli_output_value(json, argc, argv, &i, &out_path)) >= 0) return u;
    } else if (strcmp(argv[i], "--lane") == 0) {
      if ((u = tl_cli_value(json, argc, argv, &i, &lane)) >= 0) return u;
      if (strcmp(lane, "scalar") != 0 && strcmp(lane, "fast") != 0)
        return tl_cli_usage(json, "--lane must be scalar or fast, got '%s'", lane);
    } else if (strcmp(argv[i], "--golden") == 0) {
      if (n_goldens == sizeof goldens / sizeof goldens[0])
        return tl_cli_usage(json, "at most 64 --golden files");
      if ((u = tl_cli_value(json, argc, argv, &i, &goldens[n_goldens])) >= 0) return u;
      n_goldens++;
    } else if (strcmp(argv[i], "--reader-json") == 0) {
      if ((u = tl_cli_value(json, argc, argv, &i, &reader)) >= 0) return u;
    } else if (strcmp(argv[i], "--source") == 0) {
      if ((u = tl_cli_value(json, argc, argv, &i, &source)) >= 0) return u;
    } else if (strcmp(argv[i], "--oracle") == 0) {
      if ((u = tl_cli_value(json, argc, argv, &i, &oracle)) >= 0) return u;
      if (strcmp(oracle, "auto") != 0 && strcmp(oracle, "numpy") != 0 &&
          strcmp(oracle, "none") != 0)
        return tl_cli_usage(json, "--oracle must be auto, numpy or none, got '%s'", oracle);
    } else if (argv[i][0] == '-') {
      return tl_cli_usage(json, "unknown option '%s'\n%s", argv[i], plan_usage);
    } else if (model_path == NULL) {
      model_path = argv[i];
    } else {
      return tl_cli_usage(json, "one MODEL.slm only\n%s", plan_usage);
    }
  }
  if (model_path == NULL) return tl_cli_usage(json, "MODEL.slm is required\n%s", plan_usage);
  if (out_path == NULL) {
    snprintf(defpath, sizeof defpath, "%s.plan.json", model_path);
    out_path = defpath;
  }
  {
    /* Never written over: the model, the reader's output, any golden. */
    const char *inputs[2 + sizeof goldens / sizeof goldens[0]] = {model_path, reader};
    for (size_t i = 0; i < n_goldens; i++) inputs[2 + i] = goldens[i];
    st = tl_file_output_check(out_path, inputs, 2 + n_goldens, force, NULL, err, sizeof err);
    if (st != TL_OK) return tl_cli_fail(json, st, "%s", err);
    {
      /* beside the plan: PLAN.json -> PLAN.numpy-golden.cbor */
      size_t n = strlen(out_path);
      if (n > 5 && strcmp(out_path + n - 5, ".json") == 0) n -= 5;
      snprintf(oracle_golden, sizeof oracle_golden, "%.*s.numpy-golden.cbor",
               (int)(n < 4000 ? n : 4000), out_path);
    }
    if (strcmp(oracle, "none") != 0 &&
        (st = tl_file_output_check(oracle_golden, inputs, 2 + n_goldens, force, NULL, err,
                                   sizeof err)) != TL_OK)
      return tl_cli_fail(json, st, "%s", err);
  }
  if ((st = file_sha256(model_path, artifact, err, sizeof err)) != TL_OK)
    return tl_cli_fail(json, st, "%s", err);
  if ((st = tl_native_model_open(model_path, &m, err, sizeof err)) != TL_OK)
    return tl_cli_fail(json, st, "%s", err);
  project_root(root, sizeof root);
  meta = metadata_json(&m, err, sizeof err);
  claims = json_array();
  st = meta == NULL ? TL_ERR_INVALID_MODEL : TL_OK;
  if (st == TL_OK) st = tl_plan_mechanical_claims(&m, root, reader, claims, err, sizeof err);
  if (st == TL_OK && m.has_tensors && strcmp(oracle, "none") != 0) {
    bool made = false;
    st = tl_plan_numpy_golden(&m, root, source, model_path, oracle_golden,
                              strcmp(oracle, "numpy") == 0, &made, oracle_note,
                              sizeof oracle_note, err, sizeof err);
    if (st == TL_OK && made) {
      if (n_goldens == sizeof goldens / sizeof goldens[0]) {
        snprintf(err, sizeof err, "at most 63 --golden files beside the oracle's");
        st = TL_ERR_INVALID_ARGUMENT;
      } else {
        goldens[n_goldens++] = oracle_golden;
      }
    }
  }
  if (st == TL_OK)
    st = numeric_claims(meta, root, goldens, n_goldens, claims, note, sizeof note, err,
                        sizeof err);
  if (st == TL_OK && m.has_tensors) st = source_claim(meta, source, claims, err, sizeof err);
  if (st == TL_OK && m.has_tensors) st = replay_claim(&m, meta, claims, err, sizeof err);
  if (st == TL_OK && m.has_tensors) {
    char snote[256] = "";
    sequence_claims(claims);
    st = tl_plan_stochastic_claim(model_path, lane, root, claims, snote, sizeof snote, err,
                                  sizeof err);
    if (st == TL_OK) printf_note(note, sizeof note, snote);
  }
  if (st == TL_OK) {
    char real[PATH_MAX];
    const json_t *acq = json_object_get(meta, "acquisition");
    if (realpath(model_path, real) == NULL) snprintf(real, sizeof real, "%s", model_path);
    plan = json_pack("{s:s,s:{s:o,s:s,s:o},s:s,s:O}", "format", TL_PLAN_FORMAT, "artifact", "id",
                     hex32(artifact), "path", real, "acquisition_receipt",
                     json_is_string(json_object_get(acq, "receipt_id"))
                         ? json_copy(json_object_get(acq, "receipt_id"))
                         : json_null(),
                     "lane", lane, "claims", claims);
    if (plan == NULL) st = TL_ERR_OUT_OF_MEMORY;
  }
  if (st == TL_OK && benchmark && m.has_tensors) {
    json_int_t max_pos = json_integer_value(
        json_object_get(json_object_get(json_object_get(meta, "config"), "config"),
                        "max_position_embeddings"));
    json_t *b = max_pos > 0 && max_pos <= UINT32_MAX
                    ? tl_bench_plan_default(lane, (uint32_t)max_pos)
                    : NULL;
    if (b != NULL) json_object_set_new(plan, "benchmark", b);
  }
  if (st == TL_OK) {
    /* Written as the reader will check it, in a stable layout. */
    char *text = json_dumps(plan, JSON_INDENT(1) | JSON_SORT_KEYS | JSON_REAL_PRECISION(15));
    tl_plan check;
    st = text ? tl_plan_parse((const uint8_t *)text, strlen(text), &check, err, sizeof err)
              : TL_ERR_OUT_OF_MEMORY;
    if (st == TL_OK) {
      tl_plan_free(&check);
      st = tl_file_write_atomic(out_path, text, strlen(text), err, sizeof err);
    }
    free(text);
  }
  if (st != TL_OK) {
    rc = tl_cli_fail(json, st, "%s", err);
  } else {
    size_t i;
    json_t *c;
    if (json) {
      json_t *o = json_pack("{s:s,s:[],s:s,s:s}", "plan", out_path, "claims", "note", note,
                            "oracle", oracle_note);
      json_array_foreach(claims, i, c)
        json_array_append_new(json_object_get(o, "claims"),
                              json_pack("{s:O,s:O,s:I}", "name", json_object_get(c, "name"),
                                        "level", json_object_get(c, "level"), "cases",
                                        (json_int_t)json_array_size(json_object_get(c, "cases"))));
      char *text = json_dumps(o, JSON_COMPACT);
      puts(text);
      free(text);
      json_decref(o);
    } else {
      printf("wrote %s (lane %s): %zu claims\n", out_path, lane, json_array_size(claims));
      json_array_foreach(claims, i, c)
        printf("  %-20s %-11s %zu cases\n", json_string_value(json_object_get(c, "name")),
               json_string_value(json_object_get(c, "level")),
               json_array_size(json_object_get(c, "cases")));
      if (note[0]) printf("  (%s)\n", note);
      if (oracle_note[0]) printf("  (%s)\n", oracle_note);
    }
    rc = TL_EXIT_OK;
  }
  json_decref(plan);
  json_decref(claims);
  json_decref(meta);
  tl_native_model_close(&m);
  return rc;
}

/* ------------------------------------------------------------------------ */
/* promote PLAN                                                             */

/* A plan, artifact or store that cannot be used: reported like any
 * failure, but exit 2, so that 1 always means "not promoted". */
#define UNUSABLE(...) unusable(tl_cli_fail(json, __VA_ARGS__))
static int unusable(int rc) {
  (void)rc;
  return TL_EXIT_USAGE;
}

static bool text_is(const json_t *o, const char *key, const char *want) {
  const char *v = json_string_value(json_object_get(o, key));
  return v != NULL && want != NULL && strcmp(v, want) == 0;
}

/* --reuse: the observation of a stored comparison receipt of this claim
 * with the same artifact, build, lane and cases (any policy). */
static bool find_reusable(tl_store *store, const tl_promote_runtime *rt, const tl_plan_claim *cl,
                          uint8_t observation[32]) {
  uint8_t(*ids)[32] = NULL;
  size_t n = 0;
  char err[256], art[65];
  bool found = false;
  tl_hex_encode(rt->artifact_id, 32, art);
  if (tl_store_list_receipts(store, &ids, &n, err, sizeof err) != TL_OK) return false;
  for (size_t i = 0; i < n && !found; i++) {
    uint8_t *doc = NULL, root[32];
    size_t len = 0;
    json_t *j = NULL;
    const json_t *runtime, *plan, *evidence, *artifact, *cases;
    if (tl_store_get_receipt(store, ids[i], &doc, &len, err, sizeof err) != TL_OK) continue;
    if (tl_graph_receipt_check(doc, len, "tinylm.comparison/1", root, err, sizeof err) == TL_OK &&
        memcmp(root, ids[i], 32) == 0 && tl_cbor_to_json(doc, len, &j, err, sizeof err) == TL_OK) {
      runtime = tl_json_node_meta(j, "runtime");
      plan = tl_json_node_meta(j, "plan");
      evidence = tl_json_node_meta(j, "evidence");
      artifact = tl_json_node_meta(j, "artifact");
      cases = json_object_get(evidence, "cases");
      found = text_is(artifact, "artifact_id", art) && text_is(runtime, "build_id", rt->build_id) &&
              text_is(runtime, "backend", rt->backend) && text_is(plan, "claim", cl->name) &&
              text_is(plan, "kind", cl->kind) && json_array_size(cases) == cl->n_cases &&
              json_array_size(json_object_get(evidence, "observations")) >= 1;
      for (size_t k = 0; found && k < cl->n_cases; k++) {
        char want[65];
        tl_hex_encode(cl->case_ids[k], 32, want);
        found = text_is(json_array_get(cases, k), "id", want);
      }
      if (found)
        found = tl_hex32_parse(
            json_string_value(json_array_get(json_object_get(evidence, "observations"), 0)),
            observation);
    }
    json_decref(j);
    free(doc);
  }
  free(ids);
  return found;
}

/* One claim: run (or judge again), retried once after an infrastructure
 * failure; both attempts go into the run record. */
static tl_status run_claim(tl_claim_ctx *c, const tl_plan_claim *cl, bool reuse,
                           const tl_promote_runtime *rt, tl_claim_result *res, uint32_t *attempt,
                           json_t *attempts, bool *reused) {
  const tl_claim_kind *kind = tl_claim_kind_find(cl->kind);
  uint8_t obs[32];
  tl_status st = TL_ERR_INVALID_ARGUMENT;
  *reused = false;
  if (reuse && (strcmp(cl->kind, "forward") == 0 || strcmp(cl->kind, "greedy") == 0) &&
      find_reusable(c->store, rt, cl, obs)) {
    st = kind->judge(c, obs, res);
    *attempt = 1;
    *reused = st == TL_OK;
    json_array_append_new(
        attempts, json_pack("{s:s,s:i,s:s,s:o,s:s}", "claim", cl->name, "attempt", 1, "status",
                            st == TL_OK ? "judged_again" : "stored_output_unusable",
                            "observation", hex32(obs), "error", st == TL_OK ? "" : c->err));
    if (st != TL_OK) {
      /* The stored raw output is gone or damaged. */
      char why[1024];
      snprintf(why, sizeof why, "%s", c->err);
      memset(res, 0, sizeof *res);
      res->stop_rule = TL_RULE_MISSING_OUTPUT;
      snprintf(res->first_divergence, sizeof res->first_divergence,
               "the stored raw output cannot be judged again: %.900s", why);
      snprintf(res->summary, sizeof res->summary, "stored raw output missing or damaged");
      return TL_OK;
    }
    return TL_OK;
  }
  for (*attempt = 1; *attempt <= 2; (*attempt)++) {
    double t0 = tl_now_s();
    c->err[0] = '\0';
    st = tl_claim_observe_judge(kind, c, res);
    json_array_append_new(attempts, json_pack("{s:s,s:i,s:s,s:s,s:I}", "claim", cl->name, "attempt",
                                              (int)*attempt, "status",
                                              st == TL_OK ? "ran" : "infrastructure_failure",
                                              "error", st == TL_OK ? "" : c->err, "ms",
                                              (json_int_t)((tl_now_s() - t0) * 1e3)));
    if (st == TL_OK) return TL_OK;
    /* A plan's case the runner cannot use is not an infrastructure
     * failure: a retry would see the same. */
    if (st == TL_ERR_INVALID_ARGUMENT || st == TL_ERR_HASH_MISMATCH) break;
  }
  if (*attempt > 2) *attempt = 2;
  {
    char why[1024];
    snprintf(why, sizeof why, "%s: %s", tl_status_name(st), c->err);
    memset(res, 0, sizeof *res);
    res->stop_rule = TL_RULE_MISSING_OUTPUT;
    snprintf(res->first_divergence, sizeof res->first_divergence, "no raw output: %.900s", why);
    snprintf(res->summary, sizeof res->summary, "no raw output (%s)", tl_status_name(st));
  }
  return TL_OK;
}

/* Mechanical claims first (their failures cannot be excused), then the
 * numerical and multi-turn ones, the stochastic comparison last and only
 * when every mechanical claim passed. */
static int claim_order(const tl_plan_claim *c) {
  return strcmp(c->level, "mechanical") == 0   ? 0
         : strcmp(c->level, "stochastic") == 0 ? 2
                                               : 1;
}

int tl_cmd_promote(int argc, char **argv) {
  const char *plan_path = NULL, *store_dir = NULL, *lane_flag = NULL, *key_path = NULL;
  tl_sign_key key;
  uint32_t threads = 0;
  bool json = false, reuse = false, mechanical_ok = true, promoted, benchmark = true;
  bool progress = false;
  char err[2048], plan_dir[PATH_MAX], slm_path[PATH_MAX], started[32];
  tl_file_view pv;
  tl_plan plan;
  tl_store *store = NULL;
  tl_session s;
  bool session_ok = false, bench_ran = false;
  char session_err[1024] = "", bench_err[1024] = "";
  uint8_t artifact[32], run_id[32], promo_root[32], custody_id[32], bench_id[32], sig_root[32];
  tl_claim_result *results = NULL;
  uint8_t(*receipt_ids)[32] = NULL;
  bool *ran = NULL;
  double *seconds = NULL; /* each claim's wall time (--json) */
  uint32_t *attempts_of = NULL;
  tl_promotion_claim *pc = NULL;
  json_t *attempts = NULL, *out_claims = NULL;
  tl_promote_runtime rt;
  tl_status st;
  int rc = TL_EXIT_USAGE;
  json = tl_cli_wants_json(argc, argv);
  if (argc >= 2 && strcmp(argv[1], "show") == 0) return tl_promote_show_main(argc - 1, argv + 1);
  if (argc >= 2 && strcmp(argv[1], "status") == 0)
    return tl_promote_status_main(argc - 1, argv + 1);
  if (argc >= 2 && strcmp(argv[1], "keygen") == 0)
    return tl_promote_keygen_main(argc - 1, argv + 1);
  for (int i = 1; i < argc; i++) {
    int u;
    if (strcmp(argv[i], "--help") == 0) {
      fputs(promote_usage, stdout);
      return TL_EXIT_OK;
    } else if (strcmp(argv[i], "--json") == 0) {
    } else if (strcmp(argv[i], "--reuse") == 0) {
      reuse = true;
    } else if (strcmp(argv[i], "--no-benchmark") == 0) {
      benchmark = false;
    } else if (strcmp(argv[i], "--progress") == 0) {
      progress = true;
    } else if (strcmp(argv[i], "--store") == 0) {
      if ((u = tl_cli_value(json, argc, argv, &i, &store_dir)) >= 0) return u;
    } else if (strcmp(argv[i], "--sign") == 0) {
      if ((u = tl_cli_value(json, argc, argv, &i, &key_path)) >= 0) return u;
    } else if (strcmp(argv[i], "--lane") == 0) {
      if ((u = tl_cli_value(json, argc, argv, &i, &lane_flag)) >= 0) return u;
    } else if (strcmp(argv[i], "-t") == 0 || strcmp(argv[i], "--threads") == 0) {
      const char *v;
      if ((u = tl_cli_value(json, argc, argv, &i, &v)) >= 0) return u;
      if ((u = tl_cli_flag_u32(json, argv[i - 1], v, 1, 256, &threads)) >= 0) return u;
    } else if (argv[i][0] == '-') {
      return tl_cli_usage(json, "unknown option '%s'\n%s", argv[i], promote_usage);
    } else if (plan_path == NULL) {
      plan_path = argv[i];
    } else {
      return tl_cli_usage(json, "one PLAN only\n%s", promote_usage);
    }
  }
  if (plan_path == NULL || store_dir == NULL)
    return tl_cli_usage(json, "PLAN and --store DIR are required\n%s", promote_usage);
  /* The key before anything runs: a promotion asked to be signed is not
   * run only to fail at the end. */
  if (key_path != NULL && (st = tl_sign_key_read(key_path, &key, err, sizeof err)) != TL_OK)
    return UNUSABLE(st, "--sign: %s", err);
  if ((st = tl_file_open_regular(plan_path, &pv, err, sizeof err)) != TL_OK)
    return UNUSABLE(st, "%s", err);
  st = tl_plan_parse(pv.data, pv.len, &plan, err, sizeof err);
  tl_file_close_view(&pv);
  if (st != TL_OK) return UNUSABLE(st, "%s: %s", plan_path, err);
  if (lane_flag != NULL && strcmp(lane_flag, plan.lane) != 0) {
    rc = tl_cli_usage(json, "the plan registers lane %s, not %s (plan init --lane %s writes one)",
                      plan.lane, lane_flag, lane_flag);
    tl_plan_free(&plan);
    return rc;
  }
  for (size_t i = 0; i < plan.n_claims; i++)
    if (strcmp(plan.claims[i].kind, "stochastic") == 0) {
      tl_stoch_design d;
      if ((st = tl_stoch_design_parse(plan.claims[i].design, plan.lane, &d, err, sizeof err)) !=
          TL_OK) {
        rc = UNUSABLE(st, "%s: claims[%zu].%s", plan_path, i, err);
        tl_plan_free(&plan);
        return rc;
      }
    }
  snprintf(plan_dir, sizeof plan_dir, "%s", plan_path);
  if (strrchr(plan_dir, '/') != NULL) *strrchr(plan_dir, '/') = '\0';
  else snprintf(plan_dir, sizeof plan_dir, ".");
  if (plan.artifact_path[0] == '/') snprintf(slm_path, sizeof slm_path, "%s", plan.artifact_path);
  else snprintf(slm_path, sizeof slm_path, "%.2000s/%.2000s", plan_dir, plan.artifact_path);
  /* The plan names its artifact by content: another file is another plan. */
  if ((st = file_sha256(slm_path, artifact, err, sizeof err)) != TL_OK) {
    rc = UNUSABLE(st, "%s", err);
    goto done;
  }
  if (memcmp(artifact, plan.artifact_id, 32) != 0) {
    char want[65], got[65];
    tl_hex_encode(plan.artifact_id, 32, want);
    tl_hex_encode(artifact, 32, got);
    rc = UNUSABLE(TL_ERR_HASH_MISMATCH,
                     "%s is artifact %s, the plan registers %s (tinylm plan init %s writes a "
                     "plan for it)",
                     slm_path, got, want, slm_path);
    goto done;
  }
  if ((rt.build_id = tl_promote_build_id(err, sizeof err)) == NULL) {
    rc = tl_cli_fail(json, TL_ERR_IO, "the build id: %s", err);
    goto done;
  }
  if ((st = tl_store_open(store_dir, true, &store, err, sizeof err)) != TL_OK) {
    rc = UNUSABLE(st, "%s", err);
    goto done;
  }
  {
    uint8_t pid[32];
    if ((st = tl_store_put(store, "plan", plan.bytes, plan.len, pid, err, sizeof err)) != TL_OK) {
      rc = tl_cli_fail(json, st, "%s", err);
      goto done;
    }
  }
  /* The lane the claims run on; an artifact that does not open leaves
   * only the artifact claim to say why. */
  if ((st = tl_session_open(&s, slm_path, session_err, sizeof session_err)) == TL_OK) {
    tl_lane_options o = tl_lane_defaults();
    o.fast = strcmp(plan.lane, "fast") == 0;
    if (threads) o.threads = threads;
    st = tl_session_lane(&s, &o, session_err, sizeof session_err);
    if (st == TL_OK) st = tl_session_plan(&s, 256, 0, session_err, sizeof session_err);
    if (st == TL_OK) st = tl_session_allocate(&s, 0, session_err, sizeof session_err);
    if (st != TL_OK) tl_session_close(&s);
    else session_ok = true;
  }
  rt.artifact_id = artifact;
  if (session_ok && (st = put_custody(store, &s, slm_path, artifact, rt.build_id, custody_id, err,
                                      sizeof err)) != TL_OK) {
    rc = tl_cli_fail(json, st, "%s", err);
    goto done;
  }
  rt.backend = plan.lane;
  rt.numerical_profile = session_ok ? tl_native_lane_profile(&s.lane)
                         : strcmp(plan.lane, "fast") == 0 ? "fast/4"
                                                           : "scalar-f32/1";
  attempts = json_array();
  out_claims = json_array();
  results = calloc(plan.n_claims, sizeof *results);
  receipt_ids = calloc(plan.n_claims, 32);
  ran = calloc(plan.n_claims, sizeof *ran);
  seconds = calloc(plan.n_claims, sizeof *seconds);
  attempts_of = calloc(plan.n_claims, sizeof *attempts_of);
  pc = calloc(plan.n_claims, sizeof *pc);
  if (!results || !receipt_ids || !ran || !seconds || !attempts_of || !pc || !attempts ||
      !out_claims) {
    rc = tl_cli_fail(json, TL_ERR_OUT_OF_MEMORY, "out of memory");
    goto done;
  }
  utc_now(started, sizeof started);
  for (int order = 0; order <= 2; order++) {
    for (size_t i = 0; i < plan.n_claims; i++) {
      const tl_plan_claim *cl = &plan.claims[i];
      tl_claim_ctx c = {store, session_ok ? &s : NULL, slm_path, plan.lane, threads,
                        cl->json, plan_dir, err, sizeof err, false, plan.artifact_id,
                        progress};
      bool reused = false;
      double t0 = tl_now_s();
      if (claim_order(cl) != order) continue;
      if (!session_ok && strcmp(cl->kind, "artifact") != 0) continue;
      if (order == 2 && !mechanical_ok) continue;
      st = run_claim(&c, cl, reuse, &rt, &results[i], &attempts_of[i], attempts, &reused);
      ran[i] = true;
      seconds[i] = tl_now_s() - t0;
      if (order == 0 && !results[i].pass) mechanical_ok = false;
      fprintf(stderr, "  %s %-18s %s%s (%.1f s)\n", results[i].pass ? "pass" : "FAIL",
              cl->name, results[i].summary,
              reused ? " (judged again from the stored raw output)" : "", seconds[i]);
    }
  }
  /* The benchmark step: after the claims, named by the run record; its
   * failure is recorded there and changes no verdict. Each point's
   * process loads the model itself: this one's copy goes first. */
  if (benchmark && plan.has_benchmark && session_ok) {
    tl_bench_step b = {&plan, slm_path, artifact, rt.build_id, threads, NULL};
    bench_ran = true;
    tl_session_close(&s);
    if ((st = tl_promote_benchmark(&b, store, bench_id, bench_err, sizeof bench_err)) != TL_OK) {
      if (bench_err[0] == '\0') snprintf(bench_err, sizeof bench_err, "%s", tl_status_name(st));
      fprintf(stderr, "  benchmark not recorded: %s\n", bench_err);
    } else {
      bench_err[0] = '\0';
    }
  }
  /* The run record: what ran, each attempt, when it started (before the
   * first claim) and finished (after the benchmark step). */
  {
    char finished[32];
    char *text;
    json_t *rec;
    utc_now(finished, sizeof finished);
    rec = json_pack("{s:s,s:o,s:o,s:s,s:s,s:s,s:i,s:s,s:s,s:O}", "format",
                    "tinylm.promote-run/1", "plan", hex32(plan.id), "artifact", hex32(artifact),
                    "lane", plan.lane, "build_id", rt.build_id, "build_describe",
                    tl_promote_build_describe(), "threads", (int)threads, "started", started,
                    "finished", finished, "attempts", attempts);
    if (rec != NULL && session_ok) json_object_set_new(rec, "custody", hex32(custody_id));
    if (rec != NULL && bench_ran)
      json_object_set_new(rec, bench_err[0] ? "benchmark_error" : "benchmark",
                          bench_err[0] ? json_string(bench_err) : hex32(bench_id));
    text = tl_plan_canonical(rec);
    st = text ? tl_store_put(store, "run", (const uint8_t *)text, strlen(text), run_id, err,
                             sizeof err)
              : TL_ERR_OUT_OF_MEMORY;
    free(text);
    json_decref(rec);
    if (st != TL_OK) {
      rc = tl_cli_fail(json, st, "%s", err);
      goto done;
    }
  }
  for (size_t i = 0; i < plan.n_claims; i++) {
    const tl_plan_claim *cl = &plan.claims[i];
    pc[i].claim = cl->name;
    if (!ran[i]) {
      pc[i].receipt_id = NULL;
      pc[i].pass = false;
      pc[i].stop_rule = NULL;
      json_array_append_new(out_claims,
                            json_pack("{s:s,s:s,s:n,s:s}", "claim", cl->name, "verdict", "not_run",
                                      "stop_rule", "why",
                                      session_ok ? "a mechanical claim failed"
                                                 : "the artifact did not open"));
      continue;
    }
    {
      /* A numerical claim names the profile it was judged by. */
      const char *tolerance = tl_claim_profile(cl->kind, cl->level, cl->tolerance, plan.lane);
      tl_comparison_facts f = {rt,        plan.id,
                               cl->name,  cl->kind,
                               cl->level, cl->oracle,
                               tolerance,
                               strcmp(cl->kind, "stochastic") == 0 ? cl->design_sha256 : NULL,
                               &results[i], attempts_of[i]};
      uint8_t *doc = NULL;
      size_t len = 0;
      st = tl_comparison_receipt(&f, &doc, &len, receipt_ids[i], err, sizeof err);
      if (st == TL_OK)
        st = tl_store_put_receipt(store, "comparison", receipt_ids[i], doc, len, err, sizeof err);
      free(doc);
      if (st != TL_OK) {
        rc = tl_cli_fail(json, st, "claim %s: %s", cl->name, err);
        goto done;
      }
    }
    pc[i].receipt_id = receipt_ids[i];
    pc[i].pass = results[i].pass;
    pc[i].stop_rule = results[i].stop_rule;
    json_array_append_new(out_claims, json_pack(
        "{s:s,s:s,s:o,s:s,s:s,s:o,s:f}", "claim", cl->name, "verdict",
        results[i].pass ? "pass" : "fail", "stop_rule",
        results[i].stop_rule ? json_string(results[i].stop_rule) : json_null(), "summary",
        results[i].summary, "first_divergence", results[i].first_divergence, "receipt",
        hex32(receipt_ids[i]), "seconds", seconds[i]));
  }
  {
    tl_promotion_facts f = {rt, plan.id, plan.lane, pc, plan.n_claims, run_id};
    uint8_t *doc = NULL;
    size_t len = 0;
    st = tl_promotion_receipt(&f, &doc, &len, promo_root, err, sizeof err);
    if (st == TL_OK)
      st = tl_store_put_receipt(store, "promotion", promo_root, doc, len, err, sizeof err);
    free(doc);
    if (st != TL_OK) {
      rc = tl_cli_fail(json, st, "the promotion receipt: %s", err);
      goto done;
    }
    if (key_path != NULL &&
        (st = tl_sign_promotion(store, &key, promo_root, sig_root, err, sizeof err)) != TL_OK) {
      rc = tl_cli_fail(json, st, "signing the promotion: %s", err);
      goto done;
    }
  }
  promoted = true;
  for (size_t i = 0; i < plan.n_claims; i++) promoted = promoted && ran[i] && results[i].pass;
  {
    char root_hex[65], path[PATH_MAX + 80], sig_hex[65], sig_path[PATH_MAX + 80] = "";
    size_t passed = 0;
    tl_hex_encode(promo_root, 32, root_hex);
    snprintf(path, sizeof path, "%s/receipts/%s.cbor", store_dir, root_hex);
    if (key_path != NULL) {
      tl_hex_encode(sig_root, 32, sig_hex);
      snprintf(sig_path, sizeof sig_path, "%s/receipts/%s.cbor", store_dir, sig_hex);
    }
    for (size_t i = 0; i < plan.n_claims; i++) passed += ran[i] && results[i].pass;
    if (json) {
      json_t *o = json_pack("{s:s,s:s,s:s,s:s,s:O}", "decision",
                            promoted ? "promoted" : "not_promoted", "lane", plan.lane, "receipt",
                            root_hex, "path", path, "claims", out_claims);
      if (key_path != NULL) json_object_set_new(o, "signature", json_string(sig_path));
      char *text = json_dumps(o, JSON_COMPACT);
      puts(text);
      free(text);
      json_decref(o);
    } else {
      if (!session_ok) fprintf(stderr, "the artifact did not open: %s\n", session_err);
      for (size_t i = 0; i < plan.n_claims; i++)
        if (ran[i] && !results[i].pass)
          fprintf(stderr, "claim %s failed (%s): %s\n", plan.claims[i].name,
                  results[i].stop_rule ? results[i].stop_rule : "?",
                  results[i].first_divergence);
        else if (!ran[i])
          fprintf(stderr, "claim %s did not run (%s)\n", plan.claims[i].name,
                  session_ok ? "a mechanical claim failed" : "the artifact did not open");
      printf("%s: %zu of %zu claims passed on lane %s\npromotion receipt %s\n",
             promoted ? "promoted" : "not promoted", passed, plan.n_claims, plan.lane, path);
      if (key_path != NULL) printf("signature receipt %s\n", sig_path);
    }
    rc = promoted ? TL_EXIT_OK : TL_EXIT_FAILURE;
  }
done:
  for (size_t i = 0; results && i < plan.n_claims; i++) tl_claim_result_free(&results[i]);
  free(results);
  free(receipt_ids);
  free(ran);
  free(seconds);
  free(attempts_of);
  free(pc);
  json_decref(attempts);
  json_decref(out_claims);
  if (session_ok && !bench_ran) tl_session_close(&s);
  if (store) tl_store_close(store);
  tl_plan_free(&plan);
  tl_sign_key_clear(&key);
  return rc;
}
