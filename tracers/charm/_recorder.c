/* Native event recorder of the charm4py tracer (tracers/charm/native.py documents the API).
 *
 * A Recorder appends fixed-size rows (18 little-endian int64 in rowbuf.LAYOUT order, strings as
 * codes of the Python-side string table, nulls as INT64_MIN) into a preallocated buffer owned as
 * a bytes object, so take() hands a full buffer to the writer without copying. A Dispatch wraps a
 * charm4py scheduler callback: it times the return to the scheduler (idle rows) without a Python
 * frame of its own.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#define NF 18
#define NUL INT64_MIN
/* LAYOUT positions */
enum { L_T0, L_MSG, L_NAME, L_PE, L_PEER_PE, L_T1, L_ACTIVE, L_PEER_COLL, L_PEER_OBJ, L_BYTES, L_ARGS,
       L_KIND, L_CAT, L_COLL, L_OBJ, L_INDEX, L_STEP, L_EXEC_T0 };
/* PACKED positions (the argument order of row()) -> LAYOUT positions */
static const int PACKED_TO_LAYOUT[NF] = {L_KIND, L_PE, L_T0, L_T1, L_ACTIVE, L_CAT, L_COLL, L_OBJ, L_INDEX,
                                         L_NAME, L_MSG, L_PEER_PE, L_PEER_COLL, L_PEER_OBJ, L_BYTES, L_STEP,
                                         L_ARGS, L_EXEC_T0};
/* identity record fields (tracers.charm.identity) */
enum { I_COLL, I_OBJ, I_INDEX, I_CAT, I_STEP };
enum { K_EXEC = 0, K_SEND = 1, K_IDLE = 2 };
#define MSG_PE_SHIFT 40
#define IDLE_MIN_NS 10000

typedef struct {
    PyObject_HEAD
    PyObject *buf;         /* bytes of cap rows, written in place until taken */
    Py_ssize_t n, cap;     /* rows used, rows allocated */
    long long origin, pe;
    long long depth, last; /* nested dispatches; time of the last return to the scheduler */
    Py_ssize_t flush_rows;
    PyObject *on_full;     /* called at a return to the scheduler once n >= flush_rows */
} Recorder;

static inline long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int alloc_buf(Recorder *r, Py_ssize_t cap) {
    PyObject *b = PyBytes_FromStringAndSize(NULL, cap * NF * 8);
    if (b == NULL) return -1;
    Py_XSETREF(r->buf, b);
    r->cap = cap;
    r->n = 0;
    return 0;
}

/* Next free row (grows the buffer when a program outruns its flushes). */
static inline int64_t *next_row(Recorder *r) {
    if (r->n >= r->cap) {
        Py_ssize_t cap = r->cap * 2;
        if (_PyBytes_Resize(&r->buf, cap * NF * 8) < 0) {
            r->buf = NULL;
            alloc_buf(r, r->cap);
            return NULL;
        }
        r->cap = cap;
    }
    return (int64_t *)PyBytes_AS_STRING(r->buf) + NF * (r->n++);
}

static inline int get_ll(PyObject *o, long long *out) {
    long long v = PyLong_AsLongLong(o);
    if (v == -1 && PyErr_Occurred()) return -1;
    *out = v;
    return 0;
}

/* The identity fields (cat, coll, obj, index, step) of an identity record into a row. */
static int put_ident(int64_t *row, PyObject *ident) {
    if (!PyList_Check(ident) || PyList_GET_SIZE(ident) <= I_STEP) {
        PyErr_SetString(PyExc_TypeError, "identity record expected");
        return -1;
    }
    long long v;
    if (get_ll(PyList_GET_ITEM(ident, I_CAT), &v) < 0) return -1;
    row[L_CAT] = v;
    if (get_ll(PyList_GET_ITEM(ident, I_COLL), &v) < 0) return -1;
    row[L_COLL] = v;
    if (get_ll(PyList_GET_ITEM(ident, I_OBJ), &v) < 0) return -1;
    row[L_OBJ] = v;
    if (get_ll(PyList_GET_ITEM(ident, I_INDEX), &v) < 0) return -1;
    row[L_INDEX] = v;
    if (get_ll(PyList_GET_ITEM(ident, I_STEP), &v) < 0) return -1;
    row[L_STEP] = v;
    return 0;
}

static int args_ll(PyObject *const *args, Py_ssize_t nargs, Py_ssize_t want, long long *out, const char *fn) {
    if (nargs != want) {
        PyErr_Format(PyExc_TypeError, "%s() takes %zd arguments (%zd given)", fn, want, nargs);
        return -1;
    }
    for (Py_ssize_t i = 0; i < want; i++)
        if (get_ll(args[i], &out[i]) < 0) return -1;
    return 0;
}

/* exec(t0, t1, active, msg, name, ident): an `exec` row (times absolute; src PE from the msg id). */
static PyObject *R_exec(Recorder *r, PyObject *const *args, Py_ssize_t nargs) {
    long long a[5];
    if (nargs != 6) return PyErr_Format(PyExc_TypeError, "exec() takes 6 arguments (%zd given)", nargs);
    if (args_ll(args, 5, 5, a, "exec") < 0) return NULL;
    int64_t *row = next_row(r);
    if (row == NULL) return NULL;
    row[L_T0] = a[0] - r->origin;
    row[L_MSG] = a[3];
    row[L_NAME] = a[4];
    row[L_PE] = r->pe;
    row[L_PEER_PE] = a[3] == NUL ? NUL : (a[3] >> MSG_PE_SHIFT);
    row[L_T1] = a[1] - r->origin;
    row[L_ACTIVE] = a[2];
    row[L_PEER_COLL] = row[L_PEER_OBJ] = row[L_BYTES] = row[L_ARGS] = row[L_EXEC_T0] = NUL;
    row[L_KIND] = K_EXEC;
    if (put_ident(row, args[5]) < 0) { r->n--; return NULL; }
    Py_RETURN_NONE;
}

/* send(t, msg, name, peer_pe, peer_coll, peer_obj, nbytes, args, ident): a `send` row. */
static PyObject *R_send(Recorder *r, PyObject *const *args, Py_ssize_t nargs) {
    long long a[8];
    if (nargs != 9) return PyErr_Format(PyExc_TypeError, "send() takes 9 arguments (%zd given)", nargs);
    if (args_ll(args, 8, 8, a, "send") < 0) return NULL;
    int64_t *row = next_row(r);
    if (row == NULL) return NULL;
    row[L_T0] = a[0] - r->origin;
    row[L_MSG] = a[1];
    row[L_NAME] = a[2];
    row[L_PE] = r->pe;
    row[L_PEER_PE] = a[3];
    row[L_T1] = row[L_ACTIVE] = row[L_EXEC_T0] = NUL;
    row[L_PEER_COLL] = a[4];
    row[L_PEER_OBJ] = a[5];
    row[L_BYTES] = a[6];
    row[L_ARGS] = a[7];
    row[L_KIND] = K_SEND;
    if (put_ident(row, args[8]) < 0) { r->n--; return NULL; }
    Py_RETURN_NONE;
}

/* row(kind, pe, t0, t1, active, cat, coll, obj, index, name, msg, peer_pe, peer_coll, peer_obj, bytes,
 * step, args[, exec_t0]): any row, fields as given (rowbuf.pack's order). */
static PyObject *R_row(Recorder *r, PyObject *const *args, Py_ssize_t nargs) {
    long long a[NF];
    a[NF - 1] = NUL;
    if (nargs != NF && nargs != NF - 1)
        return PyErr_Format(PyExc_TypeError, "row() takes 17 or 18 arguments (%zd given)", nargs);
    if (args_ll(args, nargs, nargs, a, "row") < 0) return NULL;
    int64_t *row = next_row(r);
    if (row == NULL) return NULL;
    for (int i = 0; i < NF; i++) row[PACKED_TO_LAYOUT[i]] = a[i];
    Py_RETURN_NONE;
}

static void write_idle(int64_t *row, Recorder *r, long long t0, long long t1) {
    for (int i = 0; i < NF; i++) row[i] = NUL;
    row[L_KIND] = K_IDLE;
    row[L_PE] = r->pe;
    row[L_T0] = t0 - r->origin;
    row[L_T1] = t1 - r->origin;
}

/* idle(t0, t1): an `idle` row (times absolute). */
static PyObject *R_idle(Recorder *r, PyObject *const *args, Py_ssize_t nargs) {
    long long a[2];
    if (args_ll(args, nargs, 2, a, "idle") < 0) return NULL;
    int64_t *row = next_row(r);
    if (row == NULL) return NULL;
    write_idle(row, r, a[0], a[1]);
    Py_RETURN_NONE;
}

/* take(): the rows recorded so far as bytes (the buffer itself, no copy); recording goes on in a new one. */
static PyObject *R_take(Recorder *r, PyObject *Py_UNUSED(ignored)) {
    PyObject *out = r->buf;
    Py_ssize_t n = r->n, cap = r->cap;
    r->buf = NULL;
    if (_PyBytes_Resize(&out, n * NF * 8) < 0) {
        alloc_buf(r, cap);
        return NULL;
    }
    if (alloc_buf(r, cap) < 0) {
        Py_DECREF(out);
        return NULL;
    }
    return out;
}

/* clear(): drops the rows recorded so far. */
static PyObject *R_clear(Recorder *r, PyObject *Py_UNUSED(ignored)) {
    r->n = 0;
    Py_RETURN_NONE;
}

static Py_ssize_t R_len(Recorder *r) { return r->n; }

static int R_init(Recorder *r, PyObject *args, PyObject *kwds) {
    static char *kw[] = {"capacity", "flush_rows", NULL};
    Py_ssize_t cap = 65536, flush = 50000;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "|nn", kw, &cap, &flush)) return -1;
    if (cap < 1) cap = 1;
    r->origin = r->pe = r->depth = r->last = 0;
    r->flush_rows = flush;
    Py_INCREF(Py_None);
    Py_XSETREF(r->on_full, Py_None);
    return alloc_buf(r, cap);
}

static int R_traverse(Recorder *r, visitproc visit, void *arg) {
    Py_VISIT(r->on_full);
    return 0;
}

static int R_clear_refs(Recorder *r) {
    Py_CLEAR(r->on_full);
    return 0;
}

static void R_dealloc(Recorder *r) {
    PyObject_GC_UnTrack(r);
    Py_CLEAR(r->buf);
    Py_CLEAR(r->on_full);
    Py_TYPE(r)->tp_free((PyObject *)r);
}

static PyMethodDef R_methods[] = {
    {"exec", (PyCFunction)(void (*)(void))R_exec, METH_FASTCALL, "exec(t0, t1, active, msg, name, ident)"},
    {"send", (PyCFunction)(void (*)(void))R_send, METH_FASTCALL,
     "send(t, msg, name, peer_pe, peer_coll, peer_obj, nbytes, args, ident)"},
    {"row", (PyCFunction)(void (*)(void))R_row, METH_FASTCALL, "row(fields in rowbuf.pack order)"},
    {"idle", (PyCFunction)(void (*)(void))R_idle, METH_FASTCALL, "idle(t0, t1)"},
    {"take", (PyCFunction)R_take, METH_NOARGS, "rows so far as bytes; recording goes on in a new buffer"},
    {"clear", (PyCFunction)R_clear, METH_NOARGS, "drops the rows so far"},
    {NULL}};

static PyMemberDef R_members[] = {
    {"origin", T_LONGLONG, offsetof(Recorder, origin), 0, "clock value of trace time 0"},
    {"pe", T_LONGLONG, offsetof(Recorder, pe), 0, "PE of the rows"},
    {"depth", T_LONGLONG, offsetof(Recorder, depth), 0, "nested scheduler dispatches now"},
    {"last", T_LONGLONG, offsetof(Recorder, last), 0, "time of the last return to the scheduler"},
    {"flush_rows", T_PYSSIZET, offsetof(Recorder, flush_rows), 0, "rows that make on_full run"},
    {"on_full", T_OBJECT, offsetof(Recorder, on_full), 0, "callable run at a return to the scheduler when full"},
    {NULL}};

static PySequenceMethods R_seq = {.sq_length = (lenfunc)R_len};

static PyTypeObject RecorderType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tracers.charm._recorder.Recorder",
    .tp_basicsize = sizeof(Recorder),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "Per-PE buffer of fixed-size binary event rows.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)R_init,
    .tp_dealloc = (destructor)R_dealloc,
    .tp_traverse = (traverseproc)R_traverse,
    .tp_clear = (inquiry)R_clear_refs,
    .tp_methods = R_methods,
    .tp_members = R_members,
    .tp_as_sequence = &R_seq,
};

/* ---- Dispatch: a scheduler callback wrapped with idle detection ---- */

typedef struct {
    PyObject_HEAD
    PyObject *fn;
    Recorder *rec;
    vectorcallfunc vectorcall;
} Dispatch;

static PyObject *D_vectorcall(Dispatch *d, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    Recorder *r = d->rec;
    long long depth = r->depth;
    if (depth == 0) {
        long long t = now_ns();
        if (r->last && t - r->last > IDLE_MIN_NS) {
            int64_t *row = next_row(r);
            if (row == NULL) return NULL;
            write_idle(row, r, r->last, t);
        }
    }
    r->depth = depth + 1;
    PyObject *res = PyObject_Vectorcall(d->fn, args, nargsf, kwnames);
    r->depth = depth;
    if (depth == 0) {
        r->last = now_ns();
        if (r->n >= r->flush_rows && r->on_full != Py_None && res != NULL) {
            PyObject *ok = PyObject_CallNoArgs(r->on_full);
            if (ok == NULL) {
                Py_DECREF(res);
                return NULL;
            }
            Py_DECREF(ok);
        }
    }
    return res;
}

static PyObject *D_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    PyObject *fn, *rec;
    if (!PyArg_ParseTuple(args, "OO!", &fn, &RecorderType, &rec)) return NULL;
    Dispatch *d = (Dispatch *)type->tp_alloc(type, 0);
    if (d == NULL) return NULL;
    Py_INCREF(fn);
    Py_INCREF(rec);
    d->fn = fn;
    d->rec = (Recorder *)rec;
    d->vectorcall = (vectorcallfunc)D_vectorcall;
    return (PyObject *)d;
}

static int D_traverse(Dispatch *d, visitproc visit, void *arg) {
    Py_VISIT(d->fn);
    Py_VISIT(d->rec);
    return 0;
}

static int D_clear(Dispatch *d) {
    Py_CLEAR(d->fn);
    Py_CLEAR(d->rec);
    return 0;
}

static void D_dealloc(Dispatch *d) {
    PyObject_GC_UnTrack(d);
    D_clear(d);
    Py_TYPE(d)->tp_free((PyObject *)d);
}

static PyMemberDef D_members[] = {
    {"fn", T_OBJECT, offsetof(Dispatch, fn), READONLY, "the wrapped callback"}, {NULL}};

static PyTypeObject DispatchType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tracers.charm._recorder.Dispatch",
    .tp_basicsize = sizeof(Dispatch),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "Dispatch(fn, recorder): fn timed as a scheduler callback (idle rows, flush when full).",
    .tp_new = D_new,
    .tp_dealloc = (destructor)D_dealloc,
    .tp_traverse = (traverseproc)D_traverse,
    .tp_clear = (inquiry)D_clear,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(Dispatch, vectorcall),
    .tp_members = D_members,
};

static PyObject *M_clock(PyObject *self, PyObject *Py_UNUSED(ignored)) { return PyLong_FromLongLong(now_ns()); }

static PyMethodDef M_methods[] = {
    {"clock", M_clock, METH_NOARGS, "CLOCK_MONOTONIC in ns (time.monotonic_ns)"}, {NULL}};

static struct PyModuleDef moduledef = {PyModuleDef_HEAD_INIT, "_recorder", "Native event recorder.", -1,
                                       M_methods};

PyMODINIT_FUNC PyInit__recorder(void) {
    if (PyType_Ready(&RecorderType) < 0 || PyType_Ready(&DispatchType) < 0) return NULL;
    PyObject *m = PyModule_Create(&moduledef);
    if (m == NULL) return NULL;
    Py_INCREF(&RecorderType);
    Py_INCREF(&DispatchType);
    if (PyModule_AddObject(m, "Recorder", (PyObject *)&RecorderType) < 0 ||
        PyModule_AddObject(m, "Dispatch", (PyObject *)&DispatchType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    if (PyModule_AddIntConstant(m, "ROW_FIELDS", NF) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
