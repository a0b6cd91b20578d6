/* The audit's per-tensor loops over a parsed safetensors header, compiled: a checkpoint holds up to a few
 * hundred thousand tensors, and pulling dtype, shape and offsets out of each, then grouping them, costs
 * more in Python than parsing the JSON. header.py's and digest.py's Python loops define the results;
 * the tests check both agree.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

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


/* ---- grouping: tensors of one file by (name template, dtype, layer) ---------------------------------- */

static const char LAYERS[] = ".layers.";

/* A name's template replaces every ASCII digit with '#' (a '#' in the name stays '#'). */
static inline char masked(char c) { return c >= '0' && c <= '9' ? '#' : c; }

/* The layer number's span in a name, as digest.py finds it in the template: the first ".layers." followed
 * by a '#'; that run of '#' counts only when the template ends or a '.' follows. *len 0: no layer. */
static void layer_span(const char *s, Py_ssize_t n, Py_ssize_t *start, Py_ssize_t *len) {
    *start = *len = 0;
    const Py_ssize_t k = sizeof(LAYERS) - 1;
    for (Py_ssize_t i = 0; i + k < n; i++) {
        if (s[i] != '.' || memcmp(s + i, LAYERS, k) != 0 || masked(s[i + k]) != '#')
            continue;
        Py_ssize_t end = i + k;
        while (end < n && masked(s[end]) == '#')
            end++;
        if (end == n || s[end] == '.') {
            *start = i + k;
            *len = end - (i + k);
        }
        return;
    }
}

typedef struct {
    const char *s;
    Py_ssize_t n, layer_at, layer_len;
    PyObject *dtype;
} Key;

static uint64_t key_hash(const Key *key, Py_hash_t dtype_hash) {
    uint64_t h = 1469598103934665603ULL ^ (uint64_t)dtype_hash;
    for (Py_ssize_t i = 0; i < key->n; i++) { /* the template */
        h ^= (uint8_t)masked(key->s[i]);
        h *= 1099511628211ULL;
    }
    for (Py_ssize_t i = 0; i < key->layer_len; i++) { /* the layer's own characters */
        h ^= (uint8_t)key->s[key->layer_at + i];
        h *= 1099511628211ULL;
    }
    return h;
}

/* 1 when a and b have the same template, dtype and layer digits; -1 on a comparison error. */
static int same_key(const Key *a, const Key *b) {
    if (a->n != b->n || a->layer_at != b->layer_at || a->layer_len != b->layer_len)
        return 0;
    for (Py_ssize_t i = 0; i < a->n; i++)
        if (masked(a->s[i]) != masked(b->s[i]))
            return 0;
    if (memcmp(a->s + a->layer_at, b->s + b->layer_at, a->layer_len) != 0)
        return 0;
    if (a->dtype == b->dtype)
        return 1;
    return PyObject_RichCompareBool(a->dtype, b->dtype, Py_EQ);
}

static int read_key(PyObject *name, PyObject *dtype, Key *key) {
    key->s = PyUnicode_AsUTF8AndSize(name, &key->n);
    if (key->s == NULL)
        return 0;
    key->dtype = dtype;
    layer_span(key->s, key->n, &key->layer_at, &key->layer_len);
    return 1;
}

/* groups(names, dtypes, ids) -> (first, names_hash)
 * ids (writable int64, len(names)) receives each tensor's group number, numbered by first appearance;
 * first lists each group's first tensor; names_hash is the wrapping int64 sum of hash(name). */
static PyObject *groups(PyObject *self, PyObject *args) {
    PyObject *names, *dtypes;
    Py_buffer ids;
    if (!PyArg_ParseTuple(args, "O!O!w*", &PyList_Type, &names, &PyList_Type, &dtypes, &ids))
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(names);
    PyObject *first = NULL, *result = NULL;
    Py_ssize_t cap = 16;
    while (cap < 2 * n)
        cap *= 2;
    Py_ssize_t *slots = PyMem_Malloc(cap * sizeof(Py_ssize_t)); /* a group's number, or -1 */
    Key *keys = PyMem_Malloc((n ? n : 1) * sizeof(Key));           /* each group's key */
    int64_t *group_of = ids.buf;
    if (slots == NULL || keys == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    if (PyList_GET_SIZE(dtypes) != n || ids.len != n * (Py_ssize_t)sizeof(int64_t)) {
        PyErr_SetString(PyExc_ValueError, "groups: names, dtypes and ids must have one entry per tensor");
        goto done;
    }
    for (Py_ssize_t i = 0; i < cap; i++)
        slots[i] = -1;
    first = PyList_New(0);
    if (first == NULL)
        goto done;
    uint64_t name_sum = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *name = PyList_GET_ITEM(names, i), *dtype = PyList_GET_ITEM(dtypes, i);
        Py_hash_t name_hash = PyObject_Hash(name), dtype_hash = PyObject_Hash(dtype);
        Key key;
        if (name_hash == -1 || dtype_hash == -1 || !read_key(name, dtype, &key))
            goto done;
        name_sum += (uint64_t)name_hash;
        Py_ssize_t at = (Py_ssize_t)(key_hash(&key, dtype_hash) & (uint64_t)(cap - 1));
        for (;; at = (at + 1) & (cap - 1)) {
            if (slots[at] < 0) { /* a new group */
                Py_ssize_t gid = PyList_GET_SIZE(first);
                PyObject *index = PyLong_FromSsize_t(i);
                if (index == NULL || PyList_Append(first, index) < 0) {
                    Py_XDECREF(index);
                    goto done;
                }
                Py_DECREF(index);
                keys[gid] = key;
                slots[at] = gid;
                group_of[i] = gid;
                break;
            }
            int same = same_key(&key, &keys[slots[at]]);
            if (same < 0)
                goto done;
            if (same) {
                group_of[i] = slots[at];
                break;
            }
        }
    }
    result = Py_BuildValue("OL", first, (long long)(int64_t)name_sum);
done:
    Py_XDECREF(first);
    PyMem_Free(slots);
    PyMem_Free(keys);
    PyBuffer_Release(&ids);
    return result;
}

/* ---- the index: per file, how many tensors it names and the sum of their names' hashes --------------- */

/* fingerprints(weight_map) -> {file: (count, names_hash)} | None
 * weight_map: tensor name -> file name; None when a file name is not a str. names_hash is the wrapping
 * int64 sum of hash(name), as groups() computes it for a shard's own names. */
static PyObject *fingerprints(PyObject *self, PyObject *args) {
    PyObject *weight_map;
    if (!PyArg_ParseTuple(args, "O!", &PyDict_Type, &weight_map))
        return NULL;
    PyObject *slot_of = PyDict_New(), *files = PyList_New(0), *result = NULL;
    Py_ssize_t n = PyDict_GET_SIZE(weight_map);
    int64_t *counts = PyMem_Calloc(n ? n : 1, sizeof(int64_t));
    uint64_t *sums = PyMem_Calloc(n ? n : 1, sizeof(uint64_t));
    if (slot_of == NULL || files == NULL || counts == NULL || sums == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t pos = 0;
    PyObject *name, *file;
    while (PyDict_Next(weight_map, &pos, &name, &file)) {
        if (!PyUnicode_CheckExact(file)) {
            result = Py_NewRef(Py_None);
            goto done;
        }
        Py_hash_t name_hash = PyObject_Hash(name);
        PyObject *slot = PyDict_GetItemWithError(slot_of, file);
        if (name_hash == -1 || (slot == NULL && PyErr_Occurred()))
            goto done;
        Py_ssize_t at;
        if (slot == NULL) {
            at = PyList_GET_SIZE(files);
            PyObject *number = PyLong_FromSsize_t(at);
            int failed = number == NULL || PyDict_SetItem(slot_of, file, number) < 0 || PyList_Append(files, file) < 0;
            Py_XDECREF(number);
            if (failed)
                goto done;
        } else {
            at = PyLong_AsSsize_t(slot);
        }
        counts[at]++;
        sums[at] += (uint64_t)name_hash;
    }
    result = PyDict_New();
    for (Py_ssize_t i = 0; result != NULL && i < PyList_GET_SIZE(files); i++) {
        PyObject *value = Py_BuildValue("(LL)", (long long)counts[i], (long long)(int64_t)sums[i]);
        if (value == NULL || PyDict_SetItem(result, PyList_GET_ITEM(files, i), value) < 0)
            Py_CLEAR(result);
        Py_XDECREF(value);
    }
done:
    Py_XDECREF(slot_of);
    Py_XDECREF(files);
    PyMem_Free(counts);
    PyMem_Free(sums);
    return result;
}

static PyMethodDef methods[] = {
    {"columns", columns, METH_VARARGS, "dtype, shape, offsets, numel and bits of every header entry"},
    {"groups", groups, METH_VARARGS, "group number of every tensor by (template, dtype, layer)"},
    {"fingerprints", fingerprints, METH_VARARGS, "per file of an index: tensor count and names hash"},
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
