/* Other servers' request fields (serve_compat.h) through the request
 * reader, as docs/server.md's "Extension fields" table states them: each
 * class (implemented, accepted as off, accepted and ignored, refused) and
 * each refusal's param and code.
 *
 * Planted defects these cases catch (each tried once by hand):
 *   OFF accepts any value                 -> sampler_values_other_than_off
 *   put() drops the conflict check        -> token_limits (n_predict 5 + max_tokens 6)
 *   tl_srv_compat_blame does nothing      -> ollama_options (param options.temperature)
 *   tl_srv_compat_finish ignores unlimited -> token_limits (completion n_predict -1 is 0)
 *   cache_prompt false not carried        -> cache_prompt */
#include <stdio.h>
#include <string.h>

#include "serve_request.h"
#include "serve_request_checks.h"
#include "tl_test.h"

/* The fields with no meaning for one local model: accepted (any value of
 * their type) and the request is as without them. */
static void ignored_fields_change_nothing(tl_test_ctx *t) {
  static const char *const chat[] = {
      "\"prompt_cache_key\":\"k\"", "\"prompt_cache_retention\":\"24h\"",
      "\"prompt_cache_options\":{}", "\"safety_identifier\":\"u1\"",
      "\"prediction\":{\"type\":\"content\",\"content\":\"x\"}", "\"modalities\":[\"text\"]",
      "\"verbosity\":\"medium\"", "\"audio\":null", "\"keep_alive\":\"5m\"", "\"keep_alive\":300",
      "\"timings_per_token\":true", "\"return_progress\":true", "\"backend_sampling\":false",
      "\"id_slot\":-1", "\"n_keep\":4", "\"samplers\":[\"top_k\",\"top_p\",\"temperature\"]",
      "\"samplers\":\"kpt\"", "\"xtc_threshold\":0.1", "\"dynatemp_exponent\":1",
      "\"dry_base\":1.75", "\"dry_allowed_length\":2", "\"dry_penalty_last_n\":-1",
      "\"dry_sequence_breakers\":[\"\\n\"]", "\"mirostat_tau\":5", "\"mirostat_eta\":0.1",
      "\"options\":{\"num_ctx\":4096,\"num_thread\":2,\"use_mmap\":true,\"penalize_newline\":true}",
      "\"user\":\"u\",\"store\":false,\"metadata\":{},\"service_tier\":\"auto\""};
  tl_srv_request base, r;
  char body[512];
  if (!ACCEPTED(t, TL_SRV_CHAT, "{" USER_HI ",\"max_tokens\":9,\"temperature\":0.5}", &base))
    return;
  for (size_t i = 0; i < sizeof chat / sizeof chat[0]; i++) {
    snprintf(body, sizeof body, "{" USER_HI ",\"max_tokens\":9,\"temperature\":0.5,%s}", chat[i]);
    if (!ACCEPTED(t, TL_SRV_CHAT, body, &r)) continue;
    TL_EXPECT_STR(t, r.conversation, base.conversation);
    TL_EXPECT_EQ_U64(t, r.max_tokens, 9);
    TL_EXPECT_EQ_U64(t, r.given, base.given);
    TL_EXPECT(t, r.temperature == 0.5 && !r.no_prompt_cache && r.format == TL_SRV_FORMAT_TEXT);
    tl_srv_request_free(&r);
  }
  tl_srv_request_free(&base);
  OK(t, TL_SRV_COMPLETION, "{\"prompt\":\"x\",\"keep_alive\":0,\"id_slot\":1,\"samplers\":[]}");
  /* each for its type */
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"prompt_cache_key\":1}", "prompt_cache_key",
          "invalid_type");
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"timings_per_token\":1}", "timings_per_token",
          "invalid_type");
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"keep_alive\":[]}", "keep_alive", "invalid_type");
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"samplers\":[1]}", "samplers", "invalid_type");
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"options\":{\"num_ctx\":\"x\"}}", "options.num_ctx",
          "invalid_type");
  /* OpenAI's chat-only fields are not completions fields; an unknown
   * field stays unknown, top-level or in options */
  REFUSED(t, TL_SRV_COMPLETION, "{\"prompt\":\"x\",\"modalities\":[\"text\"]}", "modalities",
          "unknown_parameter");
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"typical_pp\":1}", "typical_pp", "unknown_parameter");
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"options\":{\"num_gpus\":1}}", "options.num_gpus",
          "unknown_parameter");
}

/* A sampler tinylm lacks is accepted at its off value only. */
static void sampler_values_other_than_off(tl_test_ctx *t) {
  static const struct {
    const char *field, *off, *on;
  } s[] = {{"typical_p", "1", "0.5"},      {"typ_p", "1.0", "0.95"},
           {"xtc_probability", "0", "0.5"}, {"dynatemp_range", "0", "0.2"},
           {"dry_multiplier", "0", "0.8"}, {"top_n_sigma", "-1", "1"},
           {"mirostat", "0", "2"},         {"n_probs", "0", "3"},
           {"ignore_eos", "false", "true"}, {"post_sampling_probs", "false", "true"}};
  char body[256];
  for (size_t i = 0; i < sizeof s / sizeof s[0]; i++) {
    snprintf(body, sizeof body, "{" USER_HI ",\"%s\":%s}", s[i].field, s[i].off);
    OK(t, TL_SRV_CHAT, body);
    snprintf(body, sizeof body, "{\"prompt\":\"x\",\"%s\":%s}", s[i].field, s[i].off);
    OK(t, TL_SRV_COMPLETION, body);
    snprintf(body, sizeof body, "{" USER_HI ",\"%s\":%s}", s[i].field, s[i].on);
    REFUSED(t, TL_SRV_CHAT, body, s[i].field, "unsupported_value");
  }
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"options\":{\"tfs_z\":0.9}}", "options.tfs_z",
          "unsupported_value");
  OK(t, TL_SRV_CHAT, "{" USER_HI ",\"options\":{\"tfs_z\":1,\"typical_p\":1,\"mirostat\":0}}");
  /* what would change the reply in a way tinylm cannot */
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"audio\":{\"voice\":\"alloy\",\"format\":\"wav\"}}", "audio",
          "unsupported_value");
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"modalities\":[\"text\",\"audio\"]}", "modalities",
          "unsupported_value");
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"verbosity\":\"low\"}", "verbosity", "unsupported_value");
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"web_search_options\":{}}", "web_search_options",
          "unsupported_value");
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"functions\":[]}", "functions", "unsupported_value");
}

/* n_predict, max_tokens -1 and ollama's num_predict are the token limit. */
static void token_limits(tl_test_ctx *t) {
  tl_srv_request r;
  if (ACCEPTED(t, TL_SRV_CHAT, "{" USER_HI ",\"n_predict\":5}", &r)) {
    TL_EXPECT_EQ_U64(t, r.max_tokens, 5);
    tl_srv_request_free(&r);
  }
  if (ACCEPTED(t, TL_SRV_COMPLETION, "{\"prompt\":\"x\",\"n_predict\":-1}", &r)) {
    TL_EXPECT_EQ_U64(t, r.max_tokens, 0); /* no limit, not the completions default 16 */
    tl_srv_request_free(&r);
  }
  if (ACCEPTED(t, TL_SRV_COMPLETION, "{\"prompt\":\"x\",\"max_tokens\":-1}", &r)) {
    TL_EXPECT_EQ_U64(t, r.max_tokens, 0);
    tl_srv_request_free(&r);
  }
  if (ACCEPTED(t, TL_SRV_COMPLETION, "{\"prompt\":\"x\",\"n_predict\":7,\"max_tokens\":7}", &r)) {
    TL_EXPECT_EQ_U64(t, r.max_tokens, 7);
    tl_srv_request_free(&r);
  }
  if (ACCEPTED(t, TL_SRV_CHAT, "{" USER_HI ",\"options\":{\"num_predict\":-2}}", &r)) {
    TL_EXPECT_EQ_U64(t, r.max_tokens, 0);
    tl_srv_request_free(&r);
  }
  if (ACCEPTED(t, TL_SRV_CHAT, "{" USER_HI ",\"options\":{\"num_predict\":3}}", &r)) {
    TL_EXPECT_EQ_U64(t, r.max_tokens, 3);
    tl_srv_request_free(&r);
  }
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"n_predict\":5,\"max_tokens\":6}", "n_predict",
          "invalid_value");
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"n_predict\":5,\"max_completion_tokens\":6}", "n_predict",
          "invalid_value");
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"n_predict\":-1,\"max_tokens\":6}", "n_predict",
          "invalid_value");
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"max_tokens\":-1,\"n_predict\":6}", "n_predict",
          "invalid_value");
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"n_predict\":1.5}", "n_predict", "invalid_type");
  /* out of max_tokens' range: the error names the client's field */
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"n_predict\":0}", "n_predict", "invalid_value");
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"n_predict\":-3}", "n_predict", "invalid_value");
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"max_tokens\":-2}", "max_tokens", "invalid_value");
}

static void cache_prompt(tl_test_ctx *t) {
  tl_srv_request r;
  if (ACCEPTED(t, TL_SRV_CHAT, "{" USER_HI ",\"cache_prompt\":false}", &r)) {
    TL_EXPECT(t, r.no_prompt_cache);
    tl_srv_request_free(&r);
  }
  if (ACCEPTED(t, TL_SRV_COMPLETION, "{\"prompt\":\"x\",\"cache_prompt\":false}", &r)) {
    TL_EXPECT(t, r.no_prompt_cache);
    tl_srv_request_free(&r);
  }
  if (ACCEPTED(t, TL_SRV_CHAT, "{" USER_HI ",\"cache_prompt\":true}", &r)) {
    TL_EXPECT(t, !r.no_prompt_cache);
    tl_srv_request_free(&r);
  }
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"cache_prompt\":0}", "cache_prompt", "invalid_type");
}

/* ollama's options land on the top-level fields, checked there. */
static void ollama_options(tl_test_ctx *t) {
  tl_srv_request r;
  if (ACCEPTED(t, TL_SRV_CHAT,
               "{" USER_HI ",\"options\":{\"temperature\":0.7,\"top_k\":20,\"top_p\":0.8,"
               "\"min_p\":0.05,\"seed\":42,\"repeat_penalty\":1.1,\"stop\":[\"\\n\\n\"]}}",
               &r)) {
    TL_EXPECT(t, r.temperature == 0.7 && r.top_k == 20 && r.top_p == 0.8 && r.min_p == 0.05 &&
                     r.repeat_penalty == 1.1);
    TL_EXPECT_EQ_U64(t, r.given, TL_GIVEN_TEMPERATURE | TL_GIVEN_TOP_K | TL_GIVEN_TOP_P |
                                  TL_GIVEN_MIN_P | TL_GIVEN_REPEAT_PENALTY);
    TL_EXPECT(t, r.has_seed && r.seed == 42);
    TL_EXPECT(t, r.n_stops == 1 && r.stop_lens[0] == 2 && memcmp(r.stops[0], "\n\n", 2) == 0);
    tl_srv_request_free(&r);
  }
  OK(t, TL_SRV_CHAT, "{" USER_HI ",\"temperature\":0.7,\"options\":{\"temperature\":0.7}}");
  OK(t, TL_SRV_CHAT, "{" USER_HI ",\"options\":{\"temperature\":null}}");
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"temperature\":0.6,\"options\":{\"temperature\":0.7}}",
          "options.temperature", "invalid_value");
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"options\":{\"temperature\":5}}", "options.temperature",
          "invalid_value");
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"options\":{\"stop\":[1]}}", "options.stop[0]",
          "invalid_type");
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"options\":[]}", "options", "invalid_type");
}

/* ollama's format and think. */
static void ollama_format_and_think(tl_test_ctx *t) {
  tl_srv_request r;
  if (ACCEPTED(t, TL_SRV_CHAT, "{" USER_HI ",\"format\":\"json\"}", &r)) {
    TL_EXPECT(t, r.format == TL_SRV_FORMAT_JSON_OBJECT);
    tl_srv_request_free(&r);
  }
  if (ACCEPTED(t, TL_SRV_CHAT, "{" USER_HI ",\"format\":{\"type\":\"integer\"}}", &r)) {
    TL_EXPECT(t, r.format == TL_SRV_FORMAT_JSON_SCHEMA);
    TL_EXPECT_STR(t, r.format_text, "{\"type\":\"integer\"}");
    tl_srv_request_free(&r);
  }
  if (ACCEPTED(t, TL_SRV_CHAT, "{" USER_HI ",\"format\":\"\"}", &r)) {
    TL_EXPECT(t, r.format == TL_SRV_FORMAT_TEXT);
    tl_srv_request_free(&r);
  }
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"format\":\"yaml\"}", "format", "invalid_value");
  REFUSED(t, TL_SRV_CHAT,
          "{" USER_HI ",\"format\":\"json\",\"response_format\":{\"type\":\"text\"}}", "format",
          "invalid_value");
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"format\":[1]}", "format", "invalid_value");
  if (ACCEPTED(t, TL_SRV_CHAT, "{" USER_HI ",\"think\":false}", &r)) {
    TL_EXPECT_STR(t, r.conversation,
                  "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"enable_thinking\":false}");
    tl_srv_request_free(&r);
  }
  OK(t, TL_SRV_CHAT,
     "{" USER_HI ",\"think\":true,\"chat_template_kwargs\":{\"enable_thinking\":true}}");
  REFUSED(t, TL_SRV_CHAT,
          "{" USER_HI ",\"think\":true,\"chat_template_kwargs\":{\"enable_thinking\":false}}",
          "think", "invalid_value");
  REFUSED(t, TL_SRV_CHAT, "{" USER_HI ",\"think\":\"high\"}", "think", "invalid_type");
  REFUSED(t, TL_SRV_COMPLETION, "{\"prompt\":\"x\",\"think\":true}", "think", "unknown_parameter");
}

static const tl_test_case cases[] = {
    TL_CASE(ignored_fields_change_nothing), TL_CASE(sampler_values_other_than_off),
    TL_CASE(token_limits),                  TL_CASE(cache_prompt),
    TL_CASE(ollama_options),                TL_CASE(ollama_format_and_think),
};
TL_SUITE(serve_compat, cases);
