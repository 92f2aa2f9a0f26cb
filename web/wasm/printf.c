/* snprintf/vsnprintf for the wasm32 API modules (hosted/stdio.h): the
 * conversions the host glue's messages use — %d %i %u %x %X %c %s %p %%
 * and %f, with flags '-' and '0', a width, a precision (also '*') and the
 * length modifiers hh h l ll z j t. %f prints fixed-point digits of values
 * whose integer part fits in 64 bits (the messages' megabytes and
 * seconds), "inf"/"nan" otherwise: it is for people, never for identity.
 * Output is truncated to cap - 1 bytes and NUL-terminated; the return
 * value is the full length, as C's. */
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef struct sink {
  char *buf;
  size_t cap, len;
} sink;

static void put(sink *s, char c) {
  if (s->len + 1 < s->cap) s->buf[s->len] = c;
  s->len++;
}

static void pad(sink *s, size_t n, char c) {
  while (n-- > 0) put(s, c);
}

/* body (n bytes) right-aligned in width (left with '-'); zero padding goes
 * after a sign. */
static void field(sink *s, const char *body, size_t n, size_t width, bool left, bool zero) {
  size_t fill = width > n ? width - n : 0;
  if (!left && zero && n > 0 && body[0] == '-') {
    put(s, '-');
    body++, n--;
  }
  if (!left) pad(s, fill, zero ? '0' : ' ');
  for (size_t i = 0; i < n; i++) put(s, body[i]);
  if (left) pad(s, fill, ' ');
}

static size_t utoa(uint64_t v, unsigned base, bool upper, char *out) {
  const char *digits = upper ? "0123456789ABCDEF" : "0123456789abcdef";
  char tmp[24];
  size_t n = 0, k = 0;
  do {
    tmp[n++] = digits[v % base];
    v /= base;
  } while (v != 0);
  while (n > 0) out[k++] = tmp[--n];
  return k;
}

/* v with prec digits after the point (rounded half up on the scaled
 * value). */
static size_t ftoa(double v, int prec, char *out) {
  size_t k = 0;
  uint64_t scale = 1, whole, frac;
  if (v != v) return (size_t)(memcpy(out, "nan", 3), 3);
  if (v < 0) {
    out[k++] = '-';
    v = -v;
  }
  if (prec > 9) prec = 9;
  for (int i = 0; i < prec; i++) scale *= 10;
  if (v >= 1.8e19 / (double)scale) return k + (size_t)(memcpy(out + k, "inf", 3), 3);
  whole = (uint64_t)(v * (double)scale + 0.5);
  frac = whole % scale;
  whole /= scale;
  k += utoa(whole, 10, false, out + k);
  if (prec > 0) {
    char digits[24];
    size_t n = utoa(frac, 10, false, digits);
    out[k++] = '.';
    for (size_t i = n; i < (size_t)prec; i++) out[k++] = '0';
    memcpy(out + k, digits, n);
    k += n;
  }
  return k;
}

int vsnprintf(char *restrict buf, size_t cap, const char *restrict fmt, va_list ap) {
  sink s = {buf, cap, 0};
  for (const char *p = fmt; *p; p++) {
    bool left = false, zero = false;
    size_t width = 0;
    int prec = -1, lng = 0; /* 0 int, 1 long, 2 long long, 3 size_t-like */
    char num[48];
    size_t n;
    if (*p != '%') {
      put(&s, *p);
      continue;
    }
    for (p++; *p == '-' || *p == '0'; p++) *p == '-' ? (left = true) : (zero = true);
    if (*p == '*') {
      int w = va_arg(ap, int);
      if (w < 0) left = true, w = -w;
      width = (size_t)w;
      p++;
    }
    for (; *p >= '0' && *p <= '9'; p++) width = width * 10 + (size_t)(*p - '0');
    if (*p == '.') {
      p++;
      prec = 0;
      if (*p == '*') {
        prec = va_arg(ap, int);
        p++;
      }
      for (; *p >= '0' && *p <= '9'; p++) prec = prec * 10 + (*p - '0');
    }
    for (;; p++) {
      if (*p == 'h') continue; /* promoted to int anyway */
      if (*p == 'l') lng = lng == 1 ? 2 : 1;
      else if (*p == 'z' || *p == 't') lng = 3;
      else if (*p == 'j') lng = 2;
      else break;
    }
    switch (*p) {
      case 'd':
      case 'i': {
        int64_t v = lng == 2 ? va_arg(ap, long long)
                    : lng == 1 ? va_arg(ap, long)
                    : lng == 3 ? (int64_t)va_arg(ap, ptrdiff_t)
                               : va_arg(ap, int);
        n = 0;
        if (v < 0) num[n++] = '-';
        n += utoa(v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v, 10, false, num + n);
        field(&s, num, n, width, left, zero);
        break;
      }
      case 'u':
      case 'x':
      case 'X': {
        uint64_t v = lng == 2 ? va_arg(ap, unsigned long long)
                     : lng == 1 ? va_arg(ap, unsigned long)
                     : lng == 3 ? va_arg(ap, size_t)
                                : va_arg(ap, unsigned);
        n = utoa(v, *p == 'u' ? 10 : 16, *p == 'X', num);
        field(&s, num, n, width, left, zero);
        break;
      }
      case 'p':
        num[0] = '0', num[1] = 'x';
        n = 2 + utoa((uintptr_t)va_arg(ap, void *), 16, false, num + 2);
        field(&s, num, n, width, left, false);
        break;
      case 'c':
        num[0] = (char)va_arg(ap, int);
        field(&s, num, 1, width, left, false);
        break;
      case 's': {
        const char *str = va_arg(ap, const char *);
        if (str == NULL) str = "(null)";
        n = 0;
        while ((prec < 0 || n < (size_t)prec) && str[n] != '\0') n++;
        field(&s, str, n, width, left, false);
        break;
      }
      case 'f':
        n = ftoa(va_arg(ap, double), prec < 0 ? 6 : prec, num);
        field(&s, num, n, width, left, zero);
        break;
      case '%':
        put(&s, '%');
        break;
      default: /* not a conversion this host knows: shown as written */
        put(&s, '%');
        if (*p == '\0') p--;
        else put(&s, *p);
    }
  }
  if (cap > 0) buf[s.len < cap ? s.len : cap - 1] = '\0';
  return s.len > INT32_MAX ? INT32_MAX : (int)s.len;
}

int snprintf(char *restrict buf, size_t cap, const char *restrict fmt, ...) {
  va_list ap;
  int n;
  va_start(ap, fmt);
  n = vsnprintf(buf, cap, fmt, ap);
  va_end(ap);
  return n;
}
