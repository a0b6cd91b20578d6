/* The audit's per-tensor loop over a parsed safetensors header, compiled: a checkpoint holds up to a few
 * hundred thousand tensors, and pulling dtype, shape and offsets out of each in Python costs more than
 * parsing the JSON. header.py's Python loop defines the result; the tests check both agree.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

static PyObject *key_dtype, *key_shape, *key_offsets; /* interned once: their hashes are cached */

/* An exact int (not bool) that fits int64, else -1 with *ok cleared. */
static int64_t exact_int(PyObject *obj, int *ok) {
    if (!PyLong_CheckExact(obj)) {
        *ok = 0;
        return -1;
    }
    int overflow = 0;
    long long value = PyLong_AsLongLongAndOverflow(obj, &overflow);
    if (overflow || (value == -1 && PyErr_Occurred())) {
        PyErr_Clear();
        *ok = 0;
        return -1;
    }
    return value;
}

/* One entry {"dtype", "shape", "data_offsets"} into column i of out (begin, end, numel, bits rows of n).
 * Returns the dtype and shape objects through *dtype / *shape (borrowed), or 0 when anything is off. */
static int entry(PyObject *value, PyObject *bits_of, int64_t *out, Py_ssize_t n, Py_ssize_t i, PyObject **dtype,
                 PyObject **shape) {
    if (!PyDict_CheckExact(value))
        return 0;
    *dtype = PyDict_GetItem(value, key_dtype);
    *shape = PyDict_GetItem(value, key_shape);
    PyObject *offsets = PyDict_GetItem(value, key_offsets);
    if (*dtype == NULL || *shape == NULL || offsets == NULL || !PyUnicode_CheckExact(*dtype))
        return 0;
    PyObject *bits = PyDict_GetItemWithError(bits_of, *dtype);
    if (bits == NULL || !PyList_CheckExact(*shape) || !PyList_CheckExact(offsets) || PyList_GET_SIZE(offsets) != 2) {
        PyErr_Clear();
        return 0;
    }
    int ok = 1;
    int64_t numel = 1;
    for (Py_ssize_t k = 0; k < PyList_GET_SIZE(*shape); k++) {
        int64_t dim = exact_int(PyList_GET_ITEM(*shape, k), &ok);
        if (!ok || dim < 0 || __builtin_mul_overflow(numel, dim, &numel))
            return 0;
    }
    out[i] = exact_int(PyList_GET_ITEM(offsets, 0), &ok);
    out[n + i] = exact_int(PyList_GET_ITEM(offsets, 1), &ok);
    out[2 * n + i] = numel;
    out[3 * n + i] = exact_int(bits, &ok);
    return ok;
}

/* columns(doc, bits_of, out) -> (dtypes, shapes) | None
 * doc: the header's tensors (name -> entry dict, no __metadata__); bits_of: dtype -> bits per element;
 * out: a writable int64 buffer of 4 x len(doc) that receives the begin, end, numel and bits rows.
 * None when any entry is malformed (the caller's slow path then names it). */
static PyObject *columns(PyObject *self, PyObject *args) {
    PyObject *doc, *bits_of;
    Py_buffer out;
    if (!PyArg_ParseTuple(args, "O!O!w*", &PyDict_Type, &doc, &PyDict_Type, &bits_of, &out))
        return NULL;
    Py_ssize_t n = PyDict_GET_SIZE(doc);
    PyObject *dtypes = NULL, *shapes = NULL, *result = NULL;
    if (out.len != 4 * n * (Py_ssize_t)sizeof(int64_t)) {
        PyErr_SetString(PyExc_ValueError, "columns: out must hold 4 x len(doc) int64");
        goto done;
    }
    dtypes = PyList_New(n);
    shapes = PyList_New(n);
    if (dtypes == NULL || shapes == NULL)
        goto done;
    Py_ssize_t pos = 0, i = 0;
    PyObject *key, *value;
    while (PyDict_Next(doc, &pos, &key, &value)) {
        PyObject *dtype, *shape;
        if (!entry(value, bits_of, out.buf, n, i, &dtype, &shape)) {
            result = Py_NewRef(Py_None);
            goto done;
        }
        PyList_SET_ITEM(dtypes, i, Py_NewRef(dtype));
        PyList_SET_ITEM(shapes, i, Py_NewRef(shape));
        i++;
    }
    result = PyTuple_Pack(2, dtypes, shapes);
done:
    Py_XDECREF(dtypes);
    Py_XDECREF(shapes);
    PyBuffer_Release(&out);
    return result;
}

static PyMethodDef methods[] = {
    {"columns", columns, METH_VARARGS, "dtype, shape, offsets, numel and bits of every header entry"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_columns", NULL, -1, methods};

PyMODINIT_FUNC PyInit__columns(void) {
    key_dtype = PyUnicode_InternFromString("dtype");
    key_shape = PyUnicode_InternFromString("shape");
    key_offsets = PyUnicode_InternFromString("data_offsets");
    if (key_dtype == NULL || key_shape == NULL || key_offsets == NULL)
        return NULL;
    return PyModule_Create(&module);
}
