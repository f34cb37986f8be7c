/* The batch line parser's C scanner: a block of JSON Lines in one call.
 *
 * flaketui/loading/batch.py calls scan_block() on a block of a plain JSONL file. For each
 * line it validates the whole line as one JSON object (strict RFC 8259 grammar, nesting
 * at most MAX_DEPTH deep) and describes the top-level values of a few keys: their kind,
 * and their number or string. It never decides what a trial is: the Python side applies
 * the typed tier's rules to these columns, and every line the scanner is not sure of is
 * marked DEFER and read by the per-line parser (msgspec, then orjson), which names the
 * problem. So the scanner only has to be *conservative*: a line it accepts must be a line
 * msgspec's typed decoder accepts, with the same values. It defers:
 *
 *   - anything that is not valid JSON, or not an object, or nested deeper than MAX_DEPTH;
 *   - a key with an escape (it might spell one of the keys asked for);
 *   - a key asked for that appears twice;
 *   - a string asked for that has an escape; a \u escape that is a surrogate, anywhere;
 *   - an integer of more than 18 digits, or a float that is not finite or too long to
 *     convert, where its value is asked for; an exponent of more than 4 digits anywhere;
 *   - a metrics object with a value that is not a number, or a key with an escape, or more
 *     distinct names than the caller's columns.
 *
 * Bytes from 0x80 up are taken as they are inside strings: the caller checks that a block
 * is valid UTF-8 (or sends its bad lines to the per-line parser) before scanning it.
 * Every read is bounds-checked against the end of its line.
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

#if defined(__GLIBC__) || defined(__APPLE__)
#ifdef __APPLE__
#include <xlocale.h>
#endif
#define HAVE_STRTOD_L
static locale_t c_locale; /* numbers are read in the C locale, whatever the process's is */
#endif

#define MAX_DEPTH 64
#define TRACE_SHORT 64 /* fastpath._trace_stand_in calls a list empty only below this many bytes */
#define MAX_KEYS 64

enum { K_ABSENT = 0, K_NULL, K_FALSE, K_TRUE, K_INT, K_FLOAT, K_STRING, K_ARRAY, K_OBJECT, K_OTHER };
enum { S_OK = 0, S_DEFER = 1, S_GIL = 2, S_BAD = 3 };
/* S_GIL: to scan again with the GIL; S_BAD: certainly not JSON (a syntax error msgspec names
 * "malformed" too), where S_DEFER may be any line the scanner does not take */

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
                if (c->p >= c->end || *c->p != '"' || scan_string(c, &s, &len, &esc) < 0) return -1;
                skip_ws(c);
                if (c->p >= c->end || *c->p != ':') return -1;
                c->p++;
                skip_ws(c);
            }
            if (skip_value(c, depth + 1, NULL) < 0) return -1;
            skip_ws(c);
            if (c->p >= c->end) return -1;
            if (*c->p == ',') {
                c->p++;
                skip_ws(c);
                continue;
            }
            if (*c->p == close) {
                c->p++;
                return ch == '{' ? K_OBJECT : K_ARRAY;
            }
            return -1;
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

enum { R_RUN, R_TASK, R_TRIAL, R_PASSED, R_SCORE, R_GROUP, R_TRACE, R_ERROR, R_COUNT };
/* The roles, in the order of the rules tuple; the trial's names are read from AT_RUN.. */
enum { AT_RUN, AT_TASK, AT_GROUP, AT_COUNT };

typedef struct {
    Py_ssize_t nkeys;
    const char *key[MAX_KEYS];
    Py_ssize_t keylen[MAX_KEYS];
    int want[MAX_KEYS];         /* a string key whose value is numbered (run, task, group) */
    PyObject *table[MAX_KEYS];  /* its Names (number_block only) */
    Py_ssize_t metrics;         /* the position of the metrics key, or -1 */
    PyObject *mnames;           /* dict: metric name (str) -> column */
    Py_ssize_t mcap;            /* columns of mvals, at most MAX_KEYS */
    Py_ssize_t nknown;          /* the metric names known, as UTF-8 (kept by mnames' strs) */
    const char *known[MAX_KEYS];
    Py_ssize_t knownlen[MAX_KEYS];
    int gil;                    /* whether the GIL is held: then new metric names are learnt */
    /* the typed tier's rules (rules, see judge_line): the kinds each key takes, each role's keys */
    uint16_t allowed[MAX_KEYS];
    int role[R_COUNT][MAX_KEYS];
    int nrole[R_COUNT];
    double threshold;
    int8_t pass_code, fail_code, errored_code;
} spec;

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
        if (c->p >= c->end || *c->p != '"' || scan_string(c, &s, &len, &esc) < 0 || esc) return -1;
        skip_ws(c);
        if (c->p >= c->end || *c->p != ':') return -1;
        c->p++;
        skip_ws(c);
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
        skip_ws(c);
        if (c->p >= c->end) return -1;
        if (*c->p == ',') {
            c->p++;
            skip_ws(c);
            continue;
        }
        if (*c->p == '}') {
            c->p++;
            return 0;
        }
        return -1;
    }
}

/* ---- Names: strings numbered in the order first seen ------------------------------- */

/* A hash table of the names of one role (runs, tasks or groups): each distinct string gets
 * the next id, and the str is made once. The hash is CPython's own (SipHash, seeded per
 * process), so a log cannot be crafted to make every name collide. */
typedef struct {
    PyObject_HEAD
    PyObject *list;       /* the names as str, by id */
    Py_ssize_t count;     /* names */
    Py_ssize_t cap;       /* slots, a power of two, at least twice count */
    uint64_t *slots;      /* the hash's high half << 32 | id + 1, or 0 (empty): a probe reads only these */
    Py_hash_t *hashes;    /* by id (to place the names again when the slots grow) */
    Py_ssize_t idcap;     /* room in hashes */
} NamesObject;

static Py_hash_t hash_bytes(const void *s, Py_ssize_t len) {
#if PY_VERSION_HEX >= 0x030E0000
    return Py_HashBuffer(s, len);
#else
    return _Py_HashBytes(s, len);
#endif
}

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

static void names_dealloc(NamesObject *self) {
    PyObject_GC_UnTrack(self);
    Py_CLEAR(self->list);
    PyMem_Free(self->slots);
    PyMem_Free(self->hashes);
    Py_TYPE(self)->tp_free((PyObject *)self);
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
    .tp_methods = names_methods,
    .tp_getset = names_getset,
    .tp_as_sequence = &names_as_sequence,
};

/* ---- the block scanner ------------------------------------------------------------- */

enum { B_STARTS, B_ENDS, B_STATUS, B_KINDS, B_INTS, B_FLOATS, B_SOFFS, B_SIDS, B_HASHES, B_MVALS, B_TRIAL,
       B_OUTCOME, B_SCORE, B_TRACE, B_AT, B_COUNT };

typedef struct {
    Py_buffer views[B_COUNT];
    int got;           /* views held */
    Py_ssize_t rows;   /* lines the buffers have room for */
    int64_t *starts, *ends;
    uint8_t *status;   /* [n] */
    uint8_t *kinds;    /* [n][nkeys] */
    int64_t *ints;     /* [n][nkeys]: an integer's value; a string's, array's or object's byte length */
    double *floats;    /* [n][nkeys]: a number's value; 1 for an array or object with items */
    int64_t *soffs;    /* [n][nkeys]: where a string's bytes start in buf */
    int32_t *sids;     /* [n][nkeys]: a string's id in its key's Names, or -1 */
    int64_t *hashes;   /* [n][nkeys]: a numbered string's hash (hash_bytes), found by the scan while
                        * its bytes are at hand; -1 (no hash is): none, or the bytes of the line
                        * before's value of the key (numbered the same, without a lookup) */
    double *mvals;     /* [n][mcap] */
    int64_t *trial;    /* [n]: a trial taken's number (-1: none) */
    int8_t *outcome;   /* [n]: its outcome */
    double *score;     /* [n]: its score (NaN: none) */
    int8_t *trace;     /* [n]: whether its trace is a list with steps */
    int8_t *at;        /* [n][AT_COUNT]: the key its run, task and group are read from (-1: none) */
} outputs;

static void release_outputs(outputs *out) {
    while (out->got > 0) PyBuffer_Release(&out->views[--out->got]);
}

/* The buffers of tuple outs (starts, ends, status, kinds, ints, floats, soffs, sids, hashes,
 * mvals, trial, outcome, score, trace, at). */
static int get_outputs(PyObject *outs, Py_ssize_t K, outputs *out, Py_ssize_t *mcap) {
    static const char *what[B_COUNT] = {"starts", "ends", "status", "kinds", "ints", "floats", "soffs", "sids",
                                        "hashes", "mvals", "trial", "outcome", "score", "trace", "at"};
    static const int width[B_COUNT] = {8, 8, 1, 1, 8, 8, 8, 4, 8, 8, 8, 1, 8, 1, AT_COUNT};
    out->got = 0;
    if (!PyTuple_Check(outs) || PyTuple_GET_SIZE(outs) != B_COUNT) {
        PyErr_SetString(PyExc_TypeError, "outs must be a tuple of fifteen buffers");
        return -1;
    }
    for (; out->got < B_COUNT; out->got++) {
        Py_buffer *v = &out->views[out->got];
        if (PyObject_GetBuffer(PyTuple_GET_ITEM(outs, out->got), v, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0) {
            release_outputs(out);
            return -1;
        }
    }
    Py_ssize_t rows = out->views[B_STATUS].len;
    for (int i = 0; i < B_COUNT; i++) {
        Py_ssize_t need = rows * width[i] * (i >= B_KINDS && i <= B_HASHES ? K : 1);
        if (out->views[i].len < need) {
            PyErr_Format(PyExc_ValueError, "%s is too small", what[i]);
            release_outputs(out);
            return -1;
        }
    }
    *mcap = rows ? out->views[B_MVALS].len / 8 / rows : 1;
    out->rows = rows;
    out->starts = out->views[B_STARTS].buf;
    out->ends = out->views[B_ENDS].buf;
    out->status = out->views[B_STATUS].buf;
    out->kinds = out->views[B_KINDS].buf;
    out->ints = out->views[B_INTS].buf;
    out->floats = out->views[B_FLOATS].buf;
    out->soffs = out->views[B_SOFFS].buf;
    out->sids = out->views[B_SIDS].buf;
    out->hashes = out->views[B_HASHES].buf;
    out->mvals = out->views[B_MVALS].buf;
    out->trial = out->views[B_TRIAL].buf;
    out->outcome = out->views[B_OUTCOME].buf;
    out->score = out->views[B_SCORE].buf;
    out->trace = out->views[B_TRACE].buf;
    out->at = out->views[B_AT].buf;
    return 0;
}

/* One line [a, b) of buf (at base) into row ``row``: S_OK, S_DEFER, S_GIL, or -2 (a Python
 * error; only with the GIL). */
static int read_line(const unsigned char *base, const unsigned char *a, const unsigned char *b, spec *sp,
                     Py_ssize_t row, outputs *out) {
    Py_ssize_t K = sp->nkeys;
    uint8_t *kinds = out->kinds + row * K;
    int64_t *ints = out->ints + row * K;
    double *floats = out->floats + row * K;
    int64_t *soffs = out->soffs + row * K;
    double *mrow = out->mvals + row * sp->mcap;
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
            if (c.p >= c.end || *c.p != '"' || scan_string(&c, &s, &len, &esc) < 0 || esc) return S_DEFER;
            Py_ssize_t k = -1;
            for (Py_ssize_t i = 0; i < K; i++) {
                if (sp->keylen[i] == len && same_bytes(sp->key[i], s, (size_t)len)) {
                    k = i;
                    break;
                }
            }
            skip_ws(&c);
            if (c.p >= c.end || *c.p != ':') return S_DEFER;
            c.p++;
            skip_ws(&c);
            if (c.p >= c.end) return S_DEFER;
            if (k < 0) {
                if (skip_value(&c, 1, NULL) < 0) return S_DEFER;
            } else {
                if (kinds[k] != K_ABSENT) return S_DEFER; /* a key asked for, twice */
                const unsigned char *v = c.p;
                int kind;
                if (k == sp->metrics && *v == '{') {
                    int r = scan_metrics(&c, sp, mrow);
                    if (r == -2) return -2;
                    if (r == -3) return S_GIL;
                    if (r < 0) return S_DEFER;
                    kind = K_OBJECT;
                } else if (*v == '"') {
                    const unsigned char *sb;
                    Py_ssize_t slen;
                    int e;
                    if (scan_string(&c, &sb, &slen, &e) < 0) return S_DEFER;
                    if (e && sp->want[k]) return S_DEFER;
                    kind = K_STRING;
                    ints[k] = slen;
                    soffs[k] = sb - base;
                } else {
                    int empty = 0;
                    kind = skip_value(&c, 1, &empty);
                    if (kind < 0) return S_DEFER;
                    if (kind == K_INT || kind == K_FLOAT) {
                        const unsigned char *q = v + (*v == '-');
                        const unsigned char *d = q;
                        while (d < c.p && *d >= '0' && *d <= '9') d++;
                        if (kind == K_INT && d - q <= 18) {
                            ints[k] = to_int(v, c.p);
                            floats[k] = (double)ints[k];
                        } else {
                            int r = to_double(v, c.p, &floats[k], sp->gil);
                            if (r == -3) return S_GIL;
                            if (r < 0) return S_DEFER;
                            if (kind == K_INT) kind = K_OTHER; /* too long for an int64: per line */
                        }
                    } else if (kind == K_ARRAY || kind == K_OBJECT) {
                        ints[k] = c.p - v;
                        floats[k] = empty ? 0.0 : 1.0;
                    }
                }
                kinds[k] = (uint8_t)kind;
            }
            skip_ws(&c);
            if (c.p >= c.end) return S_DEFER;
            if (*c.p == ',') {
                c.p++;
                skip_ws(&c);
                continue;
            }
            if (*c.p == '}') {
                c.p++;
                break;
            }
            return S_DEFER;
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

/* The typed tier's rules (fastpath.typed_adder) on a line read_line took: S_OK with the
 * trial's values in ``row`` of the verdict outputs, or S_DEFER where the rules would hand
 * the line to the general ones (they then keep it or name its problem). */
static int judge_line(const spec *sp, Py_ssize_t row, outputs *out) {
    Py_ssize_t K = sp->nkeys;
    const uint8_t *kinds = out->kinds + row * K;
    const int64_t *ints = out->ints + row * K;
    const double *floats = out->floats + row * K;
    for (Py_ssize_t k = 0; k < K; k++) /* a kind the typed struct does not take: msgspec declines */
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
    out->trace[row] = trace >= 0 && (ints[trace] >= TRACE_SHORT || floats[trace] != 0);
    int8_t *at = out->at + row * AT_COUNT;
    at[AT_RUN] = (int8_t)run;
    at[AT_TASK] = (int8_t)task;
    at[AT_GROUP] = (int8_t)group;
    return S_OK;
}

/* read_line, and a line it does not take told apart: S_BAD when it is certainly not JSON (so
 * the caller may count it as such once it names no more lines), else S_DEFER. */
/* The hashes of a line taken's numbered strings (out->hashes). */
static void hash_names(const unsigned char *base, const spec *sp, Py_ssize_t row, outputs *out) {
    Py_ssize_t K = sp->nkeys;
    const uint8_t *kinds = out->kinds + row * K;
    const int64_t *ints = out->ints + row * K, *soffs = out->soffs + row * K;
    int64_t *hs = out->hashes + row * K;
    int before = row > 0 && out->status[row - 1] == S_OK;
    for (Py_ssize_t k = 0; k < K; k++) {
        hs[k] = -1;
        if (!sp->want[k] || kinds[k] != K_STRING) continue;
        int64_t len = ints[k];
        if (before && kinds[k - K] == K_STRING && ints[k - K] == len &&
            same_bytes(base + soffs[k - K], base + soffs[k], (size_t)len))
            continue;
        hs[k] = hash_bytes(base + soffs[k], (Py_ssize_t)len);
    }
}

static int scan_line(const unsigned char *base, const unsigned char *a, const unsigned char *b, spec *sp,
                     Py_ssize_t row, outputs *out) {
    int st = read_line(base, a, b, sp, row, out);
    if (st == S_OK) {
        st = judge_line(sp, row, out);
        if (st == S_OK) hash_names(base, sp, row, out);
        return st;
    }
    if (st != S_DEFER) return st;
    cursor c = {a, b, 0};
    skip_ws(&c);
    if (c.p >= c.end) return S_DEFER; /* blank: the per-line parser says nothing of it */
    if (skip_value(&c, 0, NULL) < 0) return c.unsure ? S_DEFER : S_BAD;
    skip_ws(&c);
    return c.p == c.end ? S_DEFER : S_BAD; /* valid JSON that is not a trial, or something after it */
}

/* rules = (allowed, run, task, trial, passed, score, group, trace, error, threshold, pass, fail,
 * errored): per key a bit mask of the kinds it takes, each role's key positions (tuples of
 * ints), the score that passes, the outcome codes. */
static int parse_rules(PyObject *rules, spec *sp) {
    if (!PyTuple_Check(rules) || PyTuple_GET_SIZE(rules) != 2 + R_COUNT + 3) {
        PyErr_SetString(PyExc_TypeError, "rules must be a tuple of thirteen");
        return -1;
    }
    PyObject *allowed = PyTuple_GET_ITEM(rules, 0);
    if (!PyTuple_Check(allowed) || PyTuple_GET_SIZE(allowed) != sp->nkeys) {
        PyErr_SetString(PyExc_ValueError, "a kind mask per key");
        return -1;
    }
    for (Py_ssize_t k = 0; k < sp->nkeys; k++) {
        long m = PyLong_AsLong(PyTuple_GET_ITEM(allowed, k));
        if (m == -1 && PyErr_Occurred()) return -1;
        sp->allowed[k] = (uint16_t)m;
    }
    for (int r = 0; r < R_COUNT; r++) {
        PyObject *where = PyTuple_GET_ITEM(rules, 1 + r);
        if (!PyTuple_Check(where) || PyTuple_GET_SIZE(where) > MAX_KEYS) {
            PyErr_SetString(PyExc_ValueError, "a tuple of key positions per role");
            return -1;
        }
        sp->nrole[r] = (int)PyTuple_GET_SIZE(where);
        for (int j = 0; j < sp->nrole[r]; j++) {
            long k = PyLong_AsLong(PyTuple_GET_ITEM(where, j));
            if (k == -1 && PyErr_Occurred()) return -1;
            if (k < 0 || k >= sp->nkeys) {
                PyErr_SetString(PyExc_ValueError, "a role's key outside the keys");
                return -1;
            }
            sp->role[r][j] = (int)k;
        }
    }
    sp->threshold = PyFloat_AsDouble(PyTuple_GET_ITEM(rules, 1 + R_COUNT));
    if (sp->threshold == -1.0 && PyErr_Occurred()) return -1;
    long codes[3];
    for (int i = 0; i < 3; i++) {
        codes[i] = PyLong_AsLong(PyTuple_GET_ITEM(rules, 2 + R_COUNT + i));
        if (codes[i] == -1 && PyErr_Occurred()) return -1;
    }
    sp->pass_code = (int8_t)codes[0];
    sp->fail_code = (int8_t)codes[1];
    sp->errored_code = (int8_t)codes[2];
    return 0;
}

/* keys (a tuple of bytes), the string keys numbered (a tuple: Names, or True, or None per
 * key), the metrics key's position and the dict of metric names, for mcap columns. */
static int parse_spec(PyObject *keys, PyObject *tables, Py_ssize_t metrics, PyObject *mnames, Py_ssize_t mcap,
                      int gil, spec *sp) {
    if (!PyTuple_Check(keys) || !PyTuple_Check(tables) || PyTuple_GET_SIZE(keys) != PyTuple_GET_SIZE(tables)) {
        PyErr_SetString(PyExc_TypeError, "keys and tables must be tuples of one length");
        return -1;
    }
    sp->nkeys = PyTuple_GET_SIZE(keys);
    if (sp->nkeys > MAX_KEYS || sp->nkeys == 0) {
        PyErr_SetString(PyExc_ValueError, "between 1 and 64 keys");
        return -1;
    }
    for (Py_ssize_t i = 0; i < sp->nkeys; i++) {
        PyObject *k = PyTuple_GET_ITEM(keys, i), *t = PyTuple_GET_ITEM(tables, i);
        if (!PyBytes_Check(k)) {
            PyErr_SetString(PyExc_TypeError, "keys must be bytes");
            return -1;
        }
        sp->key[i] = PyBytes_AS_STRING(k);
        sp->keylen[i] = PyBytes_GET_SIZE(k);
        sp->want[i] = t != Py_None;
        sp->table[i] = PyObject_TypeCheck(t, &NamesType) ? t : NULL;
    }
    if (mcap < 1 || mcap > MAX_KEYS || metrics < -1 || metrics >= sp->nkeys || !PyDict_Check(mnames)) {
        PyErr_SetString(PyExc_ValueError, "bad metrics column, or between 1 and 64 columns of mvals");
        return -1;
    }
    sp->metrics = metrics;
    sp->mnames = mnames;
    sp->mcap = mcap;
    sp->gil = gil;
    sp->nknown = 0;
    PyObject *name, *col;
    Py_ssize_t at = 0;
    while (PyDict_Next(mnames, &at, &name, &col)) {
        Py_ssize_t j = PyLong_AsSsize_t(col);
        if (j == -1 && PyErr_Occurred()) return -1;
        if (!PyUnicode_Check(name) || j < 0 || j >= mcap) {
            PyErr_SetString(PyExc_ValueError, "mnames maps str to a column below the columns of mvals");
            return -1;
        }
        if (learn(sp, name, j) < 0) return -1;
    }
    return 0;
}

/* What scan_block and number_block both take: buf, the outputs and the spec (gil: whether the
 * GIL is held throughout). On failure everything taken is released and -1 returned. */
static int open_block(PyObject *bufobj, PyObject *keys, PyObject *tables, Py_ssize_t metrics, PyObject *mnames,
                      PyObject *outs, PyObject *rules, int gil, Py_buffer *buf, outputs *out, spec *sp) {
    Py_ssize_t mcap;
    if (PyObject_GetBuffer(bufobj, buf, PyBUF_SIMPLE) < 0) return -1;
    if (get_outputs(outs, PyTuple_Check(keys) ? PyTuple_GET_SIZE(keys) : 0, out, &mcap) < 0) {
        PyBuffer_Release(buf);
        return -1;
    }
    if (parse_spec(keys, tables, metrics, mnames, mcap, gil, sp) < 0 || parse_rules(rules, sp) < 0) {
        release_outputs(out);
        PyBuffer_Release(buf);
        return -1;
    }
    return 0;
}

PyDoc_STRVAR(scan_block_doc,
"scan_block(buf, start, stop, limit, keys, strings, metrics, mnames, outs, rules) -> (lines, ascii)\n"
"--\n\n"
"Scan the lines of buf[start:stop] (start starts a line; stop is just past a newline) that\n"
"start before limit, as many as the outputs have rows, without the GIL: how many, and\n"
"whether they are all ASCII (else the caller checks they are UTF-8).\n"
"outs = (starts, ends, status, kinds, ints, floats, soffs, sids, hashes, mvals, trial, outcome,\n"
"score, trace, at), C-contiguous:\n"
"row i describes line i. starts and ends (int64): its span in buf; status (uint8): 0 taken\n"
"(the typed tier's rules, given by rules, take it: trial (int64), outcome (int8), score\n"
"(float64), trace (int8) and at (int8 x 3: the keys of its run, task and group, -1: none)\n"
"are its values),\n"
"1 deferred (for the per-line parser), 2 to scan again with the GIL (number_block does),\n"
"3 deferred and certainly not JSON;\n"
"per key (rows of len(keys)): kinds (uint8), ints (int64), floats (float64), soffs (int64:\n"
"where a string's bytes start in buf), hashes (int64: a numbered string's hash, -1: none, or\n"
"the same bytes as the line before's); sids is number_block's. strings: per key, not None\n"
"for a key whose string value is numbered (an escape in it defers the line). metrics: the\n"
"metrics key's position (-1: none); its numbers go to mvals (float64 rows of as many\n"
"columns as fit, at most 64), NaN where absent, by the columns of mnames (a dict of str).");

static PyObject *scan_block(PyObject *self, PyObject *args) {
    PyObject *bufobj, *keys, *tables, *mnames, *outs, *rules;
    Py_ssize_t start, stop, limit, metrics;
    if (!PyArg_ParseTuple(args, "OnnnOOnOOO", &bufobj, &start, &stop, &limit, &keys, &tables, &metrics, &mnames,
                          &outs, &rules))
        return NULL;
    Py_buffer buf;
    outputs out;
    spec sp;
    if (open_block(bufobj, keys, tables, metrics, mnames, outs, rules, 0, &buf, &out, &sp) < 0) return NULL;
    if (start < 0 || stop < start || stop > buf.len || limit < 0) {
        PyErr_SetString(PyExc_ValueError, "start, stop or limit out of range");
        release_outputs(&out);
        PyBuffer_Release(&buf);
        return NULL;
    }
    const unsigned char *base = (const unsigned char *)buf.buf;
    Py_ssize_t n = 0, pos = start;
    int ascii = 1; /* whether the lines scanned are ASCII, so valid UTF-8 */
    Py_BEGIN_ALLOW_THREADS
    while (pos < stop && pos < limit && n < out.rows) {
        const unsigned char *nl = memchr(base + pos, '\n', (size_t)(stop - pos));
        if (nl == NULL) break;
        Py_ssize_t e = nl - base;
        out.starts[n] = pos;
        out.ends[n] = e;
        out.status[n] = (uint8_t)scan_line(base, base + pos, base + e, &sp, n, &out);
        n++;
        pos = e + 1;
    }
    if (n) {
        const unsigned char *p = base + start, *e = base + pos;
        uint64_t any = 0;
        for (; e - p >= 8; p += 8) {
            uint64_t x;
            memcpy(&x, p, 8);
            any |= x;
        }
        for (; p < e; p++) any |= *p;
        ascii = (any & HIGHS) == 0;
    }
    Py_END_ALLOW_THREADS
    release_outputs(&out);
    PyBuffer_Release(&buf);
    return Py_BuildValue("nO", n, ascii ? Py_True : Py_False);
}

PyDoc_STRVAR(number_block_doc,
"number_block(buf, lines, keys, tables, metrics, mnames, outs, rules) -> irregular\n"
"--\n\n"
"With the GIL, after scan_block on the same buf and outs: scan again the lines of status 2\n"
"(new metric names are added to mnames), then give each string value of the lines taken\n"
"its id in tables[key] (a Names per key numbered, else None) in sids (-1 where a numbered\n"
"key has no string; the other keys' sids are left as they are). A\n"
"value that is not UTF-8 defers its line. Returns whether a name may have been numbered\n"
"for a line then deferred (the caller then renumbers by first use).");

#define PREFETCH 16 /* lines */

static PyObject *number_block(PyObject *self, PyObject *args) {
    PyObject *bufobj, *keys, *tables, *mnames, *outs, *rules;
    Py_ssize_t lines, metrics;
    if (!PyArg_ParseTuple(args, "OnOOnOOO", &bufobj, &lines, &keys, &tables, &metrics, &mnames, &outs, &rules))
        return NULL;
    Py_buffer buf;
    outputs out;
    spec sp;
    PyObject *result = NULL;
    if (open_block(bufobj, keys, tables, metrics, mnames, outs, rules, 1, &buf, &out, &sp) < 0) return NULL;
    if (lines < 0 || lines > out.rows) {
        PyErr_SetString(PyExc_ValueError, "more lines than rows");
        goto done;
    }
    const unsigned char *base = (const unsigned char *)buf.buf;
    Py_ssize_t K = sp.nkeys;
    Py_ssize_t last[MAX_KEYS]; /* the last id given */
    int irregular = 0;
    Py_ssize_t named[MAX_KEYS], nnamed = 0; /* the keys whose strings are numbered */
    for (Py_ssize_t k = 0; k < K; k++) {
        last[k] = -1;
        if (sp.table[k]) named[nnamed++] = k;
    }
    /* First the lines the scan left for the GIL are scanned again (and their names hashed).
     * Then, numbering, the table's slots and the bytes of the names PREFETCH lines on are
     * fetched from memory while this line's are looked up: the block was scanned on another
     * core, and a million new names each cost cache misses, now overlapped. A name the scan
     * found the same as the line before's takes its id without a lookup. */
    for (Py_ssize_t i = 0; i < lines; i++) {
        if (out.starts[i] < 0 || out.ends[i] < out.starts[i] || out.ends[i] > buf.len) {
            PyErr_SetString(PyExc_ValueError, "a line outside buf");
            goto done;
        }
        if (out.status[i] == S_GIL) {
            int st = scan_line(base, base + out.starts[i], base + out.ends[i], &sp, i, &out);
            if (st == -2) goto done;
            out.status[i] = (uint8_t)st;
        }
        if (out.status[i] != S_OK) continue;
        for (Py_ssize_t j = 0; j < nnamed; j++) {
            Py_ssize_t k = named[j];
            int64_t off = out.soffs[i * K + k], len = out.ints[i * K + k];
            if (out.kinds[i * K + k] == K_STRING && (off < 0 || len < 0 || off + len > buf.len)) {
                PyErr_SetString(PyExc_ValueError, "a string outside buf");
                goto done;
            }
        }
    }
    Py_ssize_t lastrow[MAX_KEYS]; /* the line last[k] was given to */
    for (Py_ssize_t k = 0; k < K; k++) lastrow[k] = -1;
    for (Py_ssize_t i = 0; i < lines; i++) {
        Py_ssize_t a = i + PREFETCH;
        if (a < lines && out.status[a] == S_OK) {
            for (Py_ssize_t j = 0; j < nnamed; j++) {
                Py_ssize_t k = named[j];
                Py_hash_t h = out.hashes[a * K + k];
                const NamesObject *table = (const NamesObject *)sp.table[k];
                if (h == -1 || out.kinds[a * K + k] != K_STRING) continue;
                __builtin_prefetch(base + out.soffs[a * K + k]);
                if (table->cap) __builtin_prefetch(names_probe(table, h));
            }
        }
        int32_t *sids = out.sids + i * K;
        for (Py_ssize_t j = 0; j < nnamed; j++) sids[named[j]] = -1;
        if (out.status[i] != S_OK) continue;
        const uint8_t *kinds = out.kinds + i * K;
        const int64_t *ints = out.ints + i * K, *soffs = out.soffs + i * K, *hs = out.hashes + i * K;
        for (Py_ssize_t j = 0; j < nnamed; j++) {
            Py_ssize_t k = named[j];
            if (kinds[k] != K_STRING) continue;
            Py_hash_t h = hs[k];
            if (h == -1 && lastrow[k] == i - 1) { /* the line before's name, numbered */
                sids[k] = (int32_t)last[k];
                lastrow[k] = i;
                continue;
            }
            int64_t off = soffs[k], len = ints[k];
            if (h == -1) h = hash_bytes(base + off, (Py_ssize_t)len);
            Py_ssize_t id = names_id_hashed((NamesObject *)sp.table[k], (const char *)base + off, (Py_ssize_t)len, h);
            if (id < 0) {
                if (!PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) goto done;
                PyErr_Clear();
                for (Py_ssize_t m = 0; m < nnamed; m++) sids[named[m]] = -1;
                out.status[i] = S_DEFER;
                irregular = 1; /* a name numbered before for this line stays in its table */
                break;
            }
            sids[k] = (int32_t)id;
            last[k] = id;
            lastrow[k] = i;
        }
    }
    result = Py_NewRef(irregular ? Py_True : Py_False);
done:
    release_outputs(&out);
    PyBuffer_Release(&buf);
    return result;
}

static PyMethodDef methods[] = {
    {"scan_block", scan_block, METH_VARARGS, scan_block_doc},
    {"number_block", number_block, METH_VARARGS, number_block_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_linescan",
    "The batch line parser's C scanner (see flaketui/loading/batch.py).", -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__linescan(void) {
#ifdef HAVE_STRTOD_L
    if (c_locale == (locale_t)0) {
        c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0);
        if (c_locale == (locale_t)0) return PyErr_NoMemory();
    }
#endif
    if (PyType_Ready(&NamesType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    if (PyModule_AddObjectRef(m, "Names", (PyObject *)&NamesType) < 0 ||
        PyModule_AddIntConstant(m, "ABSENT", K_ABSENT) < 0 || PyModule_AddIntConstant(m, "NULL", K_NULL) < 0 ||
        PyModule_AddIntConstant(m, "FALSE", K_FALSE) < 0 || PyModule_AddIntConstant(m, "TRUE", K_TRUE) < 0 ||
        PyModule_AddIntConstant(m, "INT", K_INT) < 0 || PyModule_AddIntConstant(m, "FLOAT", K_FLOAT) < 0 ||
        PyModule_AddIntConstant(m, "STRING", K_STRING) < 0 || PyModule_AddIntConstant(m, "ARRAY", K_ARRAY) < 0 ||
        PyModule_AddIntConstant(m, "OBJECT", K_OBJECT) < 0 || PyModule_AddIntConstant(m, "OTHER", K_OTHER) < 0 ||
        PyModule_AddIntConstant(m, "MAX_KEYS", MAX_KEYS) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
