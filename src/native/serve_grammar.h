/* The grammar a `tinylm serve` reply keeps to (docs/server.md, Structured
 * output): the request's response_format, required tool calls, GBNF
 * grammar or json_schema compiled by the core's readers
 * (src/core/grammar/grammar.h) into memory of its own, once per request,
 * and shared by the request's choices, which may outlive the request
 * (a cancelled job finishes its step after its client left): hence the
 * reference count. */
#ifndef TL_NATIVE_SERVE_GRAMMAR_H
#define TL_NATIVE_SERVE_GRAMMAR_H

#include "grammar/grammar.h"
#include "serve_request.h"
#include "tinylm.h"

typedef struct tl_srv_grammar tl_srv_grammar;

/* The largest memory one request's grammar may take. */
#define TL_SRV_GRAMMAR_MAX_BYTES ((size_t)256 << 20)

/* Compiles r's constraint; *out NULL (and TL_OK) when r has none
 * (tl_srv_request_constrained). The reply is
 *   grammar           a sentence of the GBNF grammar;
 *   tools required    one or more tool calls (exactly one without
 *   or named          parallel_tool_calls), each Qwen3's block
 *                     <tool_call>\n{"name": NAME, "arguments": ARGS}\n</tool_call>
 *                     with ARGS valid for that tool's parameters (a tool
 *                     without parameters takes {}), blocks separated by
 *                     "\n"; named: that tool only;
 *   json_object       any JSON object;
 *   json_schema       a document valid for the schema;
 *   either of those with tools and tool_choice auto: such a document, or
 *                     tool calls as for "required".
 * Refusals are 400 invalid_request_error naming the field the grammar came
 * from (response_format.json_schema.schema, json_schema, grammar,
 * tools[i].function.parameters): code unsupported_value for a keyword the
 * engine does not enforce (the message names it and where it is),
 * invalid_value for a malformed schema or grammar (a grammar's message
 * gives the line and column), an empty language or a limit; a grammar
 * larger than TL_SRV_GRAMMAR_MAX_BYTES is refused the same way. 500 when
 * memory runs out. */
tl_status tl_srv_grammar_compile(const tl_srv_request *r, tl_srv_grammar **out,
                                 tl_srv_error *err);
const tl_grammar *tl_srv_grammar_get(const tl_srv_grammar *g);
/* Another reference (g may be NULL); thread-safe. */
tl_srv_grammar *tl_srv_grammar_ref(tl_srv_grammar *g);
/* Drops a reference (g may be NULL); the last one frees it. */
void tl_srv_grammar_unref(tl_srv_grammar *g);

#endif
