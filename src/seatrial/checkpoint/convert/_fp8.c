/* The converter's per-element loops, compiled: numpy needs several passes (and an 8-byte index
 * per element for a 16-bit table lookup) where one pass over the data is enough.
 *
 * Every function takes buffers (numpy arrays, mmap views), checks their sizes, and releases the GIL
 * while it runs, so several threads can work on different blocks at once. The numpy code in scale.py
 * and fidelity.py defines the results; the tests check that both give the same ones.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

/* The scan's loop is also built for AVX-512 and AVX2; the loader picks the best this CPU runs. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define CLONES __attribute__((target_clones("arch=skylake-avx512", "avx2", "default")))
#else
#define CLONES
#endif

static inline __attribute__((always_inline)) uint16_t load16(const unsigned char *p) {
    uint16_t v;
    memcpy(&v, p, sizeof v); /* the source may sit at any byte offset of a mapped file */
    return v;
}

/* Eight codes at a time: eight lookups packed into one 64-bit store. A code c is NaN when its low
 * seven bits are all set; adding 1 to (c & 0x7F) then carries into bit 7 of that byte. */
static uint64_t lut8(const uint8_t *table, const unsigned char *s, uint8_t *d) {
    uint64_t lo, hi;
    memcpy(&lo, s, 8);
    memcpy(&hi, s + 8, 8);
    uint64_t out = 0;
    for (int k = 0; k < 4; k++) {
        out |= (uint64_t)table[(lo >> (16 * k)) & 0xFFFF] << (8 * k);
        out |= (uint64_t)table[(hi >> (16 * k)) & 0xFFFF] << (8 * (k + 4));
    }
    memcpy(d, &out, 8);
    return ((out & 0x7F7F7F7F7F7F7F7FULL) + 0x0101010101010101ULL) & 0x8080808080808080ULL;
}

CLONES static uint16_t max_span(const unsigned char *s, Py_ssize_t n) {
    uint16_t top = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        uint16_t m = load16(s + 2 * i) & 0x7FFF;
        top = m > top ? m : top;
    }
    return top;
}

/* max_magnitude16(src) -> int: the largest 15-bit magnitude pattern (x & 0x7FFF) of 16-bit floats.
 * For BF16 and F16 the pattern order is the magnitude order, Inf and NaN above every finite value. */
static PyObject *max_magnitude16(PyObject *self, PyObject *args) {
    Py_buffer src;
    if (!PyArg_ParseTuple(args, "y*", &src))
        return NULL;
    if (src.len % 2 != 0) {
        PyBuffer_Release(&src);
        PyErr_SetString(PyExc_ValueError, "max_magnitude16: src must hold whole 16-bit elements");
        return NULL;
    }
    uint16_t top;
    Py_BEGIN_ALLOW_THREADS
    top = max_span(src.buf, src.len / 2);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&src);
    return PyLong_FromLong(top);
}

/* dst[i] = table[src[i]] over n elements; NaN codes leave bits in *nan_bits. */
static void lookup_span(const uint8_t *table, const unsigned char *s, uint8_t *d, Py_ssize_t n,
                        uint64_t *nan_bits) {
    Py_ssize_t i = 0;
    for (; i + 8 <= n; i += 8)
        *nan_bits |= lut8(table, s + 2 * i, d + i);
    for (; i < n; i++) {
        d[i] = table[load16(s + 2 * i)];
        *nan_bits |= (d[i] & 0x7F) == 0x7F;
    }
}

typedef struct {
    Py_ssize_t live, zero, elements, flushed;
    double signal, noise, cos_sum, cos_min;
} Sums;

/* One measured row: look its codes up, then add its round-trip sums to *acc. Within the row the sums
 * run in eight float32 lanes (independent chains, as numpy's einsum sums a row), then in double. */
static void measured_row(const uint8_t *table, const float *w_of, const float *d_of, const unsigned char *s,
                         uint8_t *d, Py_ssize_t cols, Sums *acc, uint64_t *nan_bits) {
    lookup_span(table, s, d, cols, nan_bits);
    float dot[8] = {0}, ww[8] = {0}, dd[8] = {0}, ee[8] = {0};
    Py_ssize_t flushed = 0;
    for (Py_ssize_t j = 0; j < cols; j += 8) {
        int lanes = cols - j < 8 ? (int)(cols - j) : 8;
        float w[8] = {0}, q[8] = {0};
        for (int k = 0; k < lanes; k++) {
            w[k] = w_of[load16(s + 2 * (j + k))];
            q[k] = d_of[d[j + k]];
            flushed += (w[k] != 0.0f) & (q[k] == 0.0f);
        }
        for (int k = 0; k < 8; k++) {
            float e = w[k] - q[k];
            dot[k] += w[k] * q[k];
            ww[k] += w[k] * w[k];
            dd[k] += q[k] * q[k];
            ee[k] += e * e;
        }
    }
    double rdot = 0, rww = 0, rdd = 0, ree = 0;
    for (int k = 0; k < 8; k++) {
        rdot += dot[k];
        rww += ww[k];
        rdd += dd[k];
        ree += ee[k];
    }
    acc->flushed += flushed;
    acc->elements += cols;
    acc->signal += rww;
    acc->noise += ree;
    if (rww > 0) {
        double denom = sqrt(rww * rdd), cosine = denom > 0 ? rdot / denom : 0.0;
        acc->live++;
        acc->cos_sum += cosine;
        acc->cos_min = cosine < acc->cos_min ? cosine : acc->cos_min;
    } else {
        acc->zero++;
    }
}

/* quantize16(lut, src, dst, values, deq, cols, first, stride) -> (nan, live, zero, elements, flushed,
 *                                                                 signal_sq, noise_sq, cos_sum, cos_min)
 * A (rows x cols) block of 16-bit patterns src becomes its FP8 codes dst = lut[src]; nan says whether a
 * code is E4M3FN NaN (0x7F or 0xFF). Rows first, first + stride, ... are also measured (none when stride
 * is 0): values holds the float32 value of every pattern (65536), deq the float32 dequantized value of
 * every code (256);
 * per row, sums (float32 lanes, then double) of <w,d>, |w|^2, |d|^2 and |w-d|^2. cos_min is +inf when
 * no row is live. */
static PyObject *quantize16(PyObject *self, PyObject *args) {
    Py_buffer lut, src, dst, sv, dv;
    Py_ssize_t cols, first, stride;
    if (!PyArg_ParseTuple(args, "y*y*w*y*y*nnn", &lut, &src, &dst, &sv, &dv, &cols, &first, &stride))
        return NULL;
    PyObject *result = NULL;
    Py_ssize_t n = src.len / 2;
    int measure = stride > 0; /* stride 0: no row is measured, values and deq may be empty */
    if (lut.len != 65536 || cols <= 0 || stride < 0 || first < 0 || src.len % 2 != 0 || n % cols != 0 ||
        dst.len < n || (measure && (sv.len != 65536 * 4 || dv.len != 256 * 4))) {
        PyErr_SetString(PyExc_ValueError, "quantize16: buffers do not match (rows x cols) and the tables");
        goto done;
    }
    uint64_t nan_bits = 0;
    Sums acc = {0, 0, 0, 0, 0.0, 0.0, 0.0, INFINITY};
    Py_BEGIN_ALLOW_THREADS
    const uint8_t *table = lut.buf;
    const unsigned char *s = src.buf;
    uint8_t *d = dst.buf;
    Py_ssize_t rows = n / cols, done_rows = 0;
    for (Py_ssize_t r = first; measure && r < rows; r += stride) {
        lookup_span(table, s + 2 * done_rows * cols, d + done_rows * cols, (r - done_rows) * cols, &nan_bits);
        measured_row(table, sv.buf, dv.buf, s + 2 * r * cols, d + r * cols, cols, &acc, &nan_bits);
        done_rows = r + 1;
    }
    if (done_rows < rows)
        lookup_span(table, s + 2 * done_rows * cols, d + done_rows * cols, (rows - done_rows) * cols, &nan_bits);
    Py_END_ALLOW_THREADS
    result = Py_BuildValue("Onnnndddd", nan_bits ? Py_True : Py_False, acc.live, acc.zero, acc.elements,
                           acc.flushed, acc.signal, acc.noise, acc.cos_sum, acc.cos_min);
done:
    PyBuffer_Release(&lut);
    PyBuffer_Release(&src);
    PyBuffer_Release(&dst);
    PyBuffer_Release(&sv);
    PyBuffer_Release(&dv);
    return result;
}

static PyMethodDef methods[] = {
    {"max_magnitude16", max_magnitude16, METH_VARARGS, "largest x & 0x7FFF over 16-bit patterns"},
    {"quantize16", quantize16, METH_VARARGS, "FP8 codes of a 16-bit block by lookup, with round-trip sums"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_fp8", NULL, -1, methods};

PyMODINIT_FUNC PyInit__fp8(void) { return PyModule_Create(&module); }
