/* tinylm observe: a prompt's forward pass as observation records (one per
 * capture point: BLAKE3 of the row and its summaries, docs/observe.md)
 * written to a tinylm.observe/1 document through the public API; and
 * --compare, which matches two documents record by record and names the
 * first divergence with verify's bisection (tl_qwen3_first_divergence). */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "cli.h"
#include "file.h"
#include "lane.h"
#include "model/observe.h"
#include "observe_bounds.h"
#include "compare.h"
#include "session.h"
#include "run_common.h"

static const char usage_text[] =
    "usage: tinylm observe MODEL.slm (--prompt S | --ids \"1 2 3\") -o FILE\n"
    "                      [--force] [--json] [--lane scalar|fast] [-t N] [--mmap]\n"
    "       tinylm observe --compare A B [--model MODEL.slm] [--json]\n"
    "  the prompt's forward pass (from position 0, in one call) with every\n"
    "  capture point (stage, layer, position) as an observation record: the\n"
    "  BLAKE3 of the row and its min, max, L2, mean and variance\n"
    "  (tinylm.observe/1, docs/observe.md)\n"
    "  -o FILE   where the document goes (--force: replace it); -o - writes\n"
    "            it to stdout (the summary line then goes to stderr)\n"
    "  --compare A B  'identical (N records)', or the first divergence\n"
    "            (stage, layer, position, both records) as verify bisects;\n"
    "            exit 1 when the records differ or the inputs do\n"
    "  --model MODEL.slm  with --compare of a fast/4 and a webgpu/1 document of\n"
    "            this artifact: 'within_profile' when every record lies within\n"
    "            webgpu-vs-fast/1 (docs/webgpu-profile.md), else 'outside_profile'\n"
    "            naming the first record outside (exit 1)\n" TL_LANE_USAGE;

/* ---- observe -------------------------------------------------------------- */

static int observe(int argc, char **argv) {
  const char *model_path = NULL, *prompt = NULL, *ids_text = NULL, *out_path = NULL;
  bool json = false, force = false;
  tl_lane_options lane = tl_lane_defaults();
  tl_session_options so;
  tl_model_handle model = TL_NO_HANDLE;
  tl_session_handle session = TL_NO_HANDLE;
  uint32_t *ids = NULL;
  size_t n_ids = 0, len = 0;
  uint8_t *doc = NULL;
  char err[1024];
  tl_status st;
  int rc;
  bool to_stdout;
  json = tl_cli_wants_json(argc, argv);
  for (int i = 1; i < argc; i++) {
    int lane_rc;
    if (strcmp(argv[i], "--json") == 0) {
      json = true;
    } else if (strcmp(argv[i], "--force") == 0) {
      force = true;
    } else if (strcmp(argv[i], "--prompt") == 0) {
      int u = tl_cli_value(json, argc, argv, &i, &prompt);
      if (u >= 0) return u;
    } else if (strcmp(argv[i], "--ids") == 0) {
      int u = tl_cli_value(json, argc, argv, &i, &ids_text);
      if (u >= 0) return u;
    } else if (strcmp(argv[i], "-o") == 0) {
      int u = tl_cli_value(json, argc, argv, &i, &out_path);
      if (u >= 0) return u;
    } else if ((lane_rc = tl_lane_flag(json, argc, argv, &i, &lane)) != 0) {
      if (lane_rc > 0) return lane_rc;
    } else if (argv[i][0] == '-') {
      return tl_cli_usage(json, "unknown option '%s' (tinylm observe --help)", argv[i]);
    } else if (model_path == NULL) {
      model_path = argv[i];
    } else {
      return tl_cli_usage(json, "one MODEL.slm only (tinylm observe --help)");
    }
  }
  if (model_path == NULL || out_path == NULL || (prompt == NULL) == (ids_text == NULL))
    return tl_cli_usage(json, "MODEL.slm, -o FILE and one of --prompt and --ids are required "
                        "(tinylm observe --help)");
  if (ids_text != NULL && tl_cli_parse_ids(ids_text, &ids, &n_ids) != 0)
    return tl_cli_usage(json, "--ids: token ids are decimal numbers below 2^32, not '%s'",
                        ids_text);
  to_stdout = strcmp(out_path, "-") == 0;
  if (to_stdout && json) {
    free(ids);
    return tl_cli_usage(json, "-o - puts the document on stdout: not with --json");
  }
  if (!to_stdout) {
    const char *inputs[] = {model_path};
    st = tl_file_output_check(out_path, inputs, 1, force, NULL, err, sizeof err);
    if (st != TL_OK) {
      free(ids);
      return tl_cli_fail(json, st, "%s", err);
    }
  }
  memset(&so, 0, sizeof so);
  so.lane = lane.fast ? TL_LANE_FAST : TL_LANE_SCALAR;
  so.threads = lane.threads;
  so.flags = lane.mmap ? TL_SESSION_NO_COPY : 0;
  if (tl_api_init(TL_ABI_VERSION) != TL_OK || tl_model_open_file(model_path, &model) != TL_OK) {
    free(ids);
    return tl_run_api_fail(json, TL_NO_HANDLE);
  }
  if (tl_session_new(model, &so, &session) != TL_OK) {
    rc = tl_run_api_fail(json, model);
    goto done;
  }
  /* The size first, then the document (the session keeps the document
   * the size query computed, so the pass runs once). */
  st = tl_session_observe(session, prompt, prompt ? strlen(prompt) : 0, ids, n_ids, NULL, 0, &len);
  if (st == TL_ERR_BOUNDS && (doc = malloc(len ? len : 1)) != NULL)
    st = tl_session_observe(session, prompt, prompt ? strlen(prompt) : 0, ids, n_ids, doc, len,
                            &len);
  if (st != TL_OK) {
    if (doc == NULL && st == TL_ERR_BOUNDS) rc = tl_cli_fail(json, TL_ERR_OUT_OF_MEMORY, "out of memory");
    else rc = tl_run_api_fail(json, session);
    goto done;
  }
  if (to_stdout) {
    fwrite(doc, 1, len, stdout);
    st = tl_cli_flush(stdout) ? TL_OK : TL_ERR_IO;
    snprintf(err, sizeof err, "cannot write standard output");
  } else {
    st = tl_file_write_atomic(out_path, doc, len, err, sizeof err);
  }
  if (st != TL_OK) {
    rc = tl_cli_fail(json, st, "%s", err);
    goto done;
  }
  {
    tl_observe_doc d;
    tl_arena a;
    size_t cap = 4 * len + 65536;
    void *mem = malloc(cap);
    const char *why;
    /* read back what was written: the summary line says what it holds */
    st = mem ? tl_arena_init(&a, mem, cap) : TL_ERR_OUT_OF_MEMORY;
    if (st == TL_OK) st = tl_observe_read(doc, len, &d, &a, &why);
    if (st != TL_OK) {
      free(mem);
      rc = tl_cli_fail(json, TL_ERR_INTERNAL_INVARIANT, "the document written does not read back");
      goto done;
    }
    if (json) {
      json_t *o = json_pack("{s:s,s:I,s:I,s:s,s:s,s:s,s:I,s:I}", "file", out_path, "records",
                            (json_int_t)d.n_records, "positions", (json_int_t)d.meta.n_ids,
                            "lane", d.meta.lane, "profile", d.meta.profile, "isa", d.meta.isa,
                            "threads", (json_int_t)d.meta.threads, "bytes", (json_int_t)len);
      char *text = json_dumps(o, JSON_COMPACT);
      puts(text);
      free(text);
      json_decref(o);
    } else {
      fprintf(to_stdout ? stderr : stdout,
              "%zu records of %zu positions (lane %s, profile %s, isa %s, %u threads) in %s\n",
              d.n_records, d.meta.n_ids, d.meta.lane, d.meta.profile, d.meta.isa,
              (unsigned)d.meta.threads, to_stdout ? "standard output" : out_path);
    }
    free(mem);
  }
  rc = TL_EXIT_OK;
done:
  free(doc);
  free(ids);
  if (session != TL_NO_HANDLE) tl_session_free(session);
  tl_model_close(model);
  return rc;
}

/* ---- compare --------------------------------------------------------------- */

typedef struct loaded {
  tl_file_view view;
  void *mem;
  tl_arena arena;
  tl_observe_doc doc;
} loaded;

static int load(bool json, const char *path, loaded *l) {
  char err[1024];
  const char *why = NULL;
  size_t cap;
  tl_status st = tl_file_open_view(path, &l->view, err, sizeof err);
  if (st != TL_OK) return tl_cli_fail(json, st, "%s", err);
  /* records and ids take at most 4 bytes of memory per byte of document */
  cap = l->view.len > (SIZE_MAX - 65536) / 4 ? SIZE_MAX : 4 * l->view.len + 65536;
  l->mem = cap < SIZE_MAX ? malloc(cap) : NULL;
  st = l->mem ? tl_arena_init(&l->arena, l->mem, cap) : TL_ERR_OUT_OF_MEMORY;
  if (st == TL_OK) st = tl_observe_read(l->view.data, l->view.len, &l->doc, &l->arena, &why);
  if (st != TL_OK)
    return tl_cli_fail(json, st, "%s: not a %s document (%s)", path, TL_OBSERVE_FORMAT,
                       why ? why : tl_status_name(st));
  return -1;
}

static void unload(loaded *l) {
  tl_file_close_view(&l->view);
  free(l->mem);
}

/* JSON has no infinities or NaN: those are written as text. */
static json_t *number_json(double v) {
  if (isfinite(v)) return json_real(v);
  return json_string(v != v ? "nan" : v > 0 ? "inf" : "-inf");
}

static json_t *record_json(const tl_observe_record *r, size_t index) {
  char hex[65];
  tl_hex_encode(r->blake3, sizeof r->blake3, hex);
  return json_pack("{s:I,s:I,s:I,s:s,s:o,s:o,s:o,s:o,s:o}", "record", (json_int_t)index, "count",
                   (json_int_t)r->count, "nonfinite", (json_int_t)r->nonfinite, "blake3", hex,
                   "min", number_json(r->min), "max", number_json(r->max), "l2",
                   number_json(r->l2), "mean", number_json(r->mean), "variance",
                   number_json(r->variance));
}

static json_t *producer_json(const tl_observe_meta *m, size_t n) {
  return json_pack("{s:s,s:s,s:s,s:s,s:I,s:I}", "lane", m->lane, "profile", m->profile, "host",
                   m->host, "isa", m->isa, "threads", (json_int_t)m->threads, "records",
                   (json_int_t)n);
}

static void print_record(const char *label, const tl_observe_record *r, size_t index) {
  char hex[65];
  if (r == NULL) {
    printf("  %s: no record\n", label);
    return;
  }
  tl_hex_encode(r->blake3, 8, hex);
  printf("  %s: record %zu, %llu elements, blake3 %s..., min %.9g max %.9g l2 %.9g mean %.9g "
         "variance %.9g\n",
         label, index, (unsigned long long)r->count, hex, r->min, r->max, r->l2, r->mean,
         r->variance);
}

static const char *const verdicts[] = {"identical", "diverged", "different_profile",
                                       "different_input"};

/* W-5 of docs/webgpu-profile.md: the webgpu/1 document judged against the
 * fast/4 one through model_path's norm weights and shape. Returns an exit
 * code. */
static int within(bool json, const char *model_path, const char *const *paths,
                  const tl_observe_doc *a, const tl_observe_doc *b) {
  bool a_ref = strcmp(a->meta.profile, TL_FAST_PROFILE) == 0;
  const tl_observe_doc *ref = a_ref ? a : b, *cand = a_ref ? b : a;
  const char *ref_path = a_ref ? paths[0] : paths[1], *cand_path = a_ref ? paths[1] : paths[0];
  tl_session s;
  tl_observe_within_result w;
  char err[512];
  uint8_t id[32];
  double *es = NULL;
  tl_qtype q;
  tl_status st;
  int rc;
  memset(&s, 0, sizeof s);
  st = tl_session_open(&s, model_path, err, sizeof err);
  if (st != TL_OK) return tl_cli_fail(json, st, "%s", err);
  st = tl_native_model_artifact_id(&s.model, id);
  if (st == TL_OK && memcmp(id, a->meta.artifact, sizeof id) != 0) {
    rc = tl_cli_fail(json, TL_ERR_INVALID_ARGUMENT,
                     "%s is not the artifact %s and %s observe (its SHA-256 differs)", model_path,
                     paths[0], paths[1]);
    goto done;
  }
  es = calloc(s.qwen.cfg.layers ? s.qwen.cfg.layers : 1, sizeof *es);
  if (st == TL_OK) st = es != NULL ? tl_kv_score_errors(&s.qwen, es) : TL_ERR_OUT_OF_MEMORY;
  q = s.qwen.layers[0].q.type;
  if (st == TL_OK)
    st = tl_observe_within(ref, cand, &s.qwen.cfg, q == TL_QTYPE_Q8 || q == TL_QTYPE_Q4, es, &w);
  if (st != TL_OK) {
    rc = tl_cli_fail(json, st, "cannot judge %s against %s: %s", cand_path, ref_path,
                     tl_status_name(st));
    goto done;
  }
  if (json) {
    json_t *o = json_pack("{s:s,s:s,s:s,s:s,s:I,s:I,s:I,s:o}", "verdict",
                          w.outside ? "outside_profile" : "within_profile", "tolerance",
                          TL_TOLERANCE_PROFILE_WEBGPU, "reference", ref_path, "candidate",
                          cand_path, "compared", (json_int_t)w.compared, "identical",
                          (json_int_t)w.identical, "outside", (json_int_t)w.outside,
                          "max_bound_ratio", number_json(w.max_ratio));
    char *text;
    if (w.outside) {
      const tl_observe_record *r = &ref->records[w.first_ref];
      json_object_set_new(
          o, "first_outside",
          json_pack("{s:s,s:o,s:I,s:s,s:o,s:o,s:o}", "stage", tl_qwen3_stage_name(r->stage),
                    "layer", r->layer < 0 ? json_null() : json_integer(r->layer), "position",
                    (json_int_t)r->pos, "summary", w.field, "bound_ratio", number_json(w.ratio),
                    "reference", record_json(r, w.first_ref), "candidate",
                    record_json(&cand->records[w.first_cand], w.first_cand)));
    }
    text = json_dumps(o, JSON_COMPACT);
    puts(text);
    free(text);
    json_decref(o);
  } else if (!w.outside) {
    printf("within_profile (%s): %zu records, %zu identical, largest bound ratio %.3g\n",
           TL_TOLERANCE_PROFILE_WEBGPU, w.compared, w.identical, w.max_ratio);
  } else {
    const tl_observe_record *r = &ref->records[w.first_ref];
    char layer[16] = "-";
    if (r->layer >= 0) snprintf(layer, sizeof layer, "%d", (int)r->layer);
    printf("outside_profile (%s): %zu of %zu records outside, the first at stage %s, layer %s, "
           "position %u (its %s at %.3g times the bound)\n",
           TL_TOLERANCE_PROFILE_WEBGPU, w.outside, w.compared, tl_qwen3_stage_name(r->stage),
           layer, r->pos, w.field, w.ratio);
    print_record(ref_path, r, w.first_ref);
    print_record(cand_path, &cand->records[w.first_cand], w.first_cand);
  }
  rc = w.outside ? TL_EXIT_FAILURE : TL_EXIT_OK;
done:
  free(es);
  tl_session_close(&s);
  return rc;
}

static int compare(int argc, char **argv) {
  const char *paths[2] = {NULL, NULL}, *model_path = NULL;
  bool json = false;
  size_t n_paths = 0;
  loaded l[2];
  tl_observe_diff d;
  void *mem = NULL;
  tl_arena scratch;
  size_t cap;
  const char *why = NULL;
  tl_status st;
  int rc;
  const tl_observe_doc *a, *b;
  const tl_observe_record *ra = NULL, *rb = NULL;
  json = tl_cli_wants_json(argc, argv);
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--json") == 0 || strcmp(argv[i], "--compare") == 0) continue;
    if (strcmp(argv[i], "--model") == 0) {
      if (i + 1 >= argc) return tl_cli_usage(json, "--model needs a MODEL.slm");
      model_path = argv[++i];
      continue;
    }
    if (argv[i][0] == '-')
      return tl_cli_usage(json, "unknown option '%s' with --compare (tinylm observe --help)",
                          argv[i]);
    if (n_paths == 2) return tl_cli_usage(json, "--compare takes two documents, A and B");
    paths[n_paths++] = argv[i];
  }
  if (n_paths != 2) return tl_cli_usage(json, "--compare takes two documents, A and B");
  memset(l, 0, sizeof l);
  if ((rc = load(json, paths[0], &l[0])) >= 0 || (rc = load(json, paths[1], &l[1])) >= 0)
    goto done;
  a = &l[0].doc;
  b = &l[1].doc;
  cap = tl_observe_compare_bound(a);
  mem = cap < SIZE_MAX ? malloc(cap) : NULL;
  st = mem ? tl_arena_init(&scratch, mem, cap) : TL_ERR_OUT_OF_MEMORY;
  if (st == TL_OK) st = tl_observe_compare(a, b, &scratch, &d, &why);
  if (st != TL_OK) {
    rc = tl_cli_fail(json, st, "cannot compare %s and %s: %s", paths[0], paths[1],
                     why ? why : tl_status_name(st));
    goto done;
  }
  if (model_path != NULL && d.verdict != TL_OBSERVE_DIFFERENT_INPUT) {
    if (!tl_observe_within_applies(a->meta.profile, b->meta.profile)) {
      rc = tl_cli_usage(json, "--model judges a %s document against a %s one; these are %s and %s",
                        TL_WEBGPU_PROFILE, TL_FAST_PROFILE, a->meta.profile, b->meta.profile);
      goto done;
    }
    rc = within(json, model_path, paths, a, b);
    goto done;
  }
  if (d.index_a != SIZE_MAX) ra = &a->records[d.index_a];
  if (d.index_b != SIZE_MAX) rb = &b->records[d.index_b];
  if (json) {
    json_t *o = json_pack("{s:s,s:o,s:o,s:{s:I,s:I,s:I,s:I}}", "verdict", verdicts[d.verdict], "a",
                          producer_json(&a->meta, a->n_records), "b",
                          producer_json(&b->meta, b->n_records), "records", "compared",
                          (json_int_t)d.compared, "differing", (json_int_t)d.differing, "only_a",
                          (json_int_t)d.only_a, "only_b", (json_int_t)d.only_b);
    char *text;
    if (d.verdict == TL_OBSERVE_DIFFERENT_INPUT)
      json_object_set_new(o, "different", json_string(d.input));
    if (d.verdict == TL_OBSERVE_DIVERGED || d.verdict == TL_OBSERVE_DIFFERENT_PROFILE)
      json_object_set_new(
          o, "first_divergence",
          json_pack("{s:s,s:o,s:I,s:I,s:o,s:o}", "stage", tl_qwen3_stage_name(d.stage), "layer",
                    d.layer < 0 ? json_null() : json_integer(d.layer), "position",
                    (json_int_t)d.pos, "layer_probes", (json_int_t)d.probes, "a",
                    ra ? record_json(ra, d.index_a) : json_null(), "b",
                    rb ? record_json(rb, d.index_b) : json_null()));
    text = json_dumps(o, JSON_COMPACT);
    puts(text);
    free(text);
    json_decref(o);
  } else if (d.verdict == TL_OBSERVE_IDENTICAL) {
    printf("identical (%zu records)\n", d.compared);
  } else if (d.verdict == TL_OBSERVE_DIFFERENT_INPUT) {
    printf("not comparable: the documents observe a different %s\n", d.input);
  } else {
    char layer[16] = "-";
    if (d.layer >= 0) snprintf(layer, sizeof layer, "%d", (int)d.layer);
    if (d.verdict == TL_OBSERVE_DIFFERENT_PROFILE)
      printf("different profiles (%s: %s, %s: %s): their records are not meant to be equal; "
             "%zu of %zu differ, the first at stage %s, layer %s, position %u\n",
             paths[0], a->meta.profile, paths[1], b->meta.profile, d.differing, d.compared,
             tl_qwen3_stage_name(d.stage), layer, d.pos);
    else
      printf("diverged: first divergence at stage %s, layer %s, position %u (%zu layer_out "
             "probes); %zu of %zu records differ, %zu only in %s, %zu only in %s\n",
             tl_qwen3_stage_name(d.stage), layer, d.pos, d.probes, d.differing, d.compared,
             d.only_a, paths[0], d.only_b, paths[1]);
    print_record(paths[0], ra, d.index_a);
    print_record(paths[1], rb, d.index_b);
  }
  rc = d.verdict == TL_OBSERVE_IDENTICAL ? TL_EXIT_OK : TL_EXIT_FAILURE;
done:
  free(mem);
  unload(&l[0]);
  unload(&l[1]);
  return rc;
}

int tl_cmd_observe(int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--help") == 0) {
      fputs(usage_text, stdout);
      return TL_EXIT_OK;
    }
  }
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], "--compare") == 0) return compare(argc, argv);
  return observe(argc, argv);
}
