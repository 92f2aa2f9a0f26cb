/* The chat template as a claim about EOS: the token that ends an assistant
 * turn in the template's own rendering must be one the runtime stops on,
 * or a chat would run past the end of its reply (issue: BOS/EOS
 * disagreements among the config files and the chat template). */
#ifndef TL_TOOLS_TEMPLATE_EOS_H
#define TL_TOOLS_TEMPLATE_EOS_H

#include <stddef.h>
#include <stdint.h>

#include "tinylm.h"

/* The probe conversation: a user turn and an assistant reply whose
 * content is TL_TEMPLATE_PROBE_REPLY. */
#define TL_TEMPLATE_PROBE_REPLY "tinylm-probe-reply"

/* Renders the probe through the compiled template (add_generation_prompt
 * false), finds the reply's content in the output, tokenizes what follows
 * it and gives the first token id: the template's turn terminator.
 * TL_ERR_INVALID_MODEL with a reason in err when the template does not
 * render the reply verbatim or emits nothing after it; the statuses of
 * the loaders and the renderer otherwise. */
tl_status tl_template_turn_end(const uint8_t *tok_section, size_t tok_len,
                               const uint8_t *tmpl_section, size_t tmpl_len,
                               uint32_t *turn_end, char *err, size_t err_cap);

#endif
