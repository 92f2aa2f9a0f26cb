/* Names and signatures of the IR's closed sets (tmpl_ir.h). */
#include "tmpl/tmpl.h"

#define SIG_F_(name, jname, n, params) {jname, n, params, 0},
#define SIG_T_(name, jname, n) {jname, n, "", 0},
#define SIG_M_(name, jname, owner, n, params) {jname, n, params, owner},
#define SIG_FN_(name, jname) {jname, 0, "", 0},

const tl_tmpl_sig tl_tmpl_filters[TL_F_COUNT_] = {TL_TMPL_FILTER_LIST(SIG_F_)};
const tl_tmpl_sig tl_tmpl_tests[TL_T_COUNT_] = {TL_TMPL_TEST_LIST(SIG_T_)};
const tl_tmpl_sig tl_tmpl_methods[TL_M_COUNT_] = {TL_TMPL_METHOD_LIST(SIG_M_)};
const tl_tmpl_sig tl_tmpl_funcs[TL_FN_COUNT_] = {TL_TMPL_FUNC_LIST(SIG_FN_)};
