/* The C scanner: a block of JSON Lines in one call, without the GIL.
 *
 * flaketui/loading/scan.py drives a Scanner over the blocks of a plain JSONL file. For each
 * line it validates the whole line as one JSON object (strict RFC 8259 grammar, nesting at
 * most MAX_DEPTH deep), reads the top-level values of the trial's keys (their kind, number
 * or string) and judges the line (judge_line): a trial it is sure of is *taken*, with its
 * values; every other line is *deferred* to the per-line parser, whose rule
 * (RecordSink.add, flaketui/loading/records.py) keeps its trial or names its problem. So
 * the scanner does decide what a trial is, but only for lines where it is certain the rule
 * decides the same, and it need only be *cautious*: the differential tests
 * (tests/unit/test_linescan.py, test_scan.py, the mutation corpus) check that every line it
 * takes gives the rule's trial, names and metrics. It defers:
 *
 *   - anything that is not valid JSON, or not an object, or nested deeper than MAX_DEPTH;
 *   - a key with an escape (it might spell one of the keys asked for);
 *   - a key asked for that appears twice;
 *   - a value of a kind its role's rule might refuse or read otherwise (ROLE_KINDS: a run
 *     that is a number, a score that is a string, a trace that is not a list, ...);
 *   - a string asked for that has an escape; a \u escape that is a surrogate, anywhere;
 *   - an integer of more than 18 digits, or a float that is not finite or too long to
 *     convert, where its value is asked for; an exponent of more than 4 digits anywhere;
 *   - a metrics object with a value that is not a number, or a key with an escape, or more
 *     distinct names than the caller's columns;
 *   - a key of the role "defer" with a value other than null (a field the rule reads that
 *     the scanner does not: a retried attempt's mark);
 *   - what the rule refuses or decides by its general cases (an empty task, a trial below
 *     0, passed of 2, no outcome).
 *
 * Bytes from 0x80 up are taken as they are inside strings: the caller checks that a block
 * is valid UTF-8 (or sends its bad lines to the per-line parser) before its names are
 * numbered. Every read is bounds-checked against the end of its line.
 */
#define PY_SSIZE_T_CLEAN
#define _GNU_SOURCE /* strtod_l */
#include <Python.h>
#if defined(__SSE2__)
#include <emmintrin.h> /* x86-64's baseline: SSE2 is always there */
#endif
#include <locale.h>
#include <math.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#if defined(__unix__) || defined(__APPLE__)
#include <sys/mman.h>
#endif

#if defined(__GLIBC__) || defined(__APPLE__)
#ifdef __APPLE__
#include <xlocale.h>
#endif
#define HAVE_STRTOD_L
static locale_t c_locale; /* numbers are read in the C locale, whatever the process's is */
#endif

#define MAX_DEPTH 64
#define MAX_KEYS 64

enum { K_ABSENT = 0, K_NULL, K_FALSE, K_TRUE, K_INT, K_FLOAT, K_STRING, K_ARRAY, K_OBJECT, K_OTHER };
/* A line's status, exported as the IntEnum Status: taken (OK); deferred to the per-line
 * parser (DEFER); to scan again with the GIL, which Scanner.number does (GIL: a new metric
 * name, or a float only Python converts here); deferred and certainly not JSON (BAD: a
 * syntax error, which the caller may count as such once it names no more lines). */
enum { S_OK = 0, S_DEFER = 1, S_GIL = 2, S_BAD = 3 };
typedef struct {
    const unsigned char *p;
    const unsigned char *end;
    int unsure; /* a failure that is not a syntax error (nesting, a surrogate, a long exponent) */
} cursor;

static inline void skip_ws(cursor *c) {
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\r' || *c->p == '\n'))
        c->p++;
}

static inline int hexval(unsigned char ch) {
    if (ch >= '0' && ch <= '9') return ch - '0';
    if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
    return -1;
}

#define ONES 0x0101010101010101ULL
#define HIGHS 0x8080808080808080ULL
/* whether any byte of x is zero / less than n (n <= 128): exact as to "any" */
#define HAS_ZERO(x) (((x) - ONES) & ~(x) & HIGHS)
#define HAS_LESS(x, n) (((x) - ONES * (n)) & ~(x) & HIGHS)

/* A string starting at c->p (its opening quote). On success c->p is past the closing quote,
 * *s and *len give the bytes between the quotes and *escaped says whether there was a
 * backslash. Returns 0, or -1 for anything that is not a valid JSON string. */
static int scan_string(cursor *c, const unsigned char **s, Py_ssize_t *len, int *escaped) {
    const unsigned char *p = c->p + 1, *end = c->end;
    *s = p;
    *escaped = 0;
    for (;;) {
#if defined(__SSE2__)
        /* sixteen bytes at a time, to the first special one: '"', '\\' or below 0x20 */
        while (end - p >= 16) {
            __m128i x = _mm_loadu_si128((const __m128i *)p);
            __m128i special = _mm_or_si128(
                _mm_or_si128(_mm_cmpeq_epi8(x, _mm_set1_epi8('"')), _mm_cmpeq_epi8(x, _mm_set1_epi8('\\'))),
                _mm_cmpeq_epi8(_mm_min_epu8(x, _mm_set1_epi8(0x1F)), x));
            int mask = _mm_movemask_epi8(special);
            if (mask) {
                p += __builtin_ctz((unsigned)mask);
                goto special;
            }
            p += 16;
        }
#endif
        while (end - p >= 8) { /* eight bytes at a time, to the first special one */
            uint64_t x;
            memcpy(&x, p, 8);
            uint64_t special = HAS_ZERO(x ^ (ONES * '"')) | HAS_ZERO(x ^ (ONES * '\\')) | HAS_LESS(x, 0x20);
            if (special) {
#if defined(__GNUC__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
                p += __builtin_ctzll(special) >> 3; /* the lowest flag is exact */
#endif
                break;
            }
            p += 8;
        }
#if defined(__SSE2__)
    special:
#endif
        if (p >= end) return -1;
        unsigned char ch = *p;
        if (ch == '"') {
            *len = p - *s;
            c->p = p + 1;
            return 0;
        }
        if (ch < 0x20) return -1;
        if (ch == '\\') {
            *escaped = 1;
            if (end - p < 2) return -1;
            ch = p[1];
            if (ch == 'u') {
                if (end - p < 6) return -1;
                int v = 0;
                for (int i = 2; i < 6; i++) {
                    int h = hexval(p[i]);
                    if (h < 0) return -1;
                    v = v * 16 + h;
                }
                if (v >= 0xD800 && v <= 0xDFFF) { /* surrogates: left to the per-line parser */
                    c->unsure = 1;
                    return -1;
                }
                p += 6;
                continue;
            }
            if (ch != '"' && ch != '\\' && ch != '/' && ch != 'b' && ch != 'f' && ch != 'n' && ch != 'r' &&
                ch != 't')
                return -1;
            p += 2;
            continue;
        }
        p++;
    }
}

/* A number starting at c->p, by the JSON grammar. *is_int says it has no fraction or
 * exponent; *digits counts its integer digits. Returns 0 or -1. */
static int scan_number(cursor *c, int *is_int, int *digits) {
    const unsigned char *p = c->p, *end = c->end;
    *is_int = 1;
    if (p < end && *p == '-') p++;
    if (p >= end) return -1;
    const unsigned char *first = p;
    if (*p == '0') {
        p++;
    } else if (*p >= '1' && *p <= '9') {
        while (p < end && *p >= '0' && *p <= '9') p++;
    } else {
        return -1;
    }
    *digits = (int)(p - first);
    if (p < end && *p == '.') {
        *is_int = 0;
        p++;
        const unsigned char *f = p;
        while (p < end && *p >= '0' && *p <= '9') p++;
        if (p == f) return -1;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        *is_int = 0;
        p++;
        if (p < end && (*p == '+' || *p == '-')) p++;
        const unsigned char *e = p;
        while (p < end && *p >= '0' && *p <= '9') p++;
        if (p == e) return -1;
        if (p - e > 4) { /* valid, but past what is read here */
            c->unsure = 1;
            return -1;
        }
    }
    c->p = p;
    return 0;
}

/* Whether the n bytes at a and b are equal: names and keys are a few bytes, where a call
 * to memcmp cost more than the comparison (a tenth of the scan's time went to it). */
static inline int same_bytes(const void *a, const void *b, size_t n) {
    const unsigned char *p = a, *q = b;
    for (; n >= 8; p += 8, q += 8, n -= 8) {
        uint64_t x, y;
        memcpy(&x, p, 8);
        memcpy(&y, q, 8);
        if (x != y) return 0;
    }
    for (; n; p++, q++, n--)
        if (*p != *q) return 0;
    return 1;
}

static inline int literal(cursor *c, const char *word, size_t n) {
    if ((size_t)(c->end - c->p) < n || !same_bytes(c->p, word, n)) return -1;
    c->p += n;
    return 0;
}

/* Past the white space, the ':' that follows a member's name and the white space after it; -1
 * when no ':' follows. */
static inline int past_colon(cursor *c) {
    skip_ws(c);
    if (c->p >= c->end || *c->p != ':') return -1;
    c->p++;
    skip_ws(c);
    return 0;
}

/* What may follow an item of an object or array, the one rule of every loop here that reads
 * them: past the white space and a ',' with the white space after it (1: another item follows),
 * or past the closing byte ``close`` (0: the container ends); -1 at anything else. */
static inline int next_item(cursor *c, unsigned char close) {
    skip_ws(c);
    if (c->p >= c->end) return -1;
    if (*c->p == ',') {
        c->p++;
        skip_ws(c);
        return 1;
    }
    if (*c->p == close) {
        c->p++;
        return 0;
    }
    return -1;
}

/* Any value at c->p, checked and skipped. *empty (may be NULL) says an array or object
 * had no items. Returns its kind, or -1. */
static int skip_value(cursor *c, int depth, int *empty) {
    if (c->p >= c->end) return -1;
    unsigned char ch = *c->p;
    if (ch == '"') {
        const unsigned char *s;
        Py_ssize_t len;
        int esc;
        return scan_string(c, &s, &len, &esc) < 0 ? -1 : K_STRING;
    }
    if (ch == '{' || ch == '[') {
        if (depth >= MAX_DEPTH) {
            c->unsure = 1;
            return -1;
        }
        unsigned char close = ch == '{' ? '}' : ']';
        c->p++;
        skip_ws(c);
        if (c->p < c->end && *c->p == close) {
            c->p++;
            if (empty) *empty = 1;
            return ch == '{' ? K_OBJECT : K_ARRAY;
        }
        if (empty) *empty = 0;
        for (;;) {
            if (ch == '{') {
                const unsigned char *s;
                Py_ssize_t len;
                int esc;
                if (c->p >= c->end || *c->p != '"' || scan_string(c, &s, &len, &esc) < 0 || past_colon(c) < 0)
                    return -1;
            }
            if (skip_value(c, depth + 1, NULL) < 0) return -1;
            int more = next_item(c, close);
            if (more < 0) return -1;
            if (!more) return ch == '{' ? K_OBJECT : K_ARRAY;
        }
    }
    if (ch == 't') return literal(c, "true", 4) < 0 ? -1 : K_TRUE;
    if (ch == 'f') return literal(c, "false", 5) < 0 ? -1 : K_FALSE;
    if (ch == 'n') return literal(c, "null", 4) < 0 ? -1 : K_NULL;
    int is_int, digits;
    if (scan_number(c, &is_int, &digits) < 0) return -1;
    return is_int ? K_INT : K_FLOAT;
}

static const double POW10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* Clinger's fast path: a number of at most 19 digits whose digits make an integer m <= 2^53
 * and whose power of ten e has |e| <= 22 is m * 10^e or m / 10^-e, both exact operands, so
 * one correctly rounded operation gives the correctly rounded value (W. D. Clinger, "How
 * to Read Floating Point Numbers Accurately", PLDI 1990). Returns 0, or -1 (not taken). */
static int fast_double(const unsigned char *a, const unsigned char *b, double *out) {
    const unsigned char *p = a;
    int neg = *p == '-';
    p += neg;
    uint64_t m = 0;
    int digits = 0, e = 0;
    for (; p < b && *p >= '0' && *p <= '9'; p++, digits++) m = m * 10 + (uint64_t)(*p - '0');
    if (p < b && *p == '.') {
        for (p++; p < b && *p >= '0' && *p <= '9'; p++, digits++, e--) m = m * 10 + (uint64_t)(*p - '0');
    }
    if (p < b) { /* an exponent */
        p++;
        int eneg = 0, x = 0;
        if (*p == '+' || *p == '-') eneg = *p++ == '-';
        for (; p < b; p++) x = x * 10 + (*p - '0'); /* at most 4 digits: scan_number checked */
        e += eneg ? -x : x;
    }
    if (digits > 19 || m > (1ULL << 53) || e < -22 || e > 22) return -1;
    double v = (double)m;
    v = e < 0 ? v / POW10[-e] : v * POW10[e];
    *out = neg ? -v : v;
    return 0;
}

/* The value of number token [a, b) as a double, or -1 (too long, or not finite, or, without
 * the GIL where no C-locale strtod is at hand, not to be converted here: -3). Both
 * conversions are correctly rounded, as msgspec's is. */
static int to_double(const unsigned char *a, const unsigned char *b, double *out, int gil) {
    if (fast_double(a, b, out) == 0) return 0;
    char tmp[72];
    size_t n = (size_t)(b - a);
    if (n >= sizeof tmp) return -1;
    memcpy(tmp, a, n);
    tmp[n] = 0;
    double v;
#ifdef HAVE_STRTOD_L
    v = strtod_l(tmp, NULL, c_locale);
    (void)gil;
#else
    if (!gil) return -3;
    v = PyOS_string_to_double(tmp, NULL, NULL);
    if (v == -1.0 && PyErr_Occurred()) {
        PyErr_Clear();
        return -1;
    }
#endif
    if (!isfinite(v)) return -1;
    *out = v;
    return 0;
}

/* The value of integer token [a, b) of at most 18 digits. */
static int64_t to_int(const unsigned char *a, const unsigned char *b) {
    int neg = *a == '-';
    int64_t v = 0;
    for (const unsigned char *p = a + neg; p < b; p++) v = v * 10 + (*p - '0');
    return neg ? -v : v;
}


enum { R_RUN, R_TASK, R_TRIAL, R_PASSED, R_SCORE, R_GROUP, R_TRACE, R_ERROR, R_DEFER, R_COUNT };
/* The roles, in the order Scanner takes their keys. The names of a trial are numbered per
 * role, in these tables: */
enum { N_RUN, N_TASK, N_GROUP, N_COUNT };

#define KIND(k) (1u << (k))
/* The kinds of value each role's keys may have for the scanner to take the line (absent and
 * null always): those for which it reads what the rule reads. Any other kind defers the line,
 * and the rule decides (it accepts a run that is a number, say, which is rare enough to leave
 * to it). An error is anything but an integer past 18 digits. */
static const uint16_t ROLE_KINDS[R_COUNT] = {
    [R_RUN] = KIND(K_STRING),
    [R_TASK] = KIND(K_STRING) | KIND(K_INT),
    [R_TRIAL] = KIND(K_INT),
    [R_PASSED] = KIND(K_FALSE) | KIND(K_TRUE) | KIND(K_INT),
    [R_SCORE] = KIND(K_INT) | KIND(K_FLOAT),
    [R_GROUP] = KIND(K_STRING),
    [R_TRACE] = KIND(K_ARRAY),
    [R_ERROR] = KIND(K_FALSE) | KIND(K_TRUE) | KIND(K_INT) | KIND(K_FLOAT) | KIND(K_STRING) | KIND(K_ARRAY) |
                KIND(K_OBJECT),
    [R_DEFER] = 0, /* keys the scanner does not read (a retried attempt's mark): present, per line */
};
#define METRICS_KINDS KIND(K_OBJECT)

typedef struct {
    Py_ssize_t nkeys;
    const char *key[MAX_KEYS];  /* the keys' bytes (kept by the Scanner's keys tuple) */
    Py_ssize_t keylen[MAX_KEYS];
    int8_t named[MAX_KEYS];     /* N_RUN, N_TASK or N_GROUP for a key whose string is numbered, else -1 */
    Py_ssize_t metrics;         /* the position of the metrics key, or -1 */
    PyObject *mnames;           /* dict: metric name (str) -> column (kept by the Scanner) */
    Py_ssize_t mcap;            /* metric columns, at most MAX_KEYS */
    Py_ssize_t nknown;          /* the metric names known, as UTF-8 (kept by mnames' strs) */
    const char *known[MAX_KEYS];
    Py_ssize_t knownlen[MAX_KEYS];
    int gil;                    /* whether the GIL is held: then new metric names are learnt */
    uint16_t allowed[MAX_KEYS]; /* per key, a bit per kind it may have (ROLE_KINDS) */
    int role[R_COUNT][MAX_KEYS];
    int nrole[R_COUNT];
    double threshold;
    int8_t pass_code, fail_code, errored_code;
} spec;

/* One line's values of the keys, as read_line finds them (on the scanning thread's stack). */
typedef struct {
    uint8_t kinds[MAX_KEYS];
    int64_t ints[MAX_KEYS];   /* an integer's value; a string's, array's or object's byte length */
    double floats[MAX_KEYS];  /* a number's value; 1 for an array or object with items, else 0 */
    int64_t soffs[MAX_KEYS];  /* where a string's bytes start in buf */
} values;

/* Remember metric name ``name`` (a str kept alive by the dict) as column j < mcap. */
static int learn(spec *sp, PyObject *name, Py_ssize_t j) {
    Py_ssize_t len;
    const char *u = PyUnicode_AsUTF8AndSize(name, &len);
    if (u == NULL) return -1;
    while (sp->nknown <= j) sp->knownlen[sp->nknown++] = -1;
    sp->known[j] = u;
    sp->knownlen[j] = len;
    return 0;
}

/* The column of a new metric name (GIL held): -1 (defer: not UTF-8, or no column left),
 * -2 (a Python error). */
static Py_ssize_t new_metric(spec *sp, const unsigned char *s, Py_ssize_t len) {
    PyObject *name = PyUnicode_DecodeUTF8((const char *)s, len, "strict");
    if (name == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) return -2;
        PyErr_Clear();
        return -1;
    }
    Py_ssize_t j = PyDict_GET_SIZE(sp->mnames);
    PyObject *col = PyDict_GetItemWithError(sp->mnames, name);
    if (col != NULL || PyErr_Occurred() || j >= sp->mcap) { /* known names are all in sp->known */
        Py_DECREF(name);
        return PyErr_Occurred() ? -2 : -1;
    }
    PyObject *jj = PyLong_FromSsize_t(j);
    int bad = jj == NULL || PyDict_SetItem(sp->mnames, name, jj) < 0 || learn(sp, name, j) < 0;
    Py_XDECREF(jj);
    Py_DECREF(name);
    return bad ? -2 : j;
}

/* Forget the metric names of columns from ``keep`` on (GIL held): a line learnt them and was
 * then not taken, and the rule learns the names of the trials it keeps only (the columns'
 * order is the order names are first seen in trials). No scan can have seen them: they were
 * learnt and are forgotten within one Scanner.number, which holds the GIL throughout. */
static int forget_metrics(spec *sp, Py_ssize_t keep) {
    if (PyDict_GET_SIZE(sp->mnames) <= keep) return 0;
    PyObject *gone = PyList_New(0), *name, *col;
    if (gone == NULL) return -1;
    Py_ssize_t at = 0;
    while (PyDict_Next(sp->mnames, &at, &name, &col)) {
        Py_ssize_t j = PyLong_AsSsize_t(col);
        if (j >= keep && PyList_Append(gone, name) < 0) {
            Py_DECREF(gone);
            return -1;
        }
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(gone); i++) {
        if (PyDict_DelItem(sp->mnames, PyList_GET_ITEM(gone, i)) < 0) {
            Py_DECREF(gone);
            return -1;
        }
    }
    Py_DECREF(gone);
    if (sp->nknown > keep) sp->nknown = keep;
    return 0;
}

/* The metrics object at c->p into row[0..mcap): 0, -1 (defer or invalid), -2 (a Python
 * error), -3 (without the GIL: a new name, or a float to convert with it). */
static int scan_metrics(cursor *c, spec *sp, double *row) {
    c->p++; /* past '{' */
    skip_ws(c);
    if (c->p < c->end && *c->p == '}') {
        c->p++;
        return 0;
    }
    for (;;) {
        const unsigned char *s;
        Py_ssize_t len;
        int esc;
        if (c->p >= c->end || *c->p != '"' || scan_string(c, &s, &len, &esc) < 0 || esc || past_colon(c) < 0)
            return -1;
        const unsigned char *a = c->p;
        int is_int, digits;
        if (c->p >= c->end || !(*c->p == '-' || (*c->p >= '0' && *c->p <= '9'))) return -1;
        if (scan_number(c, &is_int, &digits) < 0) return -1;
        double v;
        if (is_int && digits > 18) return -1; /* past 64 bits: the per-line parser's rules */
        if (is_int) {
            v = (double)to_int(a, c->p);
        } else {
            int r = to_double(a, c->p, &v, sp->gil);
            if (r < 0) return r;
        }
        Py_ssize_t j = -1;
        for (Py_ssize_t i = 0; i < sp->nknown; i++) {
            if (sp->knownlen[i] == len && same_bytes(sp->known[i], s, (size_t)len)) {
                j = i;
                break;
            }
        }
        if (j < 0) {
            if (!sp->gil) return -3;
            j = new_metric(sp, s, len);
            if (j < 0) return (int)j;
        }
        row[j] = v; /* a name twice: the last value, as a dict keeps it */
        int more = next_item(c, '}');
        if (more <= 0) return more;
    }
}

/* ---- the objects' memory ------------------------------------------------------------ */

/* tp_dealloc of a GC-tracked type: untracked, its references dropped by its own tp_clear (the
 * one list of what it holds besides tp_traverse's), then freed. A type that holds memory of its
 * own frees that first and ends with this. */
static void gc_dealloc(PyObject *self) {
    PyObject_GC_UnTrack(self);
    Py_TYPE(self)->tp_clear(self);
    Py_TYPE(self)->tp_free(self);
}

/* ---- Names: strings numbered in the order first seen ------------------------------- */

/* SipHash-1-3 (J.-P. Aumasson and D. J. Bernstein, "SipHash: a fast short-input PRF",
 * INDOCRYPT 2012; one compression and three finalisation rounds, the variant CPython uses for
 * str and bytes since 3.11), keyed once per process from os.urandom: a log cannot be crafted
 * to make its names collide. Its own code, not CPython's private _Py_HashBytes, because it
 * runs without the GIL; equal bytes always hash equal, which is all the tables ask. */
static uint64_t sip_k0, sip_k1;

#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))
#define SIPROUND                                                                                                \
    do {                                                                                                        \
        v0 += v1; v1 = ROTL(v1, 13); v1 ^= v0; v0 = ROTL(v0, 32);                                               \
        v2 += v3; v3 = ROTL(v3, 16); v3 ^= v2;                                                                  \
        v0 += v3; v3 = ROTL(v3, 21); v3 ^= v0;                                                                  \
        v2 += v1; v1 = ROTL(v1, 17); v1 ^= v2; v2 = ROTL(v2, 32);                                               \
    } while (0)

static uint64_t siphash13(const void *src, size_t len) {
    uint64_t v0 = sip_k0 ^ 0x736f6d6570736575ULL, v1 = sip_k1 ^ 0x646f72616e646f6dULL;
    uint64_t v2 = sip_k0 ^ 0x6c7967656e657261ULL, v3 = sip_k1 ^ 0x7465646279746573ULL;
    const unsigned char *p = src;
    uint64_t b = (uint64_t)len << 56;
    for (; len >= 8; p += 8, len -= 8) {
        uint64_t m = 0;
        for (int i = 7; i >= 0; i--) m = (m << 8) | p[i]; /* little-endian, whatever the machine */
        v3 ^= m;
        SIPROUND;
        v0 ^= m;
    }
    uint64_t t = 0;
    for (size_t i = len; i > 0; i--) t = (t << 8) | p[i - 1];
    b |= t;
    v3 ^= b;
    SIPROUND;
    v0 ^= b;
    v2 ^= 0xff;
    SIPROUND;
    SIPROUND;
    SIPROUND;
    return v0 ^ v1 ^ v2 ^ v3;
}

/* A name's hash: never -1 (the outputs' mark for "no hash"). */
static inline Py_hash_t hash_bytes(const void *s, Py_ssize_t len) {
    Py_hash_t h = (Py_hash_t)siphash13(s, (size_t)len);
    return h == -1 ? -2 : h;
}

/* A hash table of the names of one role (runs, tasks or groups): each distinct string gets
 * the next id, and the str is made once. */
typedef struct {
    PyObject_HEAD
    PyObject *list;       /* the names as str, by id */
    Py_ssize_t count;     /* names */
    Py_ssize_t cap;       /* slots, a power of two, at least twice count */
    uint64_t *slots;      /* the hash's high half << 32 | id + 1, or 0 (empty): a probe reads only these */
    Py_hash_t *hashes;    /* by id (to place the names again when the slots grow) */
    Py_ssize_t idcap;     /* room in hashes */
} NamesObject;

static inline uint64_t slot_of(Py_hash_t h, Py_ssize_t id) {
    return ((uint64_t)h & 0xffffffff00000000ULL) | (uint64_t)(id + 1);
}

/* Room for ``want`` names in all (each table grows at once, not by doublings). */
static int names_room(NamesObject *self, Py_ssize_t want) {
    if (want > self->idcap) {
        Py_ssize_t cap = self->idcap ? self->idcap : 1024;
        while (cap < want) cap *= 2;
        Py_hash_t *h = PyMem_Realloc(self->hashes, (size_t)cap * sizeof *h);
        if (h == NULL) return -1;
        self->hashes = h;
        self->idcap = cap;
    }
    if (2 * want > self->cap) {
        Py_ssize_t cap = self->cap ? self->cap : 2048;
        while (cap < 2 * want) cap *= 2;
        uint64_t *slots = PyMem_Calloc((size_t)cap, sizeof *slots);
        if (slots == NULL) return -1;
        for (Py_ssize_t i = 0; i < self->count; i++) {
            size_t at = (size_t)self->hashes[i] & (size_t)(cap - 1);
            while (slots[at]) at = (at + 1) & (size_t)(cap - 1);
            slots[at] = slot_of(self->hashes[i], i);
        }
        PyMem_Free(self->slots);
        self->slots = slots;
        self->cap = cap;
    }
    return 0;
}

/* Where the slots of hash h start (for a prefetch: the probe reads them next). */
static inline const uint64_t *names_probe(const NamesObject *self, Py_hash_t h) {
    return self->slots + ((size_t)h & (size_t)(self->cap - 1));
}

/* The id of UTF-8 string s of hash h (hash_bytes: the caller may have found it ahead), its
 * str made when new; -1 with a Python error (a UnicodeDecodeError when s is not UTF-8). */
static Py_ssize_t names_id_hashed(NamesObject *self, const char *s, Py_ssize_t len, Py_hash_t h) {
    if (self->cap) {
        uint64_t tag = (uint64_t)h & 0xffffffff00000000ULL;
        size_t at = (size_t)h & (size_t)(self->cap - 1);
        for (uint64_t slot; (slot = self->slots[at]) != 0; at = (at + 1) & (size_t)(self->cap - 1)) {
            if ((slot & 0xffffffff00000000ULL) != tag) continue;
            Py_ssize_t id = (Py_ssize_t)(slot & 0xffffffffULL) - 1;
            /* the tag's 32 bits of hash agree: the bytes decide (a memory read fewer than
             * checking the whole hash first). The name's UTF-8: an ASCII str's own bytes,
             * else the copy the str keeps */
            Py_ssize_t ulen;
            const char *u = PyUnicode_AsUTF8AndSize(PyList_GET_ITEM(self->list, id), &ulen);
            if (u != NULL && ulen == len && same_bytes(u, s, (size_t)len)) return id;
        }
    }
    if (self->count >= INT32_MAX - 1) {
        PyErr_SetString(PyExc_OverflowError, "too many names");
        return -1;
    }
    PyObject *str = PyUnicode_DecodeUTF8(s, len, "strict");
    if (str == NULL) return -1;
    Py_ssize_t ulen;
    const char *u = PyUnicode_AsUTF8AndSize(str, &ulen);
    if (u == NULL || names_room(self, self->count + 1) < 0 || PyList_Append(self->list, str) < 0) {
        Py_DECREF(str);
        if (!PyErr_Occurred()) PyErr_NoMemory();
        return -1;
    }
    Py_DECREF(str); /* the list keeps it, and with it its UTF-8 */
    Py_ssize_t id = self->count++;
    self->hashes[id] = h;
    size_t at = (size_t)h & (size_t)(self->cap - 1);
    while (self->slots[at]) at = (at + 1) & (size_t)(self->cap - 1);
    self->slots[at] = slot_of(h, id);
    return id;
}

static Py_ssize_t names_id(NamesObject *self, const char *s, Py_ssize_t len) {
    return names_id_hashed(self, s, len, hash_bytes(s, len));
}

static PyObject *names_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "", kwlist)) return NULL;
    NamesObject *self = (NamesObject *)type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    self->list = PyList_New(0);
    if (self->list == NULL) {
        Py_DECREF(self);
        return NULL;
    }
    return (PyObject *)self;
}

static int names_clear(NamesObject *self) {
    Py_CLEAR(self->list);
    return 0;
}

static void names_dealloc(NamesObject *self) {
    PyMem_Free(self->slots);
    PyMem_Free(self->hashes);
    gc_dealloc((PyObject *)self);
}

static int names_traverse(NamesObject *self, visitproc visit, void *arg) {
    Py_VISIT(self->list);
    return 0;
}

static Py_ssize_t names_len(NamesObject *self) { return self->count; }

static PyObject *names_add(NamesObject *self, PyObject *name) {
    if (!PyUnicode_Check(name)) {
        PyErr_SetString(PyExc_TypeError, "a name is a str");
        return NULL;
    }
    Py_ssize_t len;
    const char *u = PyUnicode_AsUTF8AndSize(name, &len);
    if (u == NULL) return NULL;
    Py_ssize_t id = names_id(self, u, len);
    return id < 0 ? NULL : PyLong_FromSsize_t(id);
}

static PyObject *names_reserve(NamesObject *self, PyObject *arg) {
    Py_ssize_t want = PyLong_AsSsize_t(arg);
    if (want == -1 && PyErr_Occurred()) return NULL;
    if (want > INT32_MAX) want = INT32_MAX;
    if (names_room(self, want) < 0) return PyErr_NoMemory();
    Py_RETURN_NONE;
}

static PyObject *names_names(NamesObject *self, void *closure) { return PyList_GetSlice(self->list, 0, self->count); }

static PyMethodDef names_methods[] = {
    {"add", (PyCFunction)names_add, METH_O, "add(name) -> id: the id of str name, numbered next when new."},
    {"reserve", (PyCFunction)names_reserve, METH_O, "reserve(n): room for n names without growing."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef names_getset[] = {
    {"names", (getter)names_names, NULL, "The names by id (a new list).", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PySequenceMethods names_as_sequence = {.sq_length = (lenfunc)names_len};

static PyTypeObject NamesType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "flaketui._linescan.Names",
    .tp_basicsize = sizeof(NamesObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "Names() -> strings numbered in the order first seen (ids from 0).",
    .tp_new = names_new,
    .tp_dealloc = (destructor)names_dealloc,
    .tp_traverse = (traverseproc)names_traverse,
    .tp_clear = (inquiry)names_clear,
    .tp_methods = names_methods,
    .tp_getset = names_getset,
    .tp_as_sequence = &names_as_sequence,
};

/* ---- Part: one set of outputs ------------------------------------------------------- */

enum { F_STARTS, F_ENDS, F_STATUS, F_UTF8, F_TRIAL, F_OUTCOME, F_SCORE, F_TRACE, F_SIDS, F_MVALS, F_NKIND, F_NOFF, F_NLEN,
       F_NHASH, F_COUNT };
#define F_PUBLIC F_NKIND /* the fields before this one are the caller's (Part.layout) */
static const struct {
    const char *name;
    const char *format; /* the struct module's, as numpy reads it */
    int size;
    int cols; /* per row; 0: the metric columns */
} FIELDS[F_COUNT] = {
    [F_STARTS] = {"starts", "q", 8, 1},      /* a line's span in buf */
    [F_ENDS] = {"ends", "q", 8, 1},
    [F_STATUS] = {"status", "B", 1, 1},      /* S_OK, ... */
    [F_UTF8] = {"utf8", "B", 1, 1},          /* whether the line is valid UTF-8 (else it is deferred) */
    [F_TRIAL] = {"trial", "q", 8, 1},        /* a line taken: its trial number (-1: none) */
    [F_OUTCOME] = {"outcome", "b", 1, 1},    /* its outcome's code */
    [F_SCORE] = {"score", "d", 8, 1},        /* its score (NaN: none) */
    [F_TRACE] = {"trace", "b", 1, 1},        /* whether its trace is a list with steps */
    [F_SIDS] = {"sids", "i", 4, N_COUNT},    /* its run's, task's and group's ids (-1: none), by number */
    [F_MVALS] = {"mvals", "d", 8, 0},        /* its metrics by column of metric_names, NaN where absent */
    [F_NKIND] = {"nkind", "B", 1, N_COUNT},  /* the kind of the value each name is read from */
    [F_NOFF] = {"noff", "q", 8, N_COUNT},    /* a string's offset in buf; a task id's value */
    [F_NLEN] = {"nlen", "q", 8, N_COUNT},    /* a string's length */
    [F_NHASH] = {"nhash", "q", 8, N_COUNT},  /* a string's hash found by the scan; -1: none, or the
                                              * same bytes as the line before's (the same id) */
};

typedef struct {
    PyObject_HEAD
    unsigned char *arena;
    size_t size;
    int mapped;              /* the arena is an anonymous mapping (else PyMem) */
    Py_ssize_t rows, mcap;
    Py_ssize_t n;            /* lines scanned into it */
    int ascii;               /* whether they are all ASCII (else the caller checks their UTF-8) */
    size_t offset[F_COUNT];
    int64_t *starts, *ends;
    uint8_t *status;
    uint8_t *utf8;
    int64_t *trial;
    int8_t *outcome;
    double *score;
    int8_t *trace;
    int32_t *sids;
    double *mvals;
    uint8_t *nkind;
    int64_t *noff, *nlen, *nhash;
} PartObject;

static PyTypeObject PartType;

#define POPULATE_BYTES (1 << 20)
/* A part at least this large is mapped in one call (MAP_POPULATE): a page fault per page, as
 * the scan first fills it, costs several times more on a virtual machine (loading/pages.py). */

static PartObject *part_new(Py_ssize_t rows, Py_ssize_t mcap) {
    PartObject *self = PyObject_New(PartObject, &PartType);
    if (self == NULL) return NULL;
    self->arena = NULL;
    self->rows = rows;
    self->mcap = mcap;
    self->n = 0;
    self->ascii = 1;
    size_t at = 0;
    for (int f = 0; f < F_COUNT; f++) {
        self->offset[f] = at;
        size_t cols = FIELDS[f].cols ? (size_t)FIELDS[f].cols : (size_t)mcap;
        at += ((size_t)rows * cols * (size_t)FIELDS[f].size + 63) & ~(size_t)63;
    }
    self->size = at ? at : 64;
    self->mapped = 0;
#if defined(MAP_POPULATE)
    if (self->size >= POPULATE_BYTES) {
        void *p = mmap(NULL, self->size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
        if (p != MAP_FAILED) {
            self->arena = p;
            self->mapped = 1;
        }
    }
#endif
    if (self->arena == NULL) self->arena = PyMem_Calloc(1, self->size);
    if (self->arena == NULL) {
        Py_DECREF(self);
        PyErr_NoMemory();
        return NULL;
    }
    unsigned char *a = self->arena;
    self->starts = (int64_t *)(a + self->offset[F_STARTS]);
    self->ends = (int64_t *)(a + self->offset[F_ENDS]);
    self->status = a + self->offset[F_STATUS];
    self->utf8 = a + self->offset[F_UTF8];
    self->trial = (int64_t *)(a + self->offset[F_TRIAL]);
    self->outcome = (int8_t *)(a + self->offset[F_OUTCOME]);
    self->score = (double *)(a + self->offset[F_SCORE]);
    self->trace = (int8_t *)(a + self->offset[F_TRACE]);
    self->sids = (int32_t *)(a + self->offset[F_SIDS]);
    self->mvals = (double *)(a + self->offset[F_MVALS]);
    self->nkind = a + self->offset[F_NKIND];
    self->noff = (int64_t *)(a + self->offset[F_NOFF]);
    self->nlen = (int64_t *)(a + self->offset[F_NLEN]);
    self->nhash = (int64_t *)(a + self->offset[F_NHASH]);
    return self;
}

static void part_dealloc(PartObject *self) {
    if (self->arena != NULL) {
#if defined(MAP_POPULATE)
        if (self->mapped)
            munmap(self->arena, self->size);
        else
#endif
            PyMem_Free(self->arena);
    }
    PyObject_Free(self);
}

/* The arena as writable bytes: numpy views of the fields (Part.layout) keep the part alive. */
static int part_getbuffer(PartObject *self, Py_buffer *view, int flags) {
    return PyBuffer_FillInfo(view, (PyObject *)self, self->arena, (Py_ssize_t)self->size, 0, flags);
}

static PyBufferProcs part_as_buffer = {.bf_getbuffer = (getbufferproc)part_getbuffer};

static PyObject *part_get_n(PartObject *self, void *closure) { return PyLong_FromSsize_t(self->n); }
static PyObject *part_get_ascii(PartObject *self, void *closure) { return PyBool_FromLong(self->ascii); }
static PyObject *part_get_rows(PartObject *self, void *closure) { return PyLong_FromSsize_t(self->rows); }

static PyObject *part_get_layout(PartObject *self, void *closure) {
    PyObject *d = PyDict_New();
    if (d == NULL) return NULL;
    for (int f = 0; f < F_PUBLIC; f++) {
        Py_ssize_t cols = FIELDS[f].cols ? FIELDS[f].cols : self->mcap;
        PyObject *v = Py_BuildValue("(nsn)", (Py_ssize_t)self->offset[f], FIELDS[f].format,
                                    FIELDS[f].cols == 1 ? (Py_ssize_t)0 : cols);
        if (v == NULL || PyDict_SetItemString(d, FIELDS[f].name, v) < 0) {
            Py_XDECREF(v);
            Py_DECREF(d);
            return NULL;
        }
        Py_DECREF(v);
    }
    return d;
}

static PyGetSetDef part_getset[] = {
    {"n", (getter)part_get_n, NULL, "Lines scanned into the part (its first rows).", NULL},
    {"ascii", (getter)part_get_ascii, NULL, "Whether those lines are all ASCII (so valid UTF-8).", NULL},
    {"rows", (getter)part_get_rows, NULL, "Lines the part has room for.", NULL},
    {"layout", (getter)part_get_layout, NULL,
     "The fields in the part's buffer: name -> (byte offset, struct format, columns; 0: one per row).", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject PartType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "flaketui._linescan.Part",
    .tp_basicsize = sizeof(PartObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Lines scanned by a Scanner: its outputs, one row a line, in one buffer (see layout).",
    .tp_dealloc = (destructor)part_dealloc,
    .tp_getset = part_getset,
    .tp_as_buffer = &part_as_buffer,
};

/* ---- the scan of a line ------------------------------------------------------------- */

/* Whether [p, e) has a byte from 0x80 up. */
static int has_high(const unsigned char *p, const unsigned char *e) {
    uint64_t any = 0;
    for (; e - p >= 8; p += 8) {
        uint64_t x;
        memcpy(&x, p, 8);
        any |= x;
    }
    for (; p < e; p++) any |= *p;
    return (any & HIGHS) != 0;
}

/* Whether [p, e) is valid UTF-8 as Python's strict decoder says (The Unicode Standard, Table
 * 3-7, "Well-Formed UTF-8 Byte Sequences": no overlong forms, no surrogates, nothing past
 * U+10FFFF). A line that is not is deferred; the per-line parser names it. */
static int utf8_valid(const unsigned char *p, const unsigned char *e) {
    while (p < e) {
        if (e - p >= 8) {
            uint64_t x;
            memcpy(&x, p, 8);
            if (!(x & HIGHS)) {
                p += 8;
                continue;
            }
        }
        unsigned char c = *p;
        if (c < 0x80) {
            p++;
        } else if (c >= 0xC2 && c <= 0xDF) {
            if (e - p < 2 || (p[1] & 0xC0) != 0x80) return 0;
            p += 2;
        } else if (c >= 0xE0 && c <= 0xEF) {
            if (e - p < 3 || (p[1] & 0xC0) != 0x80 || (p[2] & 0xC0) != 0x80) return 0;
            if ((c == 0xE0 && p[1] < 0xA0) || (c == 0xED && p[1] > 0x9F)) return 0; /* overlong; surrogate */
            p += 3;
        } else if (c >= 0xF0 && c <= 0xF4) {
            if (e - p < 4 || (p[1] & 0xC0) != 0x80 || (p[2] & 0xC0) != 0x80 || (p[3] & 0xC0) != 0x80) return 0;
            if ((c == 0xF0 && p[1] < 0x90) || (c == 0xF4 && p[1] > 0x8F)) return 0; /* overlong; past U+10FFFF */
            p += 4;
        } else {
            return 0;
        }
    }
    return 1;
}

/* One line [a, b) of buf (at base) into ``v`` and its metrics into ``mrow``: S_OK, S_DEFER,
 * S_GIL, or -2 (a Python error; only with the GIL). */
static int read_line(const unsigned char *base, const unsigned char *a, const unsigned char *b, spec *sp,
                     values *v, double *mrow) {
    Py_ssize_t K = sp->nkeys;
    uint8_t *kinds = v->kinds;
    int64_t *ints = v->ints;
    double *floats = v->floats;
    int64_t *soffs = v->soffs;
    memset(kinds, K_ABSENT, (size_t)K);
    for (Py_ssize_t j = 0; j < sp->mcap; j++) mrow[j] = NAN;
    cursor c = {a, b, 0};
    skip_ws(&c);
    if (c.p >= c.end || *c.p != '{') return S_DEFER;
    c.p++;
    skip_ws(&c);
    if (c.p < c.end && *c.p == '}') {
        c.p++;
    } else {
        for (;;) {
            const unsigned char *s;
            Py_ssize_t len;
            int esc;
            if (c.p >= c.end || *c.p != '"' || scan_string(&c, &s, &len, &esc) < 0 || esc || past_colon(&c) < 0)
                return S_DEFER;
            Py_ssize_t k = -1;
            for (Py_ssize_t i = 0; i < K; i++) {
                if (sp->keylen[i] == len && same_bytes(sp->key[i], s, (size_t)len)) {
                    k = i;
                    break;
                }
            }
            if (c.p >= c.end) return S_DEFER;
            if (k < 0) {
                if (skip_value(&c, 1, NULL) < 0) return S_DEFER;
            } else {
                if (kinds[k] != K_ABSENT) return S_DEFER; /* a key asked for, twice */
                const unsigned char *val = c.p;
                int kind;
                if (k == sp->metrics && *val == '{') {
                    int r = scan_metrics(&c, sp, mrow);
                    if (r == -2) return -2;
                    if (r == -3) return S_GIL;
                    if (r < 0) return S_DEFER;
                    kind = K_OBJECT;
                } else if (*val == '"') {
                    const unsigned char *sb;
                    Py_ssize_t slen;
                    int e;
                    if (scan_string(&c, &sb, &slen, &e) < 0) return S_DEFER;
                    if (e && sp->named[k] >= 0) return S_DEFER;
                    kind = K_STRING;
                    ints[k] = slen;
                    soffs[k] = sb - base;
                } else {
                    int empty = 0;
                    kind = skip_value(&c, 1, &empty);
                    if (kind < 0) return S_DEFER;
                    if (kind == K_INT || kind == K_FLOAT) {
                        const unsigned char *q = val + (*val == '-');
                        const unsigned char *d = q;
                        while (d < c.p && *d >= '0' && *d <= '9') d++;
                        if (kind == K_INT && d - q <= 18) {
                            ints[k] = to_int(val, c.p);
                            floats[k] = (double)ints[k];
                        } else {
                            int r = to_double(val, c.p, &floats[k], sp->gil);
                            if (r == -3) return S_GIL;
                            if (r < 0) return S_DEFER;
                            if (kind == K_INT) kind = K_OTHER; /* too long for an int64: per line */
                        }
                    } else if (kind == K_ARRAY || kind == K_OBJECT) {
                        ints[k] = c.p - val;
                        floats[k] = empty ? 0.0 : 1.0;
                    }
                }
                kinds[k] = (uint8_t)kind;
            }
            int more = next_item(&c, '}');
            if (more < 0) return S_DEFER;
            if (!more) break;
        }
    }
    skip_ws(&c);
    return c.p == c.end ? S_OK : S_DEFER; /* nothing may follow the object */
}

/* The first key of ``role`` whose value is neither absent nor null, or -1. */
static inline int first_of(const spec *sp, int role, const uint8_t *kinds) {
    for (int j = 0; j < sp->nrole[role]; j++)
        if (kinds[sp->role[role][j]] > K_NULL) return sp->role[role][j];
    return -1;
}

/* The trial of a line read_line took, by the rule of RecordSink.add where the scanner is sure
 * of it: S_OK with the trial's values in ``row`` of the part, or S_DEFER where the rule would
 * refuse the line or decide it by its general cases (it then keeps it or names its problem). */
static int judge_line(const spec *sp, const values *v, Py_ssize_t row, PartObject *out) {
    Py_ssize_t K = sp->nkeys;
    const uint8_t *kinds = v->kinds;
    const int64_t *ints = v->ints;
    const double *floats = v->floats;
    for (Py_ssize_t k = 0; k < K; k++) /* a kind the scanner does not read as the rule does */
        if (!((sp->allowed[k] >> kinds[k]) & 1)) return S_DEFER;
    int task = first_of(sp, R_TASK, kinds), run = first_of(sp, R_RUN, kinds);
    int group = first_of(sp, R_GROUP, kinds), trial = first_of(sp, R_TRIAL, kinds);
    if (task < 0 || (kinds[task] == K_STRING && ints[task] == 0)) return S_DEFER; /* no task, or "" */
    if (run >= 0 && ints[run] == 0) return S_DEFER;                              /* run "" (a length) */
    if (group >= 0 && ints[group] == 0) return S_DEFER;
    if (trial >= 0 && ints[trial] < 0) return S_DEFER;
    int passed = first_of(sp, R_PASSED, kinds), score = first_of(sp, R_SCORE, kinds);
    int ok = 0;
    if (passed >= 0) {
        if (kinds[passed] == K_INT && ints[passed] != 0 && ints[passed] != 1) return S_DEFER;
        ok = kinds[passed] == K_TRUE || (kinds[passed] == K_INT && ints[passed] == 1);
    } else if (score >= 0) {
        ok = floats[score] >= sp->threshold;
    }
    int errored = 0; /* is_error: truthy (a string's length is in ints, an item in floats) */
    for (int j = 0; j < sp->nrole[R_ERROR]; j++) {
        int e = sp->role[R_ERROR][j];
        switch (kinds[e]) {
        case K_TRUE: errored = 1; break;
        case K_STRING: errored |= ints[e] > 0; break;
        case K_INT: case K_FLOAT: case K_ARRAY: case K_OBJECT: errored |= floats[e] != 0; break;
        default: break;
        }
    }
    if (passed < 0 && score < 0 && !errored) return S_DEFER; /* no outcome: the general rules name it */
    int trace = first_of(sp, R_TRACE, kinds);
    out->trial[row] = trial >= 0 ? ints[trial] : -1;
    out->outcome[row] = errored ? sp->errored_code : (ok ? sp->pass_code : sp->fail_code);
    out->score[row] = score >= 0 ? floats[score] : NAN;
    out->trace[row] = trace >= 0 && floats[trace] != 0; /* bool(trace): a list with items */
    const int at[N_COUNT] = {[N_RUN] = run, [N_TASK] = task, [N_GROUP] = group};
    for (int r = 0; r < N_COUNT; r++) {
        int k = at[r];
        Py_ssize_t i = row * N_COUNT + r;
        out->nkind[i] = k < 0 ? K_ABSENT : kinds[k];
        out->noff[i] = k < 0 ? 0 : kinds[k] == K_STRING ? v->soffs[k] : ints[k];
        out->nlen[i] = k < 0 ? 0 : ints[k];
    }
    return S_OK;
}

/* The hashes of a line taken's names (the strings its run, task and group are read from). */
static void hash_names(const unsigned char *base, Py_ssize_t row, PartObject *out) {
    int before = row > 0 && out->status[row - 1] == S_OK;
    for (int r = 0; r < N_COUNT; r++) {
        Py_ssize_t i = row * N_COUNT + r;
        out->nhash[i] = -1;
        if (out->nkind[i] != K_STRING) continue;
        int64_t len = out->nlen[i];
        Py_ssize_t p = i - N_COUNT;
        if (before && out->nkind[p] == K_STRING && out->nlen[p] == len &&
            same_bytes(base + out->noff[p], base + out->noff[i], (size_t)len))
            continue;
        out->nhash[i] = hash_bytes(base + out->noff[i], (Py_ssize_t)len);
    }
}

/* Whether [a, b) is blank as the per-line parser sees it (bytes.strip: ASCII whitespace,
 * \x0b and \x0c included, which JSON's grammar does not call whitespace). */
static int blank(const unsigned char *a, const unsigned char *b) {
    for (; a < b; a++)
        if (!(*a == ' ' || *a == '\t' || *a == '\r' || *a == '\n' || *a == '\x0b' || *a == '\x0c')) return 0;
    return 1;
}

/* read_line and judge_line; a line not taken told apart: S_BAD when it is certainly not JSON
 * (so the caller may count it as such once it names no more lines), else S_DEFER. */
static int scan_line(const unsigned char *base, const unsigned char *a, const unsigned char *b, spec *sp,
                     Py_ssize_t row, PartObject *out) {
    values v;
    int st = read_line(base, a, b, sp, &v, out->mvals + row * sp->mcap);
    if (st == S_OK) {
        st = judge_line(sp, &v, row, out);
        if (st == S_OK) hash_names(base, row, out);
        return st;
    }
    if (st != S_DEFER) return st;
    if (blank(a, b)) return S_DEFER; /* the per-line parser says nothing of it */
    cursor c = {a, b, 0};
    skip_ws(&c);
    if (skip_value(&c, 0, NULL) < 0) return c.unsure ? S_DEFER : S_BAD;
    skip_ws(&c);
    return c.p == c.end ? S_DEFER : S_BAD; /* valid JSON that is not a trial, or something after it */
}

/* ---- Scanner ------------------------------------------------------------------------ */

typedef struct {
    PyObject_HEAD
    PyObject *keys;    /* tuple of bytes: the keys read */
    PyObject *tables;  /* tuple of N_COUNT Names */
    PyObject *mnames;  /* dict: metric name -> column */
    Py_ssize_t rows;   /* lines a part holds */
    spec sp;           /* parsed once; a scan works on a copy (the metric names then known) */
} ScannerObject;

static const char *ROLE_NAMES[R_COUNT] = {
    [R_RUN] = "run", [R_TASK] = "task", [R_TRIAL] = "trial", [R_PASSED] = "passed",
    [R_SCORE] = "score", [R_GROUP] = "group", [R_TRACE] = "trace", [R_ERROR] = "error",
    [R_DEFER] = "defer",
};

/* A role's key positions from roles[name] (a tuple of ints below nkeys; absent: none). */
static Py_ssize_t role_keys(PyObject *roles, const char *name, Py_ssize_t nkeys, int *where) {
    PyObject *got = PyDict_GetItemString(roles, name);
    if (got == NULL) return 0;
    if (!PyTuple_Check(got) || PyTuple_GET_SIZE(got) > MAX_KEYS) {
        PyErr_Format(PyExc_ValueError, "roles[%s] must be a tuple of key positions", name);
        return -1;
    }
    for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(got); j++) {
        long k = PyLong_AsLong(PyTuple_GET_ITEM(got, j));
        if (k == -1 && PyErr_Occurred()) return -1;
        if (k < 0 || k >= nkeys) {
            PyErr_Format(PyExc_ValueError, "roles[%s] names a key outside the keys", name);
            return -1;
        }
        where[j] = (int)k;
    }
    return PyTuple_GET_SIZE(got);
}

static int scanner_clear(ScannerObject *self) {
    Py_CLEAR(self->keys);
    Py_CLEAR(self->tables);
    Py_CLEAR(self->mnames);
    return 0;
}

static int scanner_traverse(ScannerObject *self, visitproc visit, void *arg) {
    Py_VISIT(self->keys);
    Py_VISIT(self->tables);
    Py_VISIT(self->mnames);
    return 0;
}

static PyObject *scanner_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"keys", "roles", "threshold", "codes", "rows", "columns", NULL};
    PyObject *keys, *roles;
    double threshold;
    int codes[3];
    Py_ssize_t rows = 16384, columns = 16;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O!O!d(iii)|nn", kwlist, &PyTuple_Type, &keys, &PyDict_Type, &roles,
                                     &threshold, &codes[0], &codes[1], &codes[2], &rows, &columns))
        return NULL;
    Py_ssize_t K = PyTuple_GET_SIZE(keys);
    if (K == 0 || K > MAX_KEYS) {
        PyErr_SetString(PyExc_ValueError, "between 1 and 64 keys");
        return NULL;
    }
    if (rows < 1 || rows > (1 << 24) || columns < 1 || columns > MAX_KEYS) {
        PyErr_SetString(PyExc_ValueError, "rows between 1 and 2**24, columns between 1 and 64");
        return NULL;
    }
    ScannerObject *self = (ScannerObject *)type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    spec *sp = &self->sp;
    memset(sp, 0, sizeof *sp);
    self->keys = Py_NewRef(keys);
    self->rows = rows;
    self->mnames = PyDict_New();
    self->tables = PyTuple_New(N_COUNT);
    if (self->mnames == NULL || self->tables == NULL) goto fail;
    for (int r = 0; r < N_COUNT; r++) {
        PyObject *t = PyObject_CallNoArgs((PyObject *)&NamesType);
        if (t == NULL) goto fail;
        PyTuple_SET_ITEM(self->tables, r, t);
    }
    sp->nkeys = K;
    for (Py_ssize_t k = 0; k < K; k++) {
        PyObject *key = PyTuple_GET_ITEM(keys, k);
        if (!PyBytes_Check(key)) {
            PyErr_SetString(PyExc_TypeError, "keys must be bytes");
            goto fail;
        }
        sp->key[k] = PyBytes_AS_STRING(key);
        sp->keylen[k] = PyBytes_GET_SIZE(key);
        sp->named[k] = -1;
        sp->allowed[k] = (uint16_t)((1u << (K_OTHER + 1)) - 1);
    }
    for (int r = 0; r < R_COUNT; r++) {
        Py_ssize_t got = role_keys(roles, ROLE_NAMES[r], K, sp->role[r]);
        if (got < 0) goto fail;
        sp->nrole[r] = (int)got;
        for (int j = 0; j < sp->nrole[r]; j++) {
            int k = sp->role[r][j];
            sp->allowed[k] = (uint16_t)(KIND(K_ABSENT) | KIND(K_NULL) | ROLE_KINDS[r]);
            if (r == R_RUN || r == R_TASK || r == R_GROUP)
                sp->named[k] = (int8_t)(r == R_RUN ? N_RUN : r == R_TASK ? N_TASK : N_GROUP);
        }
    }
    int where[MAX_KEYS];
    Py_ssize_t nm = role_keys(roles, "metrics", K, where);
    if (nm < 0) goto fail;
    if (nm > 1) {
        PyErr_SetString(PyExc_ValueError, "one metrics key at most");
        goto fail;
    }
    sp->metrics = nm ? where[0] : -1;
    if (nm) sp->allowed[where[0]] = (uint16_t)(KIND(K_ABSENT) | KIND(K_NULL) | METRICS_KINDS);
    sp->mnames = self->mnames;
    sp->mcap = columns;
    sp->threshold = threshold;
    sp->pass_code = (int8_t)codes[0];
    sp->fail_code = (int8_t)codes[1];
    sp->errored_code = (int8_t)codes[2];
    return (PyObject *)self;
fail:
    Py_DECREF(self);
    return NULL;
}

PyDoc_STRVAR(scanner_scan_doc,
"scan(buf, start, stop, limit, part=None) -> Part\n"
"--\n\n"
"Scan the lines of buf[start:stop] (start starts a line; stop is just past a newline) that\n"
"start before limit, as many as a part holds, without the GIL, into part (a Part of this\n"
"scanner's, whose earlier lines are then overwritten; None: a new one). Each row's status\n"
"says whether the line is taken (its trial's values are in the row), deferred, to scan again\n"
"with the GIL (number does), or not JSON. Safe to call from several threads at once, each\n"
"with its own part: the scan reads the metric names known when it starts.");

static PyObject *scanner_scan(ScannerObject *self, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"buf", "start", "stop", "limit", "part", NULL};
    PyObject *bufobj, *partobj = Py_None;
    Py_ssize_t start, stop, limit;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "Onnn|O", kwlist, &bufobj, &start, &stop, &limit, &partobj))
        return NULL;
    PartObject *out;
    if (partobj == Py_None) {
        out = part_new(self->rows, self->sp.mcap);
        if (out == NULL) return NULL;
    } else {
        if (!PyObject_TypeCheck(partobj, &PartType) || ((PartObject *)partobj)->mcap != self->sp.mcap) {
            PyErr_SetString(PyExc_TypeError, "part must be a Part of this scanner's");
            return NULL;
        }
        out = (PartObject *)Py_NewRef(partobj);
    }
    Py_buffer buf;
    if (PyObject_GetBuffer(bufobj, &buf, PyBUF_SIMPLE) < 0) {
        Py_DECREF(out);
        return NULL;
    }
    if (start < 0 || stop < start || stop > buf.len || limit < 0) {
        PyErr_SetString(PyExc_ValueError, "start, stop or limit out of range");
        PyBuffer_Release(&buf);
        Py_DECREF(out);
        return NULL;
    }
    spec sp = self->sp; /* the metric names known now: number() may learn more meanwhile */
    sp.gil = 0;
    const unsigned char *base = (const unsigned char *)buf.buf;
    Py_ssize_t n = 0, pos = start, rows = out->rows;
    int ascii = 1;
    Py_BEGIN_ALLOW_THREADS
    while (pos < stop && pos < limit && n < rows) {
        const unsigned char *nl = memchr(base + pos, '\n', (size_t)(stop - pos));
        if (nl == NULL) break;
        Py_ssize_t e = nl - base;
        const unsigned char *a = base + pos, *b = base + e;
        int high = has_high(a, b), valid = !high || utf8_valid(a, b);
        ascii &= !high;
        out->starts[n] = pos;
        out->ends[n] = e;
        out->utf8[n] = (uint8_t)valid;
        int st = scan_line(base, a, b, &sp, n, out);
        if (!valid && (st == S_OK || st == S_GIL)) st = S_DEFER; /* its names are not numbered */
        out->status[n] = (uint8_t)st;
        n++;
        pos = e + 1;
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&buf);
    out->n = n;
    out->ascii = ascii;
    return (PyObject *)out;
}

PyDoc_STRVAR(scanner_number_doc,
"number(buf, part) -> irregular\n"
"--\n\n"
"With the GIL, after scan on the same buf and part: scan again the lines of status GIL (new\n"
"metric names are added to metric_names, and forgotten again if the line is not taken), then\n"
"give the run, task and group of each line taken its id in tables (sids; -1: none). A name\n"
"that is not UTF-8 defers its line. Returns whether a name may have been numbered for a line\n"
"then deferred (the caller then renumbers by first use).");

#define PREFETCH 16 /* lines */

static PyObject *scanner_number(ScannerObject *self, PyObject *args) {
    PyObject *bufobj, *partobj;
    if (!PyArg_ParseTuple(args, "OO!", &bufobj, &PartType, &partobj)) return NULL;
    PartObject *out = (PartObject *)partobj;
    spec *sp = &self->sp;
    if (out->mcap != sp->mcap || out->n < 0 || out->n > out->rows) {
        PyErr_SetString(PyExc_ValueError, "part must be a Part of this scanner's");
        return NULL;
    }
    Py_buffer buf;
    if (PyObject_GetBuffer(bufobj, &buf, PyBUF_SIMPLE) < 0) return NULL;
    PyObject *result = NULL;
    sp->gil = 1;
    const unsigned char *base = (const unsigned char *)buf.buf;
    Py_ssize_t lines = out->n;
    int irregular = 0;
    NamesObject *tables[N_COUNT];
    for (int r = 0; r < N_COUNT; r++) tables[r] = (NamesObject *)PyTuple_GET_ITEM(self->tables, r);
    /* First the lines the scan left for the GIL are scanned again (and their names hashed).
     * Then, numbering, the table's slots and the bytes of the names PREFETCH lines on are
     * fetched from memory while this line's are looked up: the block was scanned on another
     * core, and a million new names each cost cache misses, now overlapped. A name the scan
     * found the same as the line before's takes its id without a lookup. */
    for (Py_ssize_t i = 0; i < lines; i++) {
        if (out->starts[i] < 0 || out->ends[i] < out->starts[i] || out->ends[i] > buf.len) {
            PyErr_SetString(PyExc_ValueError, "a line outside buf");
            goto done;
        }
        if (out->status[i] == S_GIL) {
            Py_ssize_t known = PyDict_GET_SIZE(self->mnames);
            int st = scan_line(base, base + out->starts[i], base + out->ends[i], sp, i, out);
            if (st == -2) goto done;
            if (st != S_OK && forget_metrics(sp, known) < 0) goto done;
            out->status[i] = (uint8_t)st;
        }
        if (out->status[i] != S_OK) continue;
        for (int r = 0; r < N_COUNT; r++) {
            Py_ssize_t j = i * N_COUNT + r;
            int64_t off = out->noff[j], len = out->nlen[j];
            if (out->nkind[j] == K_STRING && (off < 0 || len < 0 || off > buf.len - len)) {
                PyErr_SetString(PyExc_ValueError, "a string outside buf");
                goto done;
            }
        }
    }
    Py_ssize_t last[N_COUNT], lastrow[N_COUNT]; /* the last id given, and the line it was given to */
    for (int r = 0; r < N_COUNT; r++) last[r] = lastrow[r] = -1;
    for (Py_ssize_t i = 0; i < lines; i++) {
        Py_ssize_t a = i + PREFETCH;
        if (a < lines && out->status[a] == S_OK) {
            for (int r = 0; r < N_COUNT; r++) {
                Py_ssize_t j = a * N_COUNT + r;
                Py_hash_t h = out->nhash[j];
                if (h == -1 || out->nkind[j] != K_STRING) continue;
                __builtin_prefetch(base + out->noff[j]);
                if (tables[r]->cap) __builtin_prefetch(names_probe(tables[r], h));
            }
        }
        int32_t *sids = out->sids + i * N_COUNT;
        for (int r = 0; r < N_COUNT; r++) sids[r] = -1;
        if (out->status[i] != S_OK) continue;
        for (int r = 0; r < N_COUNT; r++) {
            Py_ssize_t j = i * N_COUNT + r;
            Py_ssize_t id;
            if (out->nkind[j] == K_INT) { /* a task id that is a number: its text, as str(int) */
                char text[24];
                int len = snprintf(text, sizeof text, "%lld", (long long)out->noff[j]);
                id = names_id(tables[r], text, len);
            } else if (out->nkind[j] != K_STRING) {
                continue;
            } else if (out->nhash[j] == -1 && lastrow[r] == i - 1) { /* the line before's name */
                id = last[r];
            } else {
                int64_t off = out->noff[j], len = out->nlen[j];
                Py_hash_t h = out->nhash[j] == -1 ? hash_bytes(base + off, (Py_ssize_t)len) : out->nhash[j];
                id = names_id_hashed(tables[r], (const char *)base + off, (Py_ssize_t)len, h);
            }
            if (id < 0) {
                if (!PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) goto done;
                PyErr_Clear();
                for (int m = 0; m < N_COUNT; m++) sids[m] = -1;
                out->status[i] = S_DEFER;
                irregular = 1; /* a name numbered before for this line stays in its table */
                break;
            }
            sids[r] = (int32_t)id;
            last[r] = id;
            lastrow[r] = i;
        }
    }
    result = Py_NewRef(irregular ? Py_True : Py_False);
done:
    sp->gil = 0;
    PyBuffer_Release(&buf);
    return result;
}

static PyObject *scanner_get_tables(ScannerObject *self, void *closure) { return Py_NewRef(self->tables); }
static PyObject *scanner_get_mnames(ScannerObject *self, void *closure) { return Py_NewRef(self->mnames); }
static PyObject *scanner_get_keys(ScannerObject *self, void *closure) { return Py_NewRef(self->keys); }
static PyObject *scanner_get_rows(ScannerObject *self, void *closure) { return PyLong_FromSsize_t(self->rows); }

static PyMethodDef scanner_methods[] = {
    {"scan", (PyCFunction)(void (*)(void))scanner_scan, METH_VARARGS | METH_KEYWORDS, scanner_scan_doc},
    {"number", (PyCFunction)scanner_number, METH_VARARGS, scanner_number_doc},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef scanner_getset[] = {
    {"tables", (getter)scanner_get_tables, NULL, "The run, task and group names (a Names each).", NULL},
    {"metric_names", (getter)scanner_get_mnames, NULL, "Metric name -> its column in a part's mvals.", NULL},
    {"keys", (getter)scanner_get_keys, NULL, "The keys read, as given.", NULL},
    {"rows", (getter)scanner_get_rows, NULL, "Lines a new part holds.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject ScannerType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "flaketui._linescan.Scanner",
    .tp_basicsize = sizeof(ScannerObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "Scanner(keys, roles, threshold, codes, rows=16384, columns=16)\n--\n\n"
              "Scans blocks of JSON Lines for one field map. keys: the JSON names read (bytes);\n"
              "roles: {'run', 'task', 'trial', 'passed', 'score', 'group', 'trace', 'error',\n"
              "'defer', 'metrics'} -> the positions of each role's keys, in order of precedence;\n"
              "threshold: the score that passes; codes: the pass, fail and errored outcomes' codes;\n"
              "rows: lines a part holds; columns: metric names kept (a line with more is deferred).",
    .tp_new = scanner_new,
    .tp_dealloc = gc_dealloc,
    .tp_traverse = (traverseproc)scanner_traverse,
    .tp_clear = (inquiry)scanner_clear,
    .tp_methods = scanner_methods,
    .tp_getset = scanner_getset,
};

/* ---- the module --------------------------------------------------------------------- */

/* An IntEnum named ``name`` of ``n`` (member, value) pairs, added to module m. */
static int add_enum(PyObject *m, PyObject *intenum, const char *name, const char *const *members, int n) {
    PyObject *pairs = PyList_New(n);
    if (pairs == NULL) return -1;
    for (int i = 0; i < n; i++) {
        PyObject *pair = Py_BuildValue("(si)", members[i], i);
        if (pair == NULL) {
            Py_DECREF(pairs);
            return -1;
        }
        PyList_SET_ITEM(pairs, i, pair);
    }
    PyObject *e = PyObject_CallFunction(intenum, "sO", name, pairs);
    Py_DECREF(pairs);
    if (e == NULL) return -1;
    PyObject *modname = PyUnicode_FromString("flaketui._linescan");
    int bad = modname == NULL || PyObject_SetAttrString(e, "__module__", modname) < 0;
    Py_XDECREF(modname);
    if (bad || PyModule_AddObjectRef(m, name, e) < 0) {
        Py_DECREF(e);
        return -1;
    }
    Py_DECREF(e);
    return 0;
}

static const char *const STATUS_NAMES[] = {[S_OK] = "OK", [S_DEFER] = "DEFER", [S_GIL] = "GIL", [S_BAD] = "BAD"};
static const char *const KIND_NAMES[] = {
    [K_ABSENT] = "ABSENT", [K_NULL] = "NULL", [K_FALSE] = "FALSE", [K_TRUE] = "TRUE", [K_INT] = "INT",
    [K_FLOAT] = "FLOAT", [K_STRING] = "STRING", [K_ARRAY] = "ARRAY", [K_OBJECT] = "OBJECT", [K_OTHER] = "OTHER",
};

/* The hash's key, from os.urandom (the module is imported with the GIL). */
static int seed_hash(void) {
    PyObject *os = PyImport_ImportModule("os");
    if (os == NULL) return -1;
    PyObject *key = PyObject_CallMethod(os, "urandom", "i", 16);
    Py_DECREF(os);
    if (key == NULL) return -1;
    if (!PyBytes_Check(key) || PyBytes_GET_SIZE(key) != 16) {
        Py_DECREF(key);
        PyErr_SetString(PyExc_RuntimeError, "os.urandom gave no key");
        return -1;
    }
    memcpy(&sip_k0, PyBytes_AS_STRING(key), 8);
    memcpy(&sip_k1, PyBytes_AS_STRING(key) + 8, 8);
    Py_DECREF(key);
    return 0;
}

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_linescan",
    "The C scanner of JSON Lines (driven by flaketui/loading/scan.py): Scanner, its Part, Names, and\n"
    "the Status and Kind enums.", -1, NULL, NULL, NULL, NULL, NULL,
};

/* ROLES: the role names a Scanner reads, so a module built before a role was added is known
 * (the caller then reads line by line rather than take lines the role should defer). */
static int add_roles(PyObject *m) {
    PyObject *roles = PyTuple_New(R_COUNT + 1);
    if (roles == NULL) return -1;
    for (int r = 0; r <= R_COUNT; r++) {
        PyObject *name = PyUnicode_FromString(r < R_COUNT ? ROLE_NAMES[r] : "metrics");
        if (name == NULL) {
            Py_DECREF(roles);
            return -1;
        }
        PyTuple_SET_ITEM(roles, r, name);
    }
    int rc = PyModule_AddObjectRef(m, "ROLES", roles);
    Py_DECREF(roles);
    return rc;
}

PyMODINIT_FUNC PyInit__linescan(void) {
#ifdef HAVE_STRTOD_L
    if (c_locale == (locale_t)0) {
        c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0);
        if (c_locale == (locale_t)0) return PyErr_NoMemory();
    }
#endif
    if (seed_hash() < 0) return NULL;
    if (PyType_Ready(&NamesType) < 0 || PyType_Ready(&PartType) < 0 || PyType_Ready(&ScannerType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    PyObject *enum_mod = PyImport_ImportModule("enum");
    PyObject *intenum = enum_mod ? PyObject_GetAttrString(enum_mod, "IntEnum") : NULL;
    Py_XDECREF(enum_mod);
    if (intenum == NULL || PyModule_AddObjectRef(m, "Names", (PyObject *)&NamesType) < 0 ||
        PyModule_AddObjectRef(m, "Part", (PyObject *)&PartType) < 0 ||
        PyModule_AddObjectRef(m, "Scanner", (PyObject *)&ScannerType) < 0 ||
        add_enum(m, intenum, "Status", STATUS_NAMES, 4) < 0 || add_enum(m, intenum, "Kind", KIND_NAMES, 10) < 0 ||
        PyModule_AddIntConstant(m, "MAX_KEYS", MAX_KEYS) < 0 || add_roles(m) < 0) {
        Py_XDECREF(intenum);
        Py_DECREF(m);
        return NULL;
    }
    Py_DECREF(intenum);
    return m;
}
