/* The WebGPU lane's glue in the wasm32 modules (docs/webgpu-profile.md,
 * docs/web.md): the fast lane with its q8/q4 products computed by the
 * page's GPU device through the loader's imports, under the numerical
 * profile webgpu/1. The loader turns it on for a module it instantiated
 * for that lane (tl_wasm_gpu_enable); every other module never calls the
 * imports. */
#ifndef TL_WASM_GPU_H
#define TL_WASM_GPU_H

#include <stdbool.h>
#include <stddef.h>

#include "kernels/kernels.h"
#include "model/qwen3.h"
#include "tinylm.h"

/* Whether the loader turned the device on: the fast lane of later
 * sessions (and self-test 6) then uses it. */
bool tl_wasm_gpu_on(void);

/* The device (products through the loader's import, checked against the
 * module's own kernels when check mode is on). */
const tl_kern_device *tl_wasm_gpu_device(void);

/* Hands every packed q8/q4 weight of m (each once: a tied weight is one
 * matrix) to the device; they must lie in [base, base + len), which
 * tl_wasm_gpu_release gives back. On failure err says why (the device
 * refused: out of memory, lost) and nothing stays on the device. */
tl_status tl_wasm_gpu_upload(tl_qwen3 *m, const uint8_t *base, size_t len, char *err,
                             size_t err_cap);

/* The device forgets every matrix inside [base, base + len). */
void tl_wasm_gpu_release(const uint8_t *base, size_t len);

/* Self-test 6: the q8 and q4 models of the tiny forward pass run on the
 * fast lane with the device in check mode (every product within W-3 of
 * the module's own kernels'). TL_ERR_SELF_TEST_FAILED otherwise; TL_ERR_UNSUPPORTED_FEATURE
 * when the device is off. */
tl_status tl_wasm_gpu_self_test(void);

#endif
