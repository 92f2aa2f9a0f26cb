/* What promote_mechanical.c adds to promote.h for its own tests and for
 * anyone who registers sampler known answers by hand. */
#ifndef TL_NATIVE_PROMOTE_MECHANICAL_H
#define TL_NATIVE_PROMOTE_MECHANICAL_H

#include <stddef.h>
#include <stdint.h>

#include "promote.h"

struct tl_sampler_vector;

/* The content hash of a sampler known answer, what a sampler case's
 * "sha256" names: SHA-256 of the vector's canonical JSON, i.e. jansson's
 * JSON_COMPACT | JSON_SORT_KEYS dump of the object
 *   {"name", "n", "logits": [f32 bits], "temperature", "top_p", "min_p",
 *    "repeat_penalty": f64 bits, "top_k", "repeat_window", "min_new",
 *    "defined_ids", "eos": [..], "ban": [..], "history": [..],
 *    "n_generated", "seed": u64, "draw", "token", "turn", "stream",
 *    "draw_word", "id", "n_candidates", "n_survivors", "survivors": [..],
 *    "q": [f64 bits], "bounds": [f64 bits]}
 * with 32-bit fields as JSON integers and every 64-bit field (f64 bits,
 * the seed) as 16 lower-case hex digits of text: the inputs and the
 * oracle's answer, bit for bit (sampler_vectors.h's fields, nothing
 * else). */
tl_status tl_sampler_vector_sha256(const struct tl_sampler_vector *v,
                                   uint8_t out[32]);

/* tl_claim_sampler over another table of known answers than the compiled
 * one (the tests plant a tie answered the other way). */
tl_status tl_claim_sampler_table(tl_claim_ctx *c, tl_claim_result *out,
                                 const struct tl_sampler_vector *table,
                                 size_t n);

#endif
