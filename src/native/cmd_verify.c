/* tinylm verify: run a model on a golden document's prompt with capture,
 * compare every captured tensor with the golden values under the
 * preregistered tolerance profile (docs/tolerance.md), and on failure
 * name the first divergence: layer (binary search over the residual
 * checkpoints), then stage, then position, head and index. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "cli.h"
#include "compare.h"
#include "file.h"
#include "golden.h"
#include "model/qwen3.h"
#include "session.h"
#include "verify.h"

static const char usage_text[] =
    "usage: tinylm verify MODEL.slm --golden FILE [--json] [--dump OUT.cbor]\n"
    "                     [--force] [--lane scalar|fast] [-t N] [--mmap]\n"
    "  --dump  also write this run's values for the golden's records, in the\n"
    "          same schema (producer tinylm-scalar or tinylm-fast, with the\n"
    "          lane's numerical profile)\n"
    "  --force replace an existing --dump file (never MODEL or FILE)\n"
    "  FILE: a tinylm.golden/1 document (docs/golden.md), e.g. from\n"
    "  tools/oracle/qwen3_ref.py on the checkpoint the model came from\n"
    "  --lane scalar (default: the strict lane, tolerance scalar-f32-vs-f64/1)\n"
    "  or fast (fast/4, tolerance fast-f32-vs-f64/2: docs/fast-profile.md);\n"
    "  -t N and --mmap as for run\n";

static const struct {
  const char *name;
  uint32_t bit;
} mutations[] = {{"rope_pairing", TL_QWEN3_MUT_ROPE_PAIRING},
                 {"no_q_norm", TL_QWEN3_MUT_NO_Q_NORM},
                 {"gqa_map", TL_QWEN3_MUT_GQA_MAP},
                 {"softmax_no_max", TL_QWEN3_MUT_SOFTMAX_NO_MAX},
                 {"mask_off_by_one", TL_QWEN3_MUT_MASK_OFF_BY_ONE},
                 {"rms_eps", TL_QWEN3_MUT_RMS_EPS}};

static long long count_of(const json_t *counts, const char *name) {
  return (long long)json_integer_value(json_object_get(counts, name));
}

int tl_cmd_verify(int argc, char **argv) {
  const char *model_path = NULL, *golden_path = NULL, *dump_path = NULL;
  bool json = false, force = false;
  uint32_t mutate = 0;
  tl_lane_options lane = tl_lane_defaults();
  tl_session s;
  tl_qwen3_fault fault;
  tl_golden g;
  tl_file_view gv;
  tl_verify_obs obs = {0};
  char err[1024];
  tl_status st;
  int rc = TL_EXIT_OK;
  json_t *out = NULL;
  /* --json anywhere makes every usage error JSON. */
  json = tl_cli_wants_json(argc, argv);
  lane.fast = false; /* the strict lane is verify's reference */
  for (int i = 1; i < argc; i++) {
    int lane_rc;
    if (strcmp(argv[i], "--help") == 0) {
      fputs(usage_text, stdout);
      return TL_EXIT_OK;
    } else if (strcmp(argv[i], "--json") == 0) {
      json = true;
    } else if (strcmp(argv[i], "--golden") == 0) {
      int u = tl_cli_value(json, argc, argv, &i, &golden_path);
      if (u >= 0) return u;
    } else if (strcmp(argv[i], "--dump") == 0) {
      int u = tl_cli_output_value(json, argc, argv, &i, &dump_path);
      if (u >= 0) return u;
    } else if (strcmp(argv[i], "--force") == 0) {
      force = true;
    } else if (strcmp(argv[i], "--mutate") == 0) {
      /* Test-only: break one piece on purpose (docs/forward.md). */
      const char *name;
      int u = tl_cli_value(json, argc, argv, &i, &name);
      size_t k = 0;
      if (u >= 0) return u;
      for (; k < sizeof mutations / sizeof mutations[0]; k++)
        if (strcmp(name, mutations[k].name) == 0) break;
      if (k == sizeof mutations / sizeof mutations[0])
        return tl_cli_usage(json, "unknown mutation '%s'", name);
      mutate |= mutations[k].bit;
    } else if ((lane_rc = tl_lane_flag(json, argc, argv, &i, &lane)) != 0) {
      if (lane_rc > 0) return lane_rc;
    } else if (argv[i][0] == '-') {
      return tl_cli_usage(json, "unknown option '%s'\n%s", argv[i], usage_text);
    } else if (model_path == NULL) {
      model_path = argv[i];
    } else {
      return tl_cli_usage(json, "one MODEL.slm only\n%s", usage_text);
    }
  }
  if (model_path == NULL || golden_path == NULL)
    return tl_cli_usage(json, "MODEL.slm and --golden FILE are required\n%s",
                        usage_text);
  if (dump_path != NULL) {
    const char *inputs[] = {model_path, golden_path};
    st = tl_file_output_check(dump_path, inputs, 2, force, NULL, err, sizeof err);
    if (st != TL_OK) return tl_cli_fail(json, st, "%s", err);
  }
  st = tl_file_open_view(golden_path, &gv, err, sizeof err);
  if (st != TL_OK) return tl_cli_fail(json, st, "%s", err);
  st = tl_golden_read(gv.data, gv.len, &g, err, sizeof err);
  tl_file_close_view(&gv);
  /* A golden that does not read is the argument's fault, never the
   * model's: the reader's invalid_model (its shape) is invalid_argument
   * here; malformed CBOR stays invalid_cbor. Both name --golden. */
  if (st == TL_ERR_INVALID_MODEL) st = TL_ERR_INVALID_ARGUMENT;
  if (st != TL_OK)
    return tl_cli_fail(json, st, "--golden %s: %s%s", golden_path,
                       st == TL_ERR_OUT_OF_MEMORY ? "" : "not a tinylm.golden/1 document: ",
                       err);
  /* The whole prompt goes in as one call, so that every captured score row
   * spans all of its keys (docs/golden.md): plan for a chunk that long. */
  st = tl_session_open(&s, model_path, err, sizeof err);
  if (st != TL_OK) {
    tl_golden_free(&g);
    return tl_cli_fail(json, st, "%s", err);
  }
  if (st == TL_OK) st = tl_session_lane(&s, &lane, err, sizeof err);
  if (st == TL_OK && g.n_ids + g.n_continuation > UINT32_MAX) {
    st = TL_ERR_CONTEXT_EXCEEDED;
    snprintf(err, sizeof err, "%s: the prompt is too long", golden_path);
  }
  if (st == TL_OK)
    st = tl_session_plan(&s, (uint32_t)(g.n_ids + g.n_continuation), g.n_ids, err, sizeof err);
  if (st == TL_OK) st = tl_session_allocate(&s, 0, err, sizeof err);
  if (st != TL_OK) {
    rc = tl_cli_fail(json, st, "%s", err);
    goto done;
  }
  s.qwen.mutations = mutate;
  st = tl_verify_observe(&s, &g, true, true, &obs, &fault, err, sizeof err);
  if (st == TL_ERR_NUMERICAL_FAILURE) {
    rc = tl_cli_fail(json, st, "non-finite value at stage %s, layer %d, position %u, index %zu",
                     tl_qwen3_stage_name(fault.stage), (int)fault.layer, fault.pos, fault.index);
    goto done;
  }
  if (st != TL_OK) {
    rc = tl_cli_fail(json, st, "%s", err);
    goto done;
  }
  if (dump_path != NULL) {
    const tl_slm_section *meta;
    uint8_t *doc = NULL;
    size_t doc_len = 0;
    char label[96];
    snprintf(label, sizeof label, "the weights of %s", model_path);
    st = tl_slm_find(&s.model.slm, TL_SLM_METADATA, &meta);
    if (st == TL_OK)
      st = tl_golden_write_run(&g, obs.cand, meta->data, meta->len, label,
                               (tl_golden_producer){s.lane.fast ? "tinylm-fast" : "tinylm-scalar",
                                                    tl_native_lane_profile(&s.lane)},
                               &doc, &doc_len);
    if (st == TL_OK) st = tl_file_write_atomic(dump_path, doc, doc_len, err, sizeof err);
    else snprintf(err, sizeof err, "%s: cannot encode the capture", dump_path);
    free(doc);
    if (st != TL_OK) {
      rc = tl_cli_fail(json, st, "%s", err);
      goto done;
    }
  }
  out = tl_verify_judge(&s.qwen.cfg, &g, &obs, tl_verify_lane_profile(s.qwen.fast != NULL),
                        true, true);
  if (out == NULL) {
    rc = tl_cli_fail(json, TL_ERR_OUT_OF_MEMORY, "out of memory judging the capture");
    goto done;
  }
  if (json) {
    char *text = json_dumps(out, JSON_COMPACT);
    puts(text);
    free(text);
  } else {
    size_t i;
    json_t *v, *d = json_object_get(out, "first_divergence"),
                *counts = json_object_get(out, "counts");
    printf("profile %s; reference %s (%s); %lld records, %lld failing, %lld missing; "
           "%lld logit rows and %lld greedy steps with a different argmax\n",
           json_string_value(json_object_get(out, "profile")), g.producer, g.precision,
           count_of(counts, "records"), count_of(counts, "failing"), count_of(counts, "missing"),
           count_of(counts, "logits_different"), count_of(counts, "greedy_different"));
    printf("  %-14s %5s %10s %10s %10s %9s %12s %6s\n", "stage", "layer", "max_abs",
           "max_rel", "nrmse", "max_ulp", "cos-1", "pass");
    json_array_foreach(json_object_get(out, "records"), i, v) {
      json_t *layer = json_object_get(v, "layer");
      char layer_text[16] = "-";
      if (!json_is_null(layer))
        snprintf(layer_text, sizeof layer_text, "%lld",
                 (long long)json_integer_value(layer));
      printf("  %-14s %5s %10.3g %10.3g %10.3g %9lld %12.3g %6s\n",
             json_string_value(json_object_get(v, "stage")), layer_text,
             json_real_value(json_object_get(v, "max_abs")),
             json_real_value(json_object_get(v, "max_rel")),
             json_real_value(json_object_get(v, "nrmse")),
             (long long)json_integer_value(json_object_get(v, "max_ulp")),
             json_real_value(json_object_get(v, "cosine")) - 1.0,
             json_is_true(json_object_get(v, "pass")) ? "ok" : "FAIL");
    }
    if (json_is_object(json_object_get(out, "greedy"))) {
      json_t *gr = json_object_get(out, "greedy");
      printf("  greedy continuation: %lld of %lld tokens agree (%s)\n",
             (long long)json_integer_value(json_object_get(gr, "agreed")),
             (long long)json_integer_value(json_object_get(gr, "steps")),
             json_string_value(json_object_get(gr, "verdict")));
    }
    json_array_foreach(json_object_get(out, "missing_records"), i, v)
      printf("  %-14s %5lld not captured (missing)\n",
             json_string_value(json_object_get(v, "stage")),
             (long long)json_integer_value(json_object_get(v, "layer")));
    json_array_foreach(json_object_get(out, "logits"), i, v)
      printf("  logits @%lld: jsd %.3g, top-10 overlap %lld, argmax %lld vs %lld (%s, margin %.3g)\n",
             (long long)json_integer_value(json_object_get(v, "position")),
             json_real_value(json_object_get(v, "jsd")),
             (long long)json_integer_value(json_object_get(v, "top10_overlap")),
             (long long)json_integer_value(json_object_get(v, "reference_argmax")),
             (long long)json_integer_value(json_object_get(v, "candidate_argmax")),
             json_string_value(json_object_get(v, "greedy")),
             json_real_value(json_object_get(v, "margin")));
    if (json_is_object(d)) {
      char *text = json_dumps(d, JSON_COMPACT);
      printf("first divergence: %s\n", text);
      free(text);
    }
  }
  rc = json_is_true(json_object_get(out, "pass")) ? TL_EXIT_OK : TL_EXIT_FAILURE;
done:
  json_decref(out);
  tl_verify_obs_free(&obs);
  tl_golden_free(&g);
  tl_session_close(&s);
  return rc;
}
