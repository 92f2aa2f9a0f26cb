/* Signed promotions (promote_sign.h): keys, signing, trust. The message
 * signed is the signature format, the signed format and the promotion's
 * root id, so a signature over a promotion is never one over anything
 * else tinylm might sign later. */
#define _POSIX_C_SOURCE 200809L
#include "promote_sign.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bytes.h"
#include "cbor_doc.h"
#include "cli.h"
#include "file.h"
#include "promote_plan.h"
#include "promote_receipt.h"
#include "receipt.h"
#include "tool_msg.h"

#define MESSAGE_LEN (sizeof TL_SIGNATURE_FORMAT + sizeof TL_PROMOTION_FORMAT + 32)

static void message(const uint8_t root[32], uint8_t m[MESSAGE_LEN]) {
  memcpy(m, TL_SIGNATURE_FORMAT "\n", sizeof TL_SIGNATURE_FORMAT);
  memcpy(m + sizeof TL_SIGNATURE_FORMAT, TL_PROMOTION_FORMAT "\n", sizeof TL_PROMOTION_FORMAT);
  memcpy(m + sizeof TL_SIGNATURE_FORMAT + sizeof TL_PROMOTION_FORMAT, root, 32);
}

static tl_status sodium_ready(char *err, size_t cap) {
  return sodium_init() < 0 ? tl_fail(err, cap, TL_ERR_INTERNAL_INVARIANT,
                                     "libsodium cannot be initialised")
                           : TL_OK;
}

/* ------------------------------------------------------------------------ */
/* Key files                                                                */

/* text into dir/name through a temporary file: published by link, which
 * never replaces a name, or by rename when force. */
static tl_status publish(int dirfd, const char *name, const char *shown, const char *text,
                         mode_t mode, bool force, char *err, size_t cap) {
  tl_file_atomic f;
  tl_status st = tl_file_atomic_begin_at(&f, dirfd, name, shown, err, cap);
  if (st != TL_OK) return st;
  if (fchmod(f.fd, mode) != 0 || fsync(f.fd) != 0)
    st = tl_fail(err, cap, TL_ERR_IO, "%s: %s", shown, strerror(errno));
  if (st == TL_OK) st = tl_file_atomic_pwrite(&f, 0, text, strlen(text), err, cap);
  if (st == TL_OK && fsync(f.fd) != 0)
    st = tl_fail(err, cap, TL_ERR_IO, "%s: %s", shown, strerror(errno));
  if (st == TL_OK && (force ? renameat(dirfd, f.tmp, dirfd, name)
                            : linkat(dirfd, f.tmp, dirfd, name, 0)) != 0)
    st = errno == EEXIST ? tl_fail(err, cap, TL_ERR_CONFLICT,
                                   "%s exists; refusing to replace it (--force does)", shown)
                         : tl_fail(err, cap, TL_ERR_IO, "%s: %s", shown, strerror(errno));
  tl_file_atomic_abort(&f);
  return st;
}

tl_status tl_sign_keygen(const char *path, bool force, char *err, size_t err_cap) {
  char dir[4096], pub_path[4200], secret_text[256], public_text[160], seed_hex[65], pk_hex[65];
  const char *base = strrchr(path, '/');
  uint8_t seed[32], pk[32], sk[64];
  struct stat sb;
  int dirfd;
  tl_status st = sodium_ready(err, err_cap);
  if (st != TL_OK) return st;
  if (base == NULL) {
    snprintf(dir, sizeof dir, ".");
    base = path;
  } else if ((size_t)(base - path) >= sizeof dir) {
    return tl_fail(err, err_cap, TL_ERR_INVALID_ARGUMENT, "%s: path too long", path);
  } else {
    snprintf(dir, sizeof dir, "%.*s", base == path ? 1 : (int)(base - path), path);
    base++;
  }
  if (base[0] == '\0')
    return tl_fail(err, err_cap, TL_ERR_INVALID_ARGUMENT, "%s: names a directory", path);
  snprintf(pub_path, sizeof pub_path, "%s.pub", base);
  if ((dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
    return tl_fail(err, err_cap, TL_ERR_IO, "%s: %s", dir, strerror(errno));
  /* Both names free before either is written: never half a key pair. */
  if (!force && (fstatat(dirfd, base, &sb, AT_SYMLINK_NOFOLLOW) == 0 ||
                 fstatat(dirfd, pub_path, &sb, AT_SYMLINK_NOFOLLOW) == 0)) {
    close(dirfd);
    return tl_fail(err, err_cap, TL_ERR_CONFLICT,
                   "%s or %s.pub exists; refusing to replace it (--force does)", path, path);
  }
  randombytes_buf(seed, sizeof seed);
  crypto_sign_seed_keypair(pk, sk, seed);
  tl_hex_encode(seed, 32, seed_hex);
  tl_hex_encode(pk, 32, pk_hex);
  snprintf(secret_text, sizeof secret_text, "%s\nseed %s\npublic %s\n", TL_SIGN_SECRET_HEADER,
           seed_hex, pk_hex);
  snprintf(public_text, sizeof public_text, "%s\npublic %s\n", TL_SIGN_PUBLIC_HEADER, pk_hex);
  st = publish(dirfd, base, path, secret_text, 0600, force, err, err_cap);
  if (st == TL_OK) {
    char shown[4200];
    snprintf(shown, sizeof shown, "%s.pub", path);
    st = publish(dirfd, pub_path, shown, public_text, 0644, force, err, err_cap);
  }
  sodium_memzero(seed, sizeof seed);
  sodium_memzero(sk, sizeof sk);
  sodium_memzero(secret_text, sizeof secret_text);
  close(dirfd);
  return st;
}

/* Line `line` (from 1) of text is exactly "KEY HEX64": its 32 bytes. */
static bool hex_line(const char *text, size_t len, int line, const char *key, uint8_t out[32]) {
  const char *p = text, *end = text + len;
  size_t klen = strlen(key);
  char hex[65];
  for (int i = 1; i < line && p < end; i++) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    p = nl ? nl + 1 : end;
  }
  if ((size_t)(end - p) < klen + 1 + 64 + 1 || memcmp(p, key, klen) != 0 || p[klen] != ' ' ||
      p[klen + 65] != '\n')
    return false;
  memcpy(hex, p + klen + 1, 64);
  hex[64] = '\0';
  return tl_hex32_parse(hex, out);
}

/* The file's bytes when it is a key file of header with `lines` lines. */
static tl_status key_text(const char *path, const char *header, size_t lines, tl_file_view *v,
                          char *err, size_t cap) {
  size_t nl = 0, hlen = strlen(header);
  tl_status st = tl_file_open_regular(path, v, err, cap);
  if (st != TL_OK) return st;
  for (size_t i = 0; i < v->len; i++) nl += v->data[i] == '\n';
  if (v->len < hlen + 1 || memcmp(v->data, header, hlen) != 0 || v->data[hlen] != '\n' ||
      nl != lines || v->data[v->len - 1] != '\n') {
    tl_file_close_view(v);
    return tl_fail(err, cap, TL_ERR_INVALID_ARGUMENT,
                   "%s: not a key file: its first line must be \"%s\", then %zu line(s) "
                   "(tinylm promote keygen writes them)",
                   path, header, lines - 1);
  }
  return TL_OK;
}

tl_status tl_sign_key_read(const char *path, tl_sign_key *k, char *err, size_t err_cap) {
  tl_file_view v;
  struct stat sb;
  uint8_t seed[32], pk[32];
  tl_status st = sodium_ready(err, err_cap);
  if (st != TL_OK) return st;
  if ((st = key_text(path, TL_SIGN_SECRET_HEADER, 3, &v, err, err_cap)) != TL_OK) return st;
  if (stat(path, &sb) == 0 && (sb.st_mode & 077) != 0) {
    tl_file_close_view(&v);
    return tl_fail(err, err_cap, TL_ERR_IO,
                   "%s: group or others may read this secret key; refusing (chmod 600 %s)",
                   path, path);
  }
  if (!hex_line((const char *)v.data, v.len, 2, "seed", seed) ||
      !hex_line((const char *)v.data, v.len, 3, "public", k->pub))
    st = tl_fail(err, err_cap, TL_ERR_INVALID_ARGUMENT,
                 "%s: lines 2 and 3 must be \"seed HEX64\" and \"public HEX64\"", path);
  tl_file_close_view(&v);
  if (st == TL_OK) {
    crypto_sign_seed_keypair(pk, k->secret, seed);
    if (memcmp(pk, k->pub, 32) != 0)
      st = tl_fail(err, err_cap, TL_ERR_INVALID_ARGUMENT,
                   "%s: its public key is not its seed's (the file was edited)", path);
  }
  sodium_memzero(seed, sizeof seed);
  return st;
}

tl_status tl_sign_public_read(const char *path, uint8_t pub[32], char *err, size_t err_cap) {
  tl_file_view v;
  tl_status st = key_text(path, TL_SIGN_PUBLIC_HEADER, 2, &v, err, err_cap);
  if (st != TL_OK) return st;
  if (!hex_line((const char *)v.data, v.len, 2, "public", pub))
    st = tl_fail(err, err_cap, TL_ERR_INVALID_ARGUMENT, "%s: line 2 must be \"public HEX64\"",
                 path);
  tl_file_close_view(&v);
  return st;
}

void tl_sign_key_clear(tl_sign_key *k) { sodium_memzero(k, sizeof *k); }

/* ------------------------------------------------------------------------ */
/* Signing and trust                                                        */

tl_status tl_sign_promotion(tl_store *s, const tl_sign_key *k, const uint8_t root[32],
                            uint8_t sig_root[32], char *err, size_t err_cap) {
  uint8_t m[MESSAGE_LEN], sig[64], *doc = NULL;
  size_t len = 0;
  tl_signature_facts f = {root, k->pub, sig};
  tl_status st = sodium_ready(err, err_cap);
  if (st != TL_OK) return st;
  message(root, m);
  crypto_sign_detached(sig, NULL, m, sizeof m, k->secret);
  if ((st = tl_signature_receipt(&f, &doc, &len, sig_root, err, err_cap)) == TL_OK)
    st = tl_store_put_receipt(s, "signature", sig_root, doc, len, err, err_cap);
  free(doc);
  return st;
}

/* The signature receipt's metadata as JSON (digests as hex). */
static const json_t *signature_meta(const json_t *doc) {
  const char *format = json_string_value(json_object_get(doc, "format"));
  if (format == NULL || strcmp(format, TL_SIGNATURE_FORMAT) != 0) return NULL;
  return tl_json_node_meta(doc, "signature");
}

/* One receipt of the store over root: 1 verified by pub, 0 another key's,
 * -1 bad (damaged, or by pub and not verifying: why says which). */
static int judge_signature(const uint8_t *bytes, size_t len, const uint8_t name[32],
                           const uint8_t pub[32], const char *hex, char *why, size_t cap) {
  uint8_t checked[32], key[32], m[MESSAGE_LEN], signed_root[32];
  tl_receipt_kind kind;
  json_t *doc = NULL;
  const json_t *meta;
  uint8_t *sig = NULL;
  size_t sig_len = 0;
  int verdict = -1;
  if (tl_receipt_check(bytes, len, &kind, checked, why, cap) != TL_OK) return -1;
  if (memcmp(checked, name, 32) != 0) {
    snprintf(why, cap, "receipts/%s.cbor recomputes to another root than its name", hex);
    return -1;
  }
  if (tl_cbor_to_json(bytes, len, &doc, why, cap) != TL_OK) return -1;
  meta = signature_meta(doc);
  if (tl_hex32_parse(json_string_value(json_object_get(meta, "public_key")), key) &&
      tl_hex32_parse(json_string_value(json_object_get(meta, "signed")), signed_root) &&
      tl_cli_unhex(json_string_value(json_object_get(meta, "signature")), &sig, &sig_len) == 0 &&
      sig_len == 64) {
    message(signed_root, m);
    if (memcmp(key, pub, 32) != 0) verdict = 0;
    else if (crypto_sign_verify_detached(sig, m, sizeof m, key) == 0) verdict = 1;
    else snprintf(why, cap, "receipts/%s.cbor: the signature does not verify under the key", hex);
  }
  free(sig);
  json_decref(doc);
  return verdict;
}

tl_status tl_sign_trust(tl_store *s, const uint8_t root[32], const uint8_t pub[32],
                        const char **rule, uint8_t sig_root[32], char *err, size_t err_cap) {
  uint8_t(*ids)[32] = NULL;
  size_t n = 0, others = 0;
  char root_hex[65], why[512] = "";
  bool trusted = false, bad = false;
  tl_status st = sodium_ready(err, err_cap);
  *rule = TL_TRUST_MISSING;
  if (st == TL_OK) st = tl_store_list_receipts(s, &ids, &n, err, err_cap);
  if (st != TL_OK) return st;
  tl_hex_encode(root, 32, root_hex);
  for (size_t i = 0; i < n && !bad; i++) {
    uint8_t *bytes = NULL;
    size_t len = 0;
    json_t *doc = NULL;
    const char *over;
    char hex[65];
    tl_hex_encode(ids[i], 32, hex);
    if (tl_store_get_receipt(s, ids[i], &bytes, &len, why, sizeof why) != TL_OK) continue;
    /* Which receipts claim to sign this promotion, read before they are
     * checked: a damaged one among them refuses the trust. */
    if (tl_cbor_to_json(bytes, len, &doc, why, sizeof why) == TL_OK &&
        (over = json_string_value(json_object_get(signature_meta(doc), "signed"))) != NULL &&
        strcmp(over, root_hex) == 0) {
      int v = judge_signature(bytes, len, ids[i], pub, hex, why, sizeof why);
      if (v > 0 && !trusted) memcpy(sig_root, ids[i], 32);
      trusted = trusted || v > 0;
      others += v == 0;
      bad = v < 0;
    }
    json_decref(doc);
    free(bytes);
  }
  free(ids);
  if (bad) {
    *rule = TL_TRUST_BAD;
    return tl_fail(err, err_cap, TL_ERR_HASH_MISMATCH, "%s", why);
  }
  if (trusted) return TL_OK;
  if (others > 0) {
    *rule = TL_TRUST_OTHER_KEY;
    return tl_fail(err, err_cap, TL_ERR_CONFLICT,
                   "promotion %s is signed by %zu other key(s), not by the trusted one", root_hex,
                   others);
  }
  return tl_fail(err, err_cap, TL_ERR_NOT_FOUND,
                 "no signature over promotion %s in the store (tinylm promote --sign KEY makes "
                 "one)",
                 root_hex);
}

/* ------------------------------------------------------------------------ */
/* tinylm promote keygen                                                    */

static const char keygen_usage[] =
    "usage: tinylm promote keygen -o KEY [--force] [--json]\n"
    "  writes a new Ed25519 key pair: KEY (secret, mode 0600) and KEY.pub,\n"
    "  for tinylm promote --sign KEY and promote show --trust KEY.pub;\n"
    "  an existing KEY or KEY.pub is kept unless --force\n";

int tl_promote_keygen_main(int argc, char **argv) {
  const char *out = NULL;
  bool force = false, json = tl_cli_wants_json(argc, argv);
  char err[512];
  tl_sign_key k;
  tl_status st;
  for (int i = 1; i < argc; i++) {
    int r;
    if (strcmp(argv[i], "--help") == 0) {
      fputs(keygen_usage, stdout);
      return TL_EXIT_OK;
    } else if (strcmp(argv[i], "--json") == 0) {
    } else if (strcmp(argv[i], "--force") == 0) {
      force = true;
    } else if (strcmp(argv[i], "-o") == 0) {
      if ((r = tl_cli_value(json, argc, argv, &i, &out)) >= 0) return r;
    } else {
      return tl_cli_usage(json, "unexpected '%s'\n%s", argv[i], keygen_usage);
    }
  }
  if (out == NULL) return tl_cli_usage(json, "-o KEY is required\n%s", keygen_usage);
  if ((st = tl_sign_keygen(out, force, err, sizeof err)) != TL_OK ||
      (st = tl_sign_key_read(out, &k, err, sizeof err)) != TL_OK)
    return tl_cli_fail(json, st, "%s", err);
  {
    char hex[65];
    tl_hex_encode(k.pub, 32, hex);
    tl_sign_key_clear(&k);
    if (json) {
      json_t *o = json_pack("{s:s,s:s+,s:s}", "key", out, "public_key_file", out, ".pub",
                            "public_key", hex);
      char *text = o ? json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
      if (text != NULL) printf("%s\n", text);
      free(text);
      json_decref(o);
    } else
      printf("secret key %s (keep it private)\npublic key %s.pub ed25519:%s\n", out, out, hex);
  }
  return TL_EXIT_OK;
}
