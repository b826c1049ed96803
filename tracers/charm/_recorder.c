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
#include <errno.h>
#include <string.h>
#include <time.h>
#include <pthread.h>
#include <sys/mman.h>

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
enum { I_COLL, I_OBJ, I_INDEX, I_CAT, I_STEP, I_EXPLICIT };
enum { K_EXEC = 0, K_SEND = 1, K_IDLE = 2, K_STEP = 5, K_PIECE = 6 }; /* hooks.KINDS */
#define MSG_PE_SHIFT 40
#define IDLE_MIN_NS 10000

typedef struct {
    PyObject_HEAD
    PyObject *buf;         /* bytes of cap rows, written in place until taken */
    Py_ssize_t n, cap;     /* rows used, rows allocated */
    long long origin, pe;
    long long depth, last; /* nested dispatches; time of the last return to the scheduler */
    long long exec_t0;     /* start of the execution the exec hook runs now (its record holds None) */
    long long end_t;       /* end of the last execution recorded (exec row) ... */
    Py_ssize_t end_n;      /* ... and the row count just after it; -1: none in this dispatch yet */
    long long seq, msg_base; /* message ids: msg_base + per-PE sequence */
    PyObject *pend_spare;  /* the Pend hook_pack fills (a new one when something else still holds it) */
    Py_ssize_t flush_rows;
    PyObject *on_full;     /* called at a return to the scheduler once n >= flush_rows */
    Py_ssize_t pf_next;    /* row at which the prefault thread is asked for the next stretch */
} Recorder;

/* An injected clock error (tests of the clock alignment, tracers/clock.py: skewed): off by
 * skew_offset plus skew_drift per ns since skew_origin. Off unless set_fake_skew() was called. */
static int skew_on;
static long long skew_offset, skew_origin;
static double skew_drift;

static inline long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    long long t = (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
    if (__builtin_expect(skew_on, 0)) t += skew_offset + (long long)(skew_drift * (double)(t - skew_origin));
    return t;
}

/* ---- Prefault: the buffer's pages mapped ahead of the rows, off the program's thread ----
 * A fresh buffer's memory is mapped by the kernel on first write: a page fault (~1.5-6 us here,
 * page zeroing included) every 28 rows, ~50-180 ns per row on the program's path. A background
 * thread asks the kernel to map the next stretch (MADV_POPULATE_WRITE, Linux >= 5.14: the pages
 * are mapped writable, their bytes untouched) while the rows fill the current one. It never reads
 * or writes the buffer and holds no Python object; where the call is missing (older kernel or
 * headers) the pages fault on first write as before. */
#define PF_STEP_ROWS 4096   /* the recorder asks for more every 4096 rows (576 KiB) ... */
#define PF_AHEAD_ROWS 16384 /* ... to be mapped up to 16384 rows (2.25 MiB) ahead of the last row */

static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    char *base;         /* buffer whose pages are wanted (the latest asked for) */
    size_t done, want;  /* bytes of it mapped so far / wanted mapped */
    int state;          /* 0: not started, 1: running, -1: unavailable */
} pf = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, 0, 0, 0};

static void *pf_main(void *unused) {
    (void)unused;
    pthread_mutex_lock(&pf.mu);
    for (;;) {
        while (pf.done >= pf.want) pthread_cond_wait(&pf.cv, &pf.mu);
        char *base = pf.base;
        size_t from = pf.done, to = pf.want, page = 4096;
        if (to - from > (1 << 20)) to = from + (1 << 20); /* a stretch at a time: a new buffer is seen soon */
        pf.done = to;
        pthread_mutex_unlock(&pf.mu);
        /* page-aligned inside the stretch: a partial page at either end is left to fault */
        uintptr_t a = ((uintptr_t)base + from + page - 1) & ~(uintptr_t)(page - 1);
        uintptr_t b = ((uintptr_t)base + to) & ~(uintptr_t)(page - 1);
#ifdef MADV_POPULATE_WRITE
        int bad = b > a && madvise((void *)a, b - a, MADV_POPULATE_WRITE) != 0 && errno == EINVAL;
#else
        int bad = 1;
#endif
        pthread_mutex_lock(&pf.mu);
        if (bad) { /* the kernel has no MADV_POPULATE_WRITE: stop asking */
            pf.state = -1;
            pf.done = pf.want = 0;
            pthread_mutex_unlock(&pf.mu);
            return NULL;
        }
    }
}

/* A forked child has no prefault thread (and maybe a lock its parent's thread held): it starts
 * afresh, its own thread made on its first request. */
static void pf_atfork_child(void) {
    pthread_mutex_init(&pf.mu, NULL);
    pthread_cond_init(&pf.cv, NULL);
    pf.base = NULL;
    pf.done = pf.want = 0;
    if (pf.state > 0) pf.state = 0;
}

/* Asks for the rows of r's buffer up to PF_AHEAD_ROWS past row n to be mapped. */
static void prefault_ahead(Recorder *r) {
    r->pf_next = r->n + PF_STEP_ROWS;
    if (pf.state < 0) return;
    Py_ssize_t upto = r->n + PF_AHEAD_ROWS;
    if (upto > r->cap) upto = r->cap;
    char *base = PyBytes_AS_STRING(r->buf);
    pthread_mutex_lock(&pf.mu);
    if (pf.state == 0) {
        pthread_t t;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        pf.state = pthread_create(&t, &attr, pf_main, NULL) == 0 ? 1 : -1;
        pthread_attr_destroy(&attr);
    }
    if (pf.state > 0) {
        if (pf.base != base) {
            pf.base = base;
            pf.done = (size_t)r->n * NF * 8;
        }
        pf.want = (size_t)upto * NF * 8;
        if (pf.done < pf.want) pthread_cond_signal(&pf.cv);
    }
    pthread_mutex_unlock(&pf.mu);
}

static int alloc_buf(Recorder *r, Py_ssize_t cap) {
    PyObject *b = PyBytes_FromStringAndSize(NULL, cap * NF * 8);
    if (b == NULL) return -1;
    Py_XSETREF(r->buf, b);
    r->cap = cap;
    r->n = 0;
    r->pf_next = 0;
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
        r->pf_next = r->n;
    }
    if (__builtin_expect(r->n >= r->pf_next, 0)) prefault_ahead(r);
    return (int64_t *)PyBytes_AS_STRING(r->buf) + NF * (r->n++);
}

static PyObject *s_null; /* the int INT64_MIN that Python code passes (rowbuf.NULL): compared by identity */

static inline int get_ll(PyObject *o, long long *out) {
    if (o == s_null) { /* a 3-digit int: PyLong_AsLongLong's slow path */
        *out = NUL;
        return 0;
    }
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

/* The fixed part of an exec row (L_PEER_COLL.. , 11 fields) or a send row (L_KIND.., 7 fields) from
 * the identity record's pre-packed tail (identity.XTAIL / STAIL, rowbuf.tails: the same bytes the
 * Python recorder appends); put_ident's field-by-field path when a record has none. */
enum { I_XTAIL = 7, I_STAIL = 8 };
static inline int put_tail(int64_t *row, PyObject *ident, int send) {
    Py_ssize_t slot = send ? I_STAIL : I_XTAIL, first = send ? L_KIND : L_PEER_COLL, nbytes = (NF - first) * 8;
    if (PyList_Check(ident) && PyList_GET_SIZE(ident) > slot) {
        PyObject *tail = PyList_GET_ITEM(ident, slot);
        if (PyBytes_Check(tail) && PyBytes_GET_SIZE(tail) == nbytes) {
            /* constant sizes: the compiler copies with vector moves (a variable size: rep movs) */
            if (send) memcpy(row + L_KIND, PyBytes_AS_STRING(tail), (NF - L_KIND) * 8);
            else memcpy(row + L_PEER_COLL, PyBytes_AS_STRING(tail), (NF - L_PEER_COLL) * 8);
            return 0;
        }
    }
    if (send) {
        row[L_EXEC_T0] = NUL;
        row[L_KIND] = K_SEND;
    } else {
        row[L_PEER_COLL] = row[L_PEER_OBJ] = row[L_BYTES] = row[L_ARGS] = row[L_EXEC_T0] = NUL;
        row[L_KIND] = K_EXEC;
    }
    return put_ident(row, ident);
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
    if (put_tail(row, args[5], 0) < 0) { r->n--; return NULL; }
    r->end_t = a[1];
    r->end_n = r->n;
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
    row[L_T1] = row[L_ACTIVE] = NUL;
    row[L_PEER_COLL] = a[4];
    row[L_PEER_OBJ] = a[5];
    row[L_BYTES] = a[6];
    row[L_ARGS] = a[7];
    if (put_tail(row, args[8], 1) < 0) { r->n--; return NULL; }
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
    r->end_n = -1;
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
    r->end_n = -1;
    Py_RETURN_NONE;
}

static Py_ssize_t R_len(Recorder *r) { return r->n; }

static int R_init(Recorder *r, PyObject *args, PyObject *kwds) {
    static char *kw[] = {"capacity", "flush_rows", NULL};
    Py_ssize_t cap = 65536, flush = 50000;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "|nn", kw, &cap, &flush)) return -1;
    if (cap < 1) cap = 1;
    r->origin = r->pe = r->depth = r->last = r->seq = r->msg_base = r->end_t = 0;
    r->end_n = -1;
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
    Py_CLEAR(r->pend_spare);
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
    {"seq", T_LONGLONG, offsetof(Recorder, seq), 0, "messages tagged so far"},
    {"exec_t0", T_LONGLONG, offsetof(Recorder, exec_t0), 0, "start of the execution the exec hook runs now"},
    {"msg_base", T_LONGLONG, offsetof(Recorder, msg_base), 0, "msg id of this PE's message 0"},
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
    if (depth == 0) r->end_n = -1;
    PyObject *res = PyObject_Vectorcall(d->fn, args, nargsf, kwnames);
    r->depth = depth;
    if (depth == 0) {
        /* an execution that ended with nothing recorded after it: its end is the return (one clock read) */
        r->last = r->end_n == r->n ? r->end_t : now_ns();
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


/* ---- Pend: the last packed message (ST.pend[0]) as the Python hooks read it: p[0..3] =
 * (message bytes, msg id, bytes or NULL, time). hook_pack reuses one while nothing else holds it,
 * so a message costs no tuple and no int objects; Python code reading p gets ints made on demand. */

typedef struct {
    PyObject_HEAD
    PyObject *m0;
    long long mid, size, t;
} Pend;

static PyObject *P_item(Pend *p, Py_ssize_t i) {
    switch (i) {
    case 0: {
        PyObject *m0 = p->m0 != NULL ? p->m0 : Py_None;
        Py_INCREF(m0);
        return m0;
    }
    case 1: return PyLong_FromLongLong(p->mid);
    case 2: if (p->size == NUL) { Py_INCREF(s_null); return s_null; } return PyLong_FromLongLong(p->size);
    case 3: return PyLong_FromLongLong(p->t);
    default: PyErr_SetString(PyExc_IndexError, "Pend index out of range"); return NULL;
    }
}

static Py_ssize_t P_len(Pend *p) { return 4; }

static void P_dealloc(Pend *p) {
    Py_CLEAR(p->m0);
    Py_TYPE(p)->tp_free((PyObject *)p);
}

static PySequenceMethods P_seq = {.sq_length = (lenfunc)P_len, .sq_item = (ssizeargfunc)P_item};

static PyTypeObject PendType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tracers.charm._recorder.Pend",
    .tp_basicsize = sizeof(Pend),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The last packed message: p[0..3] = (message bytes, msg id, bytes or NULL, time).",
    .tp_dealloc = (destructor)P_dealloc,
    .tp_as_sequence = &P_seq,
};

/* ---- Hot hooks in compiled code: an entry method's execution, packMsg, CkArraySend ----
 * Each mirrors the Python hook of tracers/charm/hooks.py that it replaces on the fast path and
 * hands every case it does not handle (first message of an object, special or coroutine entry
 * methods, names not cached yet) to that Python hook, so both write the same rows. */

#define ID_SLOTS 256 /* direct-mapped caches keyed by object identity (entry methods, arrays, a PE's chares) */

/* Values of objects that never change them (entry methods' name codes, codes of ep and aid ints), by
 * identity; the keys are held, so no other object can take a cached key's address. */
typedef struct {
    PyObject *key[ID_SLOTS], *val[ID_SLOTS];
} IdCache;

static inline size_t id_slot(PyObject *k) {
    uintptr_t p = (uintptr_t)k;
    return ((p >> 4) ^ (p >> 10)) % ID_SLOTS;
}

/* borrowed value, or NULL (no error set) */
static inline PyObject *id_get(IdCache *c, PyObject *k) {
    size_t s = id_slot(k);
    return c->key[s] == k ? c->val[s] : NULL;
}

static inline void id_put(IdCache *c, PyObject *k, PyObject *v) {
    size_t s = id_slot(k);
    Py_INCREF(k);
    Py_INCREF(v);
    Py_XSETREF(c->key[s], k);
    Py_XSETREF(c->val[s], v);
}

static int id_traverse(IdCache *c, visitproc visit, void *arg) {
    for (int i = 0; i < ID_SLOTS; i++) {
        Py_VISIT(c->key[i]);
        Py_VISIT(c->val[i]);
    }
    return 0;
}

static void id_clear(IdCache *c) {
    for (int i = 0; i < ID_SLOTS; i++) {
        Py_CLEAR(c->key[i]);
        Py_CLEAR(c->val[i]);
    }
}

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    int kind;
    Recorder *rec;
    PyObject *orig;    /* the wrapped charm4py callable */
    PyObject *slow;    /* the Python hook: every case the fast path does not handle */
    PyObject *cur;     /* ST.cur: [record of the running execution] */
    PyObject *pend;    /* ST.pend: [(msg bytes, msg id, bytes, t) of the last packed message] */
    PyObject *mute;    /* ST.mute */
    PyObject *state;   /* ST.__dict__ (pending_create), a dict look-up cheaper than the attribute's */
    PyObject *acodes;  /* aid -> collection code */
    PyObject *epcodes; /* ep -> name code */
    PyObject *no_object;
    PyObject *spare;   /* exec: the last execution record, reused when nothing else holds it */
    IdCache em_names; /* exec: name codes (em._pt[0]) of the entry methods on the fast path */
    IdCache colls, names; /* array_send: acodes and epcodes as looked up so far */
    IdCache em_mnames; /* exec: method names (em.name) of the entry methods run by em_run */
    IdCache idents;    /* exec: chare -> its identity record (obj._pt_id); forget() drops one that leaves */
    PyObject *run_globals; /* exec: the globals of charm4py 1.1's EntryMethod._run (em_run does its work), or NULL */
    PyObject *em_failed;   /* exec: hooks.em_failed, _run's except clauses */
    PyObject *em_block;    /* exec: hooks.em_block, _run's reply to a blocking call */
    PyObject *ids;         /* exec: Registry.ids, id(chare) -> (weakref to it, identity record), or NULL */
    long long bcast, combined, index_bits;
    long long step_name; /* step: code of the row name "step" */
} Hook;

enum { H_EXEC, H_PACK, H_ASEND, H_STEP };
enum { HEADER_MSG_KEY = 0, HEADER_CREATE_KEY = 1 }; /* rowbuf.MSG_KEY, CREATE_KEY: header keys of msg id, creation */
static PyObject *s_pt_key, *s_pc_key, *s_dcopy_key, *s_pt_attr, *s_pending_create, *s_zero;
static PyObject *s_charm, *s_last_em_exec, *s_name, *s_ret_fut, *s_block_key;

#define EM_MAX_ARGS 16
/* EntryMethod._run(em, obj, header, args, ret_fut=False) of charm4py 1.1 (entry_method.py) in
 * compiled code: `charm.last_em_exec = em`, the method called with the args, the except clauses
 * (hooks.em_failed) and a blocking call's reply (hooks.em_block) as there. What it does not take
 * (ret_fut true, other keywords, many args) goes to the original. */
static PyObject *em_run(Hook *h, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
    PyObject *em = args[0], *obj = args[1], *header = args[2], *margs = args[3], *ret_fut = NULL;
    Py_ssize_t nkw = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames);
    if (nargs == 5 && nkw == 0) ret_fut = args[4];
    else if (nargs == 4 && nkw == 1 && PyTuple_GET_ITEM(kwnames, 0) == s_ret_fut) ret_fut = args[4];
    else if (!(nargs == 4 && nkw == 0)) goto orig;
    if (ret_fut != NULL && ret_fut != Py_False) {
        int t = PyObject_IsTrue(ret_fut);
        if (t < 0) return NULL;
        if (t) goto orig;
    }
    Py_ssize_t n;
    PyObject *const *items;
    if (PyTuple_CheckExact(margs)) { n = PyTuple_GET_SIZE(margs); items = &PyTuple_GET_ITEM(margs, 0); }
    else if (PyList_CheckExact(margs)) { n = PyList_GET_SIZE(margs); items = PySequence_Fast_ITEMS(margs); }
    else goto orig;
    if (n >= EM_MAX_ARGS || !PyDict_Check(header)) goto orig;
    PyObject *mname = id_get(&h->em_mnames, em);
    if (mname == NULL) {
        mname = PyObject_GetAttr(em, s_name);
        if (mname == NULL) return NULL;
        if (!PyUnicode_CheckExact(mname)) { Py_DECREF(mname); goto orig; }
        id_put(&h->em_mnames, em, mname);
        Py_DECREF(mname);
    }
    PyObject *charm = PyDict_GetItemWithError(h->run_globals, s_charm); /* borrowed */
    if (charm == NULL) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_NameError, "name 'charm' is not defined");
        return NULL;
    }
    if (PyObject_SetAttr(charm, s_last_em_exec, em) < 0) return NULL;
    PyObject *stack[EM_MAX_ARGS + 1];
    stack[0] = obj;
    for (Py_ssize_t i = 0; i < n; i++) stack[i + 1] = items[i]; /* the list is not touched before the call */
    PyObject *ret = PyObject_VectorcallMethod(mname, stack, n + 1, NULL);
    if (ret == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_Exception) && !PyErr_ExceptionMatches(PyExc_SystemExit)) return NULL;
        PyObject *et, *ev, *etb;
        PyErr_Fetch(&et, &ev, &etb);
        PyErr_NormalizeException(&et, &ev, &etb);
        if (etb != NULL) PyException_SetTraceback(ev, etb);
        Py_XDECREF(et);
        Py_XDECREF(etb);
        PyObject *r = PyObject_CallFunctionObjArgs(h->em_failed, charm, obj, header, ev, NULL);
        Py_DECREF(ev);
        return r;
    }
    int blocking = PyDict_Contains(header, s_block_key);
    if (blocking == 0) {
        Py_DECREF(ret);
        Py_RETURN_NONE;
    }
    PyObject *r = blocking < 0 ? NULL : PyObject_CallFunctionObjArgs(h->em_block, charm, obj, header, ret, NULL);
    Py_DECREF(ret);
    return r;
orig:
    return PyObject_Vectorcall(h->orig, args, nargs, kwnames);
}

static inline PyObject *ll_obj(long long v) { return PyLong_FromLongLong(v); }

/* list[i] = v (an int); -1 on error */
static inline int list_set_ll(PyObject *list, Py_ssize_t i, long long v) {
    PyObject *o = ll_obj(v);
    if (o == NULL) return -1;
    PyList_SetItem(list, i, o);
    return 0;
}

static inline int list_get_ll(PyObject *list, Py_ssize_t i, long long *out) {
    if (!PyList_Check(list) || PyList_GET_SIZE(list) <= i) {
        PyErr_SetString(PyExc_TypeError, "execution record expected");
        return -1;
    }
    return get_ll(PyList_GET_ITEM(list, i), out);
}

/* The identity record of a chare in h->ids (Registry.ids: id(obj) -> (weakref to obj, record)), a new
 * reference; NULL without an error when it has none (or a record that is not a list). */
static PyObject *ids_lookup(Hook *h, PyObject *obj) {
    if (h->ids == NULL) return NULL;
    PyObject *key = PyLong_FromVoidPtr(obj);
    if (key == NULL) return NULL;
    PyObject *e = PyDict_GetItemWithError(h->ids, key); /* borrowed */
    Py_DECREF(key);
    if (e == NULL || !PyTuple_CheckExact(e) || PyTuple_GET_SIZE(e) != 2) return NULL;
    PyObject *ref = PyTuple_GET_ITEM(e, 0), *ident = PyTuple_GET_ITEM(e, 1);
    if (!PyWeakref_CheckRef(ref) || PyWeakref_GET_OBJECT(ref) != obj || !PyList_Check(ident)) return NULL;
    Py_INCREF(ident);
    return ident;
}

/* EntryMethod._run(self, obj, header, args[, ret_fut]) of a plain entry method on a known object,
 * run while no other execution runs (charm4py passes ret_fut by keyword: the keywords go through
 * to the wrapped _run as they came). A nested execution goes to the Python hook, which pauses the
 * running one (hooks.pause: writes its piece so far); an execution paused meanwhile (by a nested
 * one, or a coroutine resumed inside it: rec[0] is no longer t0) writes its last piece here. */
static PyObject *hook_exec(Hook *h, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (nargs < 4 || PyList_GET_ITEM(h->cur, 0) != Py_None) return PyObject_Vectorcall(h->slow, args, nargs, kwnames);
    PyObject *em = args[0], *obj = args[1], *header = args[2], *name;
    name = id_get(&h->em_names, em);
    if (name != NULL)
        Py_INCREF(name);
    else { /* em._pt = (name code, flag, is coroutine): the fast path takes plain ones (flag 0) */
        PyObject *pt = PyObject_GetAttr(em, s_pt_attr);
        if (pt == NULL) return NULL;
        if (!PyTuple_Check(pt) || PyTuple_GET_SIZE(pt) != 3 || PyTuple_GET_ITEM(pt, 2) != Py_False ||
            !PyLong_Check(PyTuple_GET_ITEM(pt, 1)) || PyLong_AsLong(PyTuple_GET_ITEM(pt, 1)) != 0) {
            Py_DECREF(pt);
            return PyObject_Vectorcall(h->slow, args, nargs, kwnames);
        }
        name = PyTuple_GET_ITEM(pt, 0);
        Py_INCREF(name);
        Py_DECREF(pt);
        id_put(&h->em_names, em, name);
    }
    /* the chare's identity: remembered once per chare (hooks.run: Registry.remember), dropped when
     * it migrates away (forget); never an attribute of the chare (Registry.ids says why) */
    PyObject *ident = id_get(&h->idents, obj);
    if (ident != NULL)
        Py_INCREF(ident);
    else {
        ident = ids_lookup(h, obj);
        if (ident == NULL) {
            Py_DECREF(name);
            if (PyErr_Occurred()) return NULL;
            return PyObject_Vectorcall(h->slow, args, nargs, kwnames);
        }
        id_put(&h->idents, obj, ident);
    }
    PyObject *mid = NULL;
    if (PyDict_Check(header) && PyDict_GET_SIZE(header)) mid = PyDict_GetItemWithError(header, s_pt_key);
    if (mid == NULL && PyErr_Occurred()) goto fail0;
    long long mid_v = NUL, name_v, t0, t1;
    if (mid != NULL && get_ll(mid, &mid_v) < 0) goto fail0;
    if (get_ll(name, &name_v) < 0) goto fail0;
    PyObject *cur = h->cur;
    PyObject *parent = PyList_GET_ITEM(cur, 0);
    if (parent != Py_None) { /* an attribute lookup above ran an execution? then the Python hook */
        Py_DECREF(ident);
        Py_DECREF(name);
        return PyObject_Vectorcall(h->slow, args, nargs, kwnames);
    }
    Py_INCREF(parent);
    t0 = now_ns();
    /* rec[0] and rec[4] (the start) hold None, the start itself is in the recorder (exec_t0): no int
     * object per execution; hooks.pause puts it in the record if the execution is ever paused */
    PyObject *rec = h->spare;
    h->spare = NULL;
    if (rec == NULL) rec = PyList_New(7);
    if (rec == NULL) goto fail1;
    h->rec->exec_t0 = t0;
    PyObject *items[7] = {Py_None, s_zero, parent, ident, Py_None, name, mid != NULL ? mid : s_null};
    for (int i = 0; i < 7; i++) {
        PyObject *old = PyList_GET_ITEM(rec, i);
        if (old == items[i]) continue; /* a reused record: most items are what they were */
        Py_INCREF(items[i]);
        PyList_SET_ITEM(rec, i, items[i]);
        Py_XDECREF(old);
    }
    Py_INCREF(rec);
    PyObject *was0 = PyList_GET_ITEM(cur, 0); /* `parent` (which holds its own reference) */
    PyList_SET_ITEM(cur, 0, rec);
    Py_XDECREF(was0);
    PyObject *res = h->run_globals != NULL ? em_run(h, args, nargs, kwnames)
                                           : PyObject_Vectorcall(h->orig, args, nargs, kwnames);
    t1 = now_ns();
    PyObject *et, *ev, *etb;
    PyErr_Fetch(&et, &ev, &etb);
    PyObject *was = PyList_GET_ITEM(cur, 0);
    Py_INCREF(parent);
    PyList_SET_ITEM(cur, 0, parent);
    Py_XDECREF(was);
    int bad = 0;
    long long r0 = t0, r1 = 0;
    /* rec[0], rec[1] change only when the execution was paused (greenlet switch, nested execution) */
    PyObject *first = PyList_GET_SIZE(rec) > 1 ? PyList_GET_ITEM(rec, 0) : NULL;
    if (first == Py_None && PyList_GET_ITEM(rec, 1) == s_zero)
        ; /* ran in one piece */
    else if (first == Py_None) {
        PyErr_SetString(PyExc_TypeError, "execution record changed while it ran");
        bad = 1;
    } else if (list_get_ll(rec, 0, &r0) < 0 || list_get_ll(rec, 1, &r1) < 0)
        bad = 1;
    else { /* it was paused: its last piece, [last resume, t1] */
        int64_t *row = next_row(h->rec);
        if (row == NULL) bad = 1;
        else {
            Recorder *r = h->rec;
            row[L_T0] = r0 - r->origin;
            row[L_MSG] = mid_v;
            row[L_NAME] = name_v;
            row[L_PE] = r->pe;
            row[L_T1] = t1 - r->origin;
            row[L_PEER_PE] = row[L_ACTIVE] = row[L_PEER_COLL] = row[L_PEER_OBJ] = row[L_BYTES] = row[L_ARGS] = NUL;
            row[L_EXEC_T0] = t0 - r->origin;
            row[L_KIND] = K_PIECE;
            if (put_ident(row, ident) < 0) { r->n--; bad = 1; }
        }
    }
    if (!bad) {
        int64_t *row = next_row(h->rec);
        if (row == NULL) bad = 1;
        else {
            Recorder *r = h->rec;
            row[L_T0] = t0 - r->origin;
            row[L_MSG] = mid_v;
            row[L_NAME] = name_v;
            row[L_PE] = r->pe;
            row[L_PEER_PE] = mid_v == NUL ? NUL : (mid_v >> MSG_PE_SHIFT);
            row[L_T1] = t1 - r->origin;
            row[L_ACTIVE] = r1 + t1 - r0;
            if (put_tail(row, ident, 0) < 0) { r->n--; bad = 1; }
            else {
                r->end_t = t1;
                r->end_n = r->n;
            }
        }
    }
    if (Py_REFCNT(rec) == 1 && h->spare == NULL && PyList_GET_SIZE(rec) == 7)
        h->spare = rec; /* nothing else holds it: the next execution reuses it */
    else
        Py_DECREF(rec);
    Py_DECREF(parent);
    Py_DECREF(ident);
    Py_DECREF(name);
    if (bad) {
        Py_XDECREF(res);
        Py_XDECREF(et);
        Py_XDECREF(ev);
        Py_XDECREF(etb);
        return NULL;
    }
    PyErr_Restore(et, ev, etb);
    return res;
fail1:
    Py_DECREF(parent);
fail0:
    Py_DECREF(ident);
    Py_DECREF(name);
    return NULL;
}

/* packMsg(destObj, msgArgs, header): tags the message with its id, notes it in pend. */
static PyObject *hook_pack(Hook *h, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    PyObject *muted = PyList_GET_ITEM(h->mute, 0);
    if (kwnames != NULL || nargs != 3 || !PyDict_Check(args[2]) || (muted != s_zero && PyObject_IsTrue(muted)))
        return PyObject_Vectorcall(h->slow, args, nargs, kwnames);
    PyObject *dest = args[0], *header = args[2];
    long long t = now_ns();
    Recorder *r = h->rec;
    long long mid = r->msg_base + (++r->seq);
    PyObject *mido = ll_obj(mid);
    if (mido == NULL || PyDict_SetItem(header, s_pt_key, mido) < 0) {
        Py_XDECREF(mido);
        return NULL;
    }
    PyObject *pc = PyDict_GetItemWithError(h->state, s_pending_create); /* borrowed */
    if ((pc == NULL && PyErr_Occurred()) || (pc != NULL && pc != Py_None && PyDict_SetItem(header, s_pc_key, pc) < 0)) {
        Py_DECREF(mido);
        return NULL;
    }
    PyObject *msg = PyObject_Vectorcall(h->orig, args, nargs, NULL);
    if (msg == NULL) {
        Py_DECREF(mido);
        return NULL;
    }
    PyObject *m0 = PySequence_GetItem(msg, 0);
    if (m0 == NULL) goto fail;
    long long size = NUL;
    if (dest == Py_None) {
        size = PyObject_Length(m0);
        if (size < 0) goto fail_m0;
        PyObject *dc = PyDict_GetItemWithError(header, s_dcopy_key);
        if (dc == NULL && PyErr_Occurred()) goto fail_m0;
        if (dc != NULL && PyList_CheckExact(dc)) { /* charm4py's list of (i, kind, meta, nbytes) */
            for (Py_ssize_t i = 0; i < PyList_GET_SIZE(dc); i++) {
                PyObject *d = PyList_GET_ITEM(dc, i), *x;
                long long xv;
                if (PyTuple_CheckExact(d) && PyTuple_GET_SIZE(d) >= 4) {
                    if (get_ll(PyTuple_GET_ITEM(d, 3), &xv) < 0) goto fail_m0;
                } else {
                    if ((x = PySequence_GetItem(d, 3)) == NULL) goto fail_m0;
                    int bad = get_ll(x, &xv) < 0;
                    Py_DECREF(x);
                    if (bad) goto fail_m0;
                }
                size += xv;
            }
        } else if (dc != NULL && PyObject_IsTrue(dc)) {
            PyObject *it = PyObject_GetIter(dc), *d;
            if (it == NULL) goto fail_m0;
            while ((d = PyIter_Next(it)) != NULL) {
                PyObject *x = PySequence_GetItem(d, 3);
                Py_DECREF(d);
                long long xv;
                if (x == NULL || get_ll(x, &xv) < 0) {
                    Py_XDECREF(x);
                    Py_DECREF(it);
                    goto fail_m0;
                }
                Py_DECREF(x);
                size += xv;
            }
            Py_DECREF(it);
            if (PyErr_Occurred()) goto fail_m0;
        }
    }
    Pend *p = (Pend *)r->pend_spare;
    if (p == NULL || Py_REFCNT(p) != 1) { /* held elsewhere (pend[0] not taken, a Python hook's local) */
        p = PyObject_New(Pend, &PendType);
        if (p == NULL) goto fail_m0;
        p->m0 = NULL;
        Py_XSETREF(r->pend_spare, (PyObject *)p);
    }
    Py_XSETREF(p->m0, m0);
    p->mid = mid;
    p->size = size;
    p->t = t;
    Py_DECREF(mido);
    Py_INCREF(p);
    PyObject *was = PyList_GET_ITEM(h->pend, 0);
    PyList_SET_ITEM(h->pend, 0, (PyObject *)p);
    Py_XDECREF(was);
    return msg;
fail_m0:
    Py_DECREF(m0);
fail:
    Py_DECREF(mido);
    Py_DECREF(msg);
    return NULL;
}

/* CkArraySend(aid, index, ep, msg): the send row of the message packMsg noted. */
static PyObject *hook_asend(Hook *h, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (kwnames != NULL || nargs != 4) return PyObject_Vectorcall(h->slow, args, nargs, kwnames);
    PyObject *aid = args[0], *index = args[1], *ep = args[2], *msg = args[3];
    PyObject *coll = id_get(&h->colls, aid), *name = id_get(&h->names, ep);
    if (coll == NULL) {
        coll = PyDict_GetItemWithError(h->acodes, aid);
        if (coll == NULL && PyErr_Occurred()) return NULL;
        if (coll != NULL) id_put(&h->colls, aid, coll);
    }
    if (name == NULL) {
        name = PyDict_GetItemWithError(h->epcodes, ep);
        if (name == NULL && PyErr_Occurred()) return NULL;
        if (name != NULL) id_put(&h->names, ep, name);
    }
    if (coll == NULL || name == NULL || !PyTuple_Check(index) || PyTuple_GET_SIZE(index) > 2)
        return PyObject_Vectorcall(h->slow, args, nargs, kwnames);
    PyObject *p = PyList_GET_ITEM(h->pend, 0);
    Py_INCREF(p);
    PyObject *batched = PyObject_Vectorcall(h->orig, args, nargs, NULL);
    if (batched == NULL) {
        Py_DECREF(p);
        return NULL;
    }
    int is_batched = PyObject_IsTrue(batched);
    Py_DECREF(batched);
    if (is_batched < 0) goto fail;
    int is_pend = Py_TYPE(p) == &PendType;
    if (!is_pend && (!PyTuple_Check(p) || PyTuple_GET_SIZE(p) != 4)) goto done;
    PyObject *m0 = PySequence_GetItem(msg, 0);
    if (m0 == NULL) goto fail;
    Py_DECREF(m0); /* identity test only */
    if ((is_pend ? ((Pend *)p)->m0 : PyTuple_GET_ITEM(p, 0)) != m0) goto done;
    Py_INCREF(Py_None);
    PyObject *was = PyList_GET_ITEM(h->pend, 0);
    PyList_SET_ITEM(h->pend, 0, Py_None);
    Py_XDECREF(was); /* `p` holds its own reference */
    long long coll_v, name_v, mid, nbytes, t, peer = NUL, argsv = NUL, i0, i1;
    Recorder *r = h->rec;
    if (get_ll(coll, &coll_v) < 0 || get_ll(name, &name_v) < 0) goto fail;
    if (is_pend) { /* made by hook_pack */
        Pend *pp = (Pend *)p;
        mid = pp->mid;
        nbytes = pp->size;
        t = pp->t;
        Py_CLEAR(pp->m0); /* the message's bytes are not kept alive */
    } else if (get_ll(PyTuple_GET_ITEM(p, 1), &mid) < 0 || get_ll(PyTuple_GET_ITEM(p, 2), &nbytes) < 0 ||
               get_ll(PyTuple_GET_ITEM(p, 3), &t) < 0) {
        goto fail;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(index);
    if (n) {
        if (get_ll(PyTuple_GET_ITEM(index, 0), &i0) < 0) goto fail;
        if (n == 1) peer = i0;
        else {
            if (get_ll(PyTuple_GET_ITEM(index, 1), &i1) < 0) goto fail;
            peer = (long long)(((unsigned long long)i0 << h->index_bits) |
                               ((unsigned long long)i1 & ((1ULL << h->index_bits) - 1)));
        }
        argsv = is_batched ? h->combined : NUL;
    } else {
        argsv = h->bcast;
    }
    PyObject *rec = PyList_GET_ITEM(h->cur, 0);
    PyObject *ident = rec == Py_None ? h->no_object : NULL;
    if (ident == NULL) {
        if (!PyList_Check(rec) || PyList_GET_SIZE(rec) < 4) {
            PyErr_SetString(PyExc_TypeError, "execution record expected");
            goto fail;
        }
        ident = PyList_GET_ITEM(rec, 3);
    }
    int64_t *row = next_row(r);
    if (row == NULL) goto fail;
    row[L_T0] = t - r->origin;
    row[L_MSG] = mid;
    row[L_NAME] = name_v;
    row[L_PE] = r->pe;
    row[L_PEER_PE] = row[L_T1] = row[L_ACTIVE] = NUL;
    row[L_PEER_COLL] = coll_v;
    row[L_PEER_OBJ] = peer;
    row[L_BYTES] = nbytes;
    row[L_ARGS] = argsv;
    if (put_tail(row, ident, 1) < 0) {
        r->n--;
        goto fail;
    }
done:
    Py_DECREF(p);
    Py_RETURN_NONE;
fail:
    Py_DECREF(p);
    return NULL;
}

/* identity.set_step in compiled code: ident[STEP] = step and the record's packed row tails
 * (rowbuf.tails: the exec tail from L_PEER_COLL, the send tail from L_KIND) rebuilt for it. */
static int set_step(PyObject *ident, PyObject *step, long long step_v) {
    if (!PyList_Check(ident) || PyList_GET_SIZE(ident) <= I_STAIL) {
        PyErr_SetString(PyExc_TypeError, "identity record expected");
        return -1;
    }
    int64_t row[NF];
    if (put_ident(row, ident) < 0) return -1;
    row[L_STEP] = step_v;
    row[L_PEER_COLL] = row[L_PEER_OBJ] = row[L_BYTES] = row[L_ARGS] = row[L_EXEC_T0] = NUL;
    row[L_KIND] = K_EXEC;
    PyObject *xtail = PyBytes_FromStringAndSize((const char *)(row + L_PEER_COLL), (NF - L_PEER_COLL) * 8);
    if (xtail == NULL) return -1;
    row[L_KIND] = K_SEND;
    PyObject *stail = PyBytes_FromStringAndSize((const char *)(row + L_KIND), (NF - L_KIND) * 8);
    if (stail == NULL) {
        Py_DECREF(xtail);
        return -1;
    }
    Py_INCREF(step);
    PyList_SetItem(ident, I_STEP, step); /* steals the new references */
    PyList_SetItem(ident, I_XTAIL, xtail);
    PyList_SetItem(ident, I_STAIL, stail);
    return 0;
}

/* tracers.charm.step(n) (hooks.record_step): the running chare's later rows carry step n (set
 * explicitly), and a `step` row. Anything but an int, or no identity record, goes to record_step. */
static PyObject *hook_step(Hook *h, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (kwnames != NULL || nargs != 1 || !PyLong_CheckExact(args[0]))
        return PyObject_Vectorcall(h->slow, args, nargs, kwnames);
    PyObject *step = args[0], *rec = PyList_GET_ITEM(h->cur, 0), *ident = h->no_object;
    if (rec != Py_None) {
        if (!PyList_Check(rec) || PyList_GET_SIZE(rec) < 4 || !PyList_Check(PyList_GET_ITEM(rec, 3)))
            return PyObject_Vectorcall(h->slow, args, nargs, kwnames);
        ident = PyList_GET_ITEM(rec, 3);
    }
    long long step_v = PyLong_AsLongLong(step);
    if (step_v == -1 && PyErr_Occurred()) return NULL;
    long long t = now_ns();
    Py_INCREF(ident);
    if (rec != Py_None) {
        if (set_step(ident, step, step_v) < 0) goto fail;
        Py_INCREF(Py_True);
        PyList_SetItem(ident, I_EXPLICIT, Py_True);
    }
    Recorder *r = h->rec;
    int64_t *row = next_row(r);
    if (row == NULL) goto fail;
    if (put_ident(row, ident) < 0) {
        r->n--;
        goto fail;
    }
    row[L_T0] = t - r->origin;
    row[L_KIND] = K_STEP;
    row[L_PE] = r->pe;
    row[L_NAME] = h->step_name;
    row[L_STEP] = step_v;
    row[L_T1] = row[L_ACTIVE] = row[L_MSG] = row[L_PEER_PE] = row[L_PEER_COLL] = row[L_PEER_OBJ] = row[L_BYTES] =
        row[L_ARGS] = row[L_EXEC_T0] = NUL;
    Py_DECREF(ident);
    Py_RETURN_NONE;
fail:
    Py_DECREF(ident);
    return NULL;
}

static PyObject *H_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    static char *kw[] = {"kind", "orig", "slow", "recorder", "cur", "pend", "mute", "state", "acodes", "epcodes",
                         "no_object", "bcast", "combined", "index_bits", "run_globals", "em_failed", "em_block",
                         "ids", "step_name", NULL};
    const char *kind;
    PyObject *orig, *slow, *rec, *cur, *pend, *mute, *state, *acodes, *epcodes, *no_object;
    PyObject *run_globals = Py_None, *em_failed = Py_None, *em_block = Py_None, *ids = Py_None;
    long long bcast, combined, index_bits, step_name = NUL;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "sOOO!O!O!O!OO!O!O!LLL|OOOOL", kw, &kind, &orig, &slow, &RecorderType,
                                     &rec, &PyList_Type, &cur, &PyList_Type, &pend, &PyList_Type, &mute, &state,
                                     &PyDict_Type, &acodes, &PyDict_Type, &epcodes, &PyList_Type, &no_object,
                                     &bcast, &combined, &index_bits, &run_globals, &em_failed, &em_block, &ids, &step_name))
        return NULL;
    if (run_globals != Py_None && (!PyDict_Check(run_globals) || !PyCallable_Check(em_failed) ||
                                   !PyCallable_Check(em_block)))
        return PyErr_Format(PyExc_TypeError, "run_globals must be a dict, em_failed and em_block callables");
    if (ids != Py_None && !PyDict_Check(ids)) return PyErr_Format(PyExc_TypeError, "ids must be a dict");
    int k;
    vectorcallfunc fn;
    if (strcmp(kind, "exec") == 0) { k = H_EXEC; fn = (vectorcallfunc)hook_exec; }
    else if (strcmp(kind, "pack") == 0) { k = H_PACK; fn = (vectorcallfunc)hook_pack; }
    else if (strcmp(kind, "array_send") == 0) { k = H_ASEND; fn = (vectorcallfunc)hook_asend; }
    else if (strcmp(kind, "step") == 0) { k = H_STEP; fn = (vectorcallfunc)hook_step; }
    else return PyErr_Format(PyExc_ValueError, "unknown hook kind %s", kind);
    if (PyList_GET_SIZE(cur) < 1 || PyList_GET_SIZE(pend) < 1 || PyList_GET_SIZE(mute) < 1)
        return PyErr_Format(PyExc_ValueError, "cur, pend and mute must hold one item");
    PyObject *state_dict = PyObject_GenericGetDict(state, NULL);
    if (state_dict == NULL) return NULL;
    if (!PyDict_Check(state_dict)) {
        Py_DECREF(state_dict);
        return PyErr_Format(PyExc_TypeError, "state must have a __dict__");
    }
    Hook *h = (Hook *)type->tp_alloc(type, 0);
    if (h == NULL) {
        Py_DECREF(state_dict);
        return NULL;
    }
    h->kind = k;
    h->vectorcall = fn;
    PyObject **slots[] = {&h->orig, &h->slow, (PyObject **)&h->rec, &h->cur, &h->pend, &h->mute, &h->state,
                          &h->acodes, &h->epcodes, &h->no_object};
    PyObject *vals[] = {orig, slow, rec, cur, pend, mute, state_dict, acodes, epcodes, no_object};
    for (int i = 0; i < 10; i++) {
        Py_INCREF(vals[i]);
        *slots[i] = vals[i];
    }
    Py_DECREF(state_dict);
    if (run_globals != Py_None) {
        Py_INCREF(run_globals);
        Py_INCREF(em_failed);
        Py_INCREF(em_block);
        h->run_globals = run_globals;
        h->em_failed = em_failed;
        h->em_block = em_block;
    }
    if (ids != Py_None) {
        Py_INCREF(ids);
        h->ids = ids;
    }
    h->bcast = bcast;
    h->combined = combined;
    h->index_bits = index_bits;
    h->step_name = step_name;
    return (PyObject *)h;
}

static int H_traverse(Hook *h, visitproc visit, void *arg) {
    Py_VISIT(h->orig);
    Py_VISIT(h->slow);
    Py_VISIT(h->rec);
    Py_VISIT(h->cur);
    Py_VISIT(h->pend);
    Py_VISIT(h->mute);
    Py_VISIT(h->state);
    Py_VISIT(h->acodes);
    Py_VISIT(h->epcodes);
    Py_VISIT(h->no_object);
    Py_VISIT(h->spare);
    Py_VISIT(h->run_globals);
    Py_VISIT(h->em_failed);
    Py_VISIT(h->em_block);
    Py_VISIT(h->ids);
    int err = id_traverse(&h->em_names, visit, arg);
    if (!err) err = id_traverse(&h->em_mnames, visit, arg);
    if (!err) err = id_traverse(&h->idents, visit, arg);
    if (!err) err = id_traverse(&h->colls, visit, arg);
    return err ? err : id_traverse(&h->names, visit, arg);
}

static int H_clear(Hook *h) {
    Py_CLEAR(h->orig);
    Py_CLEAR(h->slow);
    Py_CLEAR(h->rec);
    Py_CLEAR(h->cur);
    Py_CLEAR(h->pend);
    Py_CLEAR(h->mute);
    Py_CLEAR(h->state);
    Py_CLEAR(h->acodes);
    Py_CLEAR(h->epcodes);
    Py_CLEAR(h->no_object);
    Py_CLEAR(h->spare);
    Py_CLEAR(h->run_globals);
    Py_CLEAR(h->em_failed);
    Py_CLEAR(h->em_block);
    Py_CLEAR(h->ids);
    id_clear(&h->em_names);
    id_clear(&h->em_mnames);
    id_clear(&h->idents);
    id_clear(&h->colls);
    id_clear(&h->names);
    return 0;
}

static void H_dealloc(Hook *h) {
    PyObject_GC_UnTrack(h);
    H_clear(h);
    Py_TYPE(h)->tp_free((PyObject *)h);
}

/* Bound as a method when set on a class (EntryMethod._run), like a Python function. */
static PyObject *H_get(PyObject *self, PyObject *obj, PyObject *type) {
    if (obj == NULL || obj == Py_None) {
        Py_INCREF(self);
        return self;
    }
    return PyMethod_New(self, obj);
}

/* forget(obj): drops what the hook cached about a chare (it leaves this PE, or its identity changes). */
static PyObject *H_forget(Hook *h, PyObject *obj) {
    size_t s = id_slot(obj);
    if (h->idents.key[s] == obj) {
        Py_CLEAR(h->idents.key[s]);
        Py_CLEAR(h->idents.val[s]);
    }
    Py_RETURN_NONE;
}

static PyMethodDef H_methods[] = {
    {"forget", (PyCFunction)H_forget, METH_O, "forget(obj): drops what the hook cached about a chare"}, {NULL}};

static PyMemberDef H_members[] = {
    {"orig", T_OBJECT, offsetof(Hook, orig), READONLY, "the wrapped callable"},
    {"slow", T_OBJECT, offsetof(Hook, slow), READONLY, "the Python hook of the cases not handled here"},
    {NULL}};

static PyTypeObject HookType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tracers.charm._recorder.Hook",
    .tp_basicsize = sizeof(Hook),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_doc = "Hook(kind, ...): the fast path of one tracer hook ('exec', 'pack', 'array_send').",
    .tp_new = H_new,
    .tp_dealloc = (destructor)H_dealloc,
    .tp_traverse = (traverseproc)H_traverse,
    .tp_clear = (inquiry)H_clear,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(Hook, vectorcall),
    .tp_descr_get = H_get,
    .tp_methods = H_methods,
    .tp_members = H_members,
};

static PyObject *M_clock(PyObject *self, PyObject *Py_UNUSED(ignored)) { return PyLong_FromLongLong(now_ns()); }

static PyObject *M_set_fake_skew(PyObject *self, PyObject *args) {
    if (!PyArg_ParseTuple(args, "LdL", &skew_offset, &skew_drift, &skew_origin)) return NULL;
    skew_on = 1;
    Py_RETURN_NONE;
}

static PyObject *M_use_null(PyObject *self, PyObject *obj) {
    long long v = PyLong_AsLongLong(obj);
    if (v == -1 && PyErr_Occurred()) return NULL;
    if (v != NUL) return PyErr_Format(PyExc_ValueError, "the null marker is INT64_MIN");
    Py_INCREF(obj);
    Py_XSETREF(s_null, obj);
    Py_RETURN_NONE;
}

static PyMethodDef M_methods[] = {
    {"clock", M_clock, METH_NOARGS, "CLOCK_MONOTONIC in ns (time.monotonic_ns)"},
    {"set_fake_skew", M_set_fake_skew, METH_VARARGS,
     "set_fake_skew(offset_ns, drift, origin_ns): clock() and the recorder's times run off (tests)"},
    {"use_null", M_use_null, METH_O, "use_null(NULL): the null object Python code passes (read without conversion)"},
    {NULL}};

static struct PyModuleDef moduledef = {PyModuleDef_HEAD_INIT, .m_name = "_recorder",
                                       .m_doc = "Native event recorder.", .m_size = -1, .m_methods = M_methods};

PyMODINIT_FUNC PyInit__recorder(void) {
    if (PyType_Ready(&RecorderType) < 0 || PyType_Ready(&DispatchType) < 0 || PyType_Ready(&HookType) < 0 ||
        PyType_Ready(&PendType) < 0)
        return NULL;
    if (!(s_pt_key = PyLong_FromLong(HEADER_MSG_KEY)) || !(s_pc_key = PyLong_FromLong(HEADER_CREATE_KEY)) ||
        !(s_dcopy_key = PyBytes_FromString("dcopy")) || !(s_pt_attr = PyUnicode_InternFromString("_pt")) ||
        !(s_pending_create = PyUnicode_InternFromString("pending_create")) || !(s_zero = PyLong_FromLong(0)) ||
        !(s_null = PyLong_FromLongLong(NUL)) || !(s_charm = PyUnicode_InternFromString("charm")) ||
        !(s_last_em_exec = PyUnicode_InternFromString("last_em_exec")) ||
        !(s_name = PyUnicode_InternFromString("name")) || !(s_ret_fut = PyUnicode_InternFromString("ret_fut")) ||
        !(s_block_key = PyBytes_FromString("block")))
        return NULL;
    pthread_atfork(NULL, NULL, pf_atfork_child);
    PyObject *m = PyModule_Create(&moduledef);
    if (m == NULL) return NULL;
    Py_INCREF(&RecorderType);
    Py_INCREF(&DispatchType);
    Py_INCREF(&HookType);
    if (PyModule_AddObject(m, "Hook", (PyObject *)&HookType) < 0 ||
        PyModule_AddObject(m, "Recorder", (PyObject *)&RecorderType) < 0 ||
        PyModule_AddObject(m, "Dispatch", (PyObject *)&DispatchType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    if (PyModule_AddIntConstant(m, "ROW_FIELDS", NF) < 0 || PyModule_AddIntConstant(m, "MSG_KEY", HEADER_MSG_KEY) < 0 ||
        PyModule_AddIntConstant(m, "CREATE_KEY", HEADER_CREATE_KEY) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
