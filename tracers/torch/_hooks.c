/* The torch tracer's per-step recorder and hooks, compiled (tracers/torch/native.py chooses them).

A training step's hooks touch only this file's small structs: a `Rec` holds the tracer's step state
(step_start, fwd_end, ... as C ints, which tracers.torch.native.NativeTracer exposes as the Tracer's
attributes) and a preallocated buffer of fixed-size records (phase, bucket, step end: 4 int64 each).
The Python tracer's flat lists (Tracer._phases, _buckets, _chunks, which the flush packs) receive
the records only when Python reads them (`Rec.drain`, called by NativeTracer before every method
that does) or when the buffer is full, so the rows are the ones the Python hooks (hooks.py, ddp.py,
buckets.py) append. A cold hook pays for every cache line and page it touches, so a step touches
few: no Python frame, no attribute dictionary, no int object per value.

Rare paths call the tracer's Python methods: a failure, a step end that is not the plain case
(rows of the program's own, step callbacks, explicit steps, no start), a flush, an optimizer's
first step, a module whose buckets are not hooked yet. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <limits.h>
#include <time.h>

#define NONE LLONG_MIN
enum { K_FORWARD, K_BACKWARD, K_PRE, K_POST, K_BUCKET };
enum { R_PHASE, R_BUCKET, R_CHUNK };
enum { P_FORWARD, P_LOSS, P_BACKWARD, P_OPTIMIZER };
#define REC_WIDTH 4
#define REC_CAP 8192  /* records (~1,100 steps of one bucket): a flush every 2 s hands them over first */

static PyObject *S_dict, *S_buckets_attr, *S_ready, *S_active, *S_tries, *S_try_install, *S_require_sync,
    *S_dcp_module, *S_flush, *S_overflow, *S_name, *S_phase_names[4];

typedef struct {
    PyObject_HEAD
    /* step state (NONE: None) */
    long long step_start, fwd_end, last_launch, prev_end, flushed_at, interval, counter, step;
    int forward_seen, explicit_steps, closed, slow, dcp_installed;
    /* clock: None = CLOCK_REALTIME (time.time_ns), else a callable; trace time = clock - base */
    PyObject *clock;
    long long base;
    /* records not yet in the tracer's lists, and bucket launches of the backward in progress */
    long long ev[REC_CAP * REC_WIDTH];
    Py_ssize_t nev;
    long long *launch;  /* (t0, bucket id) pairs */
    Py_ssize_t nlaunch, lcap;
    PyObject *rests;    /* bucket id -> (None, k, bytes, dtype, group, group_size) */
    PyObject *tr, *phases, *buckets, *chunks, *callbacks;
    Py_ssize_t phases_max, buckets_max, flush_steps;
    /* the optimizer of the last step: its next number, and its pending pre hook */
    PyObject *opt;
    long long opt_next, pend_t0, pend_n;
    int pending;
} Rec;

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    int kind;
    Rec *rec;
    PyObject *wrapped;  /* forward / backward: the torch function called inside */
    PyObject *fn;       /* pre: first_number(opt); post: install_dcp(tr) */
    PyObject *table;    /* pre: id(optimizer) -> number of its next step; bucket: the module's __dict__ */
    PyObject *module;   /* bucket: the DDP module; forward: the last module whose buckets are hooked */
    long long id;       /* bucket: its id in rec->rests */
    Py_ssize_t max_tries;
} Hook;

static int read_clock(Rec *r, long long *out) {
    if (r->clock == Py_None) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        *out = (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec - r->base;
        return 0;
    }
    PyObject *v = PyObject_CallNoArgs(r->clock);
    if (v == NULL) return -1;
    long long x = PyLong_AsLongLong(v);
    Py_DECREF(v);
    if (x == -1 && PyErr_Occurred()) return -1;
    *out = x - r->base;
    return 0;
}

/* --- records into the tracer's lists ------------------------------------------------------- */

static int list_add_ll(PyObject *list, long long v) {
    PyObject *o = PyLong_FromLongLong(v);
    if (o == NULL) return -1;
    int rc = PyList_Append(list, o);
    Py_DECREF(o);
    return rc;
}

/* a list back to its first n items (never allocates, so it cannot fail) */
static void list_truncate(PyObject *list, Py_ssize_t n) {
    while (PyList_GET_SIZE(list) > n) {
        Py_ssize_t last = PyList_GET_SIZE(list) - 1;
        PyObject *item = PyList_GET_ITEM(list, last);
        Py_SET_SIZE(list, last);
        Py_DECREF(item);
    }
}

/* one record into the tracer's lists; on an error (MemoryError) none of its values stay in them */
static int hand_over(Rec *r, long long *e) {
    Py_ssize_t np = PyList_GET_SIZE(r->phases), nb = PyList_GET_SIZE(r->buckets), nc = PyList_GET_SIZE(r->chunks);
    int rc;
    if (e[0] == R_PHASE) {
        rc = PyList_Append(r->phases, S_phase_names[e[1]]) < 0 || list_add_ll(r->phases, e[2]) < 0 ||
             list_add_ll(r->phases, e[3]) < 0;
    } else if (e[0] == R_BUCKET) {
        PyObject *rest = PyList_GET_ITEM(r->rests, e[1]);
        rc = list_add_ll(r->buckets, e[2]) < 0 || list_add_ll(r->buckets, e[3]) < 0;
        for (Py_ssize_t k = 1; rc == 0 && k < PyTuple_GET_SIZE(rest); k++)
            rc = PyList_Append(r->buckets, PyTuple_GET_ITEM(rest, k)) < 0;
    } else {
        rc = list_add_ll(r->chunks, np) < 0 || list_add_ll(r->chunks, nb) < 0 || list_add_ll(r->chunks, e[1]) < 0 ||
             list_add_ll(r->chunks, e[2]) < 0 || list_add_ll(r->chunks, e[3]) < 0;
    }
    if (rc) {
        list_truncate(r->phases, np);
        list_truncate(r->buckets, nb);
        list_truncate(r->chunks, nc);
    }
    return rc ? -1 : 0;
}

/* The buffered records into the tracer's lists, in order. On an error the record that failed and
   those after it stay in the buffer, whole and in order (its values half handed over are taken
   back), so a later drain hands them over: a MemoryError loses no record. */
static int drain(Rec *r) {
    if (r->phases == NULL) { r->nev = 0; return 0; }
    Py_ssize_t i = 0;
    while (i < r->nev && hand_over(r, r->ev + i * REC_WIDTH) == 0) i++;
    Py_ssize_t left = r->nev - i;
    if (left) memmove(r->ev, r->ev + i * REC_WIDTH, left * REC_WIDTH * sizeof(long long));
    r->nev = left;
    return left ? -1 : 0;
}

static int call_method0(PyObject *obj, PyObject *name) {
    PyObject *v = PyObject_CallMethodNoArgs(obj, name);
    if (v == NULL) return -1;
    Py_DECREF(v);
    return 0;
}

/* one record; a full buffer goes to the lists, and past their limits the tracer flushes */
static int push(Rec *r, long long kind, long long a, long long b, long long c) {
    if (r->nev == REC_CAP) {
        if (drain(r) < 0) return -1;
        if ((PyList_GET_SIZE(r->phases) > r->phases_max || PyList_GET_SIZE(r->buckets) > r->buckets_max) &&
            call_method0(r->tr, S_overflow) < 0)
            return -1;
        if (r->nev == REC_CAP && drain(r) < 0) return -1;
    }
    long long *e = r->ev + r->nev * REC_WIDTH;
    e[0] = kind; e[1] = a; e[2] = b; e[3] = c;
    r->nev++;
    return 0;
}

/* --- the Rec type ------------------------------------------------------------------------- */

static int Rec_traverse(Rec *r, visitproc visit, void *arg) {
    Py_VISIT(r->clock); Py_VISIT(r->rests); Py_VISIT(r->tr); Py_VISIT(r->phases); Py_VISIT(r->buckets);
    Py_VISIT(r->chunks); Py_VISIT(r->callbacks); Py_VISIT(r->opt);
    return 0;
}

static int Rec_clear(Rec *r) {
    Py_CLEAR(r->clock); Py_CLEAR(r->rests); Py_CLEAR(r->tr); Py_CLEAR(r->phases); Py_CLEAR(r->buckets);
    Py_CLEAR(r->chunks); Py_CLEAR(r->callbacks); Py_CLEAR(r->opt);
    return 0;
}

static void Rec_dealloc(Rec *r) {
    PyObject_GC_UnTrack(r);
    Rec_clear(r);
    PyMem_Free(r->launch);
    Py_TYPE(r)->tp_free((PyObject *)r);
}

static PyObject *Rec_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    Rec *r = (Rec *)type->tp_alloc(type, 0);
    if (r == NULL) return NULL;
    r->step_start = r->fwd_end = r->last_launch = r->prev_end = r->step = NONE;
    r->flushed_at = r->counter = 0;
    r->interval = LLONG_MAX;
    r->clock = Py_NewRef(Py_None);
    r->rests = PyList_New(0);
    r->phases_max = r->buckets_max = r->flush_steps = PY_SSIZE_T_MAX;
    if (r->rests == NULL) { Py_DECREF(r); return NULL; }
    return (PyObject *)r;
}

static PyObject *Rec_bind(Rec *r, PyObject *args) {
    PyObject *tr, *clock, *phases, *buckets, *chunks, *callbacks;
    long long base;
    Py_ssize_t pmax, bmax, fsteps;
    if (!PyArg_ParseTuple(args, "OOLO!O!O!O!nnn:bind", &tr, &clock, &base, &PyList_Type, &phases, &PyList_Type,
                          &buckets, &PyList_Type, &chunks, &PyList_Type, &callbacks, &pmax, &bmax, &fsteps))
        return NULL;
    Py_XSETREF(r->tr, Py_NewRef(tr));
    Py_XSETREF(r->clock, Py_NewRef(clock));
    Py_XSETREF(r->phases, Py_NewRef(phases));
    Py_XSETREF(r->buckets, Py_NewRef(buckets));
    Py_XSETREF(r->chunks, Py_NewRef(chunks));
    Py_XSETREF(r->callbacks, Py_NewRef(callbacks));
    r->base = base;
    r->phases_max = pmax;
    r->buckets_max = bmax;
    r->flush_steps = fsteps;
    Py_RETURN_NONE;
}

static PyObject *Rec_drain(Rec *r, PyObject *unused) {
    if (drain(r) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *Rec_add_bucket(Rec *r, PyObject *rest) {
    if (!PyTuple_Check(rest)) { PyErr_SetString(PyExc_TypeError, "add_bucket: a tuple"); return NULL; }
    if (PyList_Append(r->rests, rest) < 0) return NULL;
    return PyLong_FromSsize_t(PyList_GET_SIZE(r->rests) - 1);
}

static PyObject *Rec_forget_optimizer(Rec *r, PyObject *opt) {
    if (r->opt == opt) { Py_CLEAR(r->opt); r->pending = 0; }
    Py_RETURN_NONE;
}

static PyMethodDef Rec_methods[] = {
    {"bind", (PyCFunction)Rec_bind, METH_VARARGS,
     "bind(tr, clock, base, phases, buckets, chunks, step_callbacks, phases_max, buckets_max, flush_steps)"},
    {"drain", (PyCFunction)Rec_drain, METH_NOARGS, "hands the buffered records to the tracer's lists"},
    {"add_bucket", (PyCFunction)Rec_add_bucket, METH_O, "a bucket's row after its times; returns its id"},
    {"forget_optimizer", (PyCFunction)Rec_forget_optimizer, METH_O, "after load_state_dict: re-read its step"},
    {NULL}};

/* step state as attributes: int64 fields (None <-> NONE) and flags */
#define LL_FIELD(f) ((void *)offsetof(Rec, f))
static PyObject *get_ll(Rec *r, void *off) {
    long long v = *(long long *)((char *)r + (size_t)off);
    if (v == NONE) Py_RETURN_NONE;
    return PyLong_FromLongLong(v);
}
static int set_ll(Rec *r, PyObject *value, void *off) {
    long long v;
    if (value == NULL || value == Py_None) v = NONE;
    else if ((v = PyLong_AsLongLong(value)) == -1 && PyErr_Occurred()) return -1;
    *(long long *)((char *)r + (size_t)off) = v;
    return 0;
}
#define FLAG_FIELD(f) ((void *)offsetof(Rec, f))
static PyObject *get_flag(Rec *r, void *off) { return PyBool_FromLong(*(int *)((char *)r + (size_t)off)); }
static int set_flag(Rec *r, PyObject *value, void *off) {
    int t = value == NULL ? 0 : PyObject_IsTrue(value);
    if (t < 0) return -1;
    *(int *)((char *)r + (size_t)off) = t;
    return 0;
}

static PyGetSetDef Rec_getset[] = {
    {"step_start", (getter)get_ll, (setter)set_ll, NULL, LL_FIELD(step_start)},
    {"fwd_end", (getter)get_ll, (setter)set_ll, NULL, LL_FIELD(fwd_end)},
    {"last_launch", (getter)get_ll, (setter)set_ll, NULL, LL_FIELD(last_launch)},
    {"prev_end", (getter)get_ll, (setter)set_ll, NULL, LL_FIELD(prev_end)},
    {"flushed_at", (getter)get_ll, (setter)set_ll, NULL, LL_FIELD(flushed_at)},
    {"flush_interval_ns", (getter)get_ll, (setter)set_ll, NULL, LL_FIELD(interval)},
    {"counter", (getter)get_ll, (setter)set_ll, NULL, LL_FIELD(counter)},
    {"step", (getter)get_ll, (setter)set_ll, NULL, LL_FIELD(step)},
    {"forward_seen", (getter)get_flag, (setter)set_flag, NULL, FLAG_FIELD(forward_seen)},
    {"explicit", (getter)get_flag, (setter)set_flag, NULL, FLAG_FIELD(explicit_steps)},
    {"closed", (getter)get_flag, (setter)set_flag, NULL, FLAG_FIELD(closed)},
    {"slow", (getter)get_flag, (setter)set_flag, NULL, FLAG_FIELD(slow)},
    {"dcp_installed", (getter)get_flag, (setter)set_flag, NULL, FLAG_FIELD(dcp_installed)},
    {NULL}};

static PyTypeObject RecType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "tracers.torch._hooks.Rec",
    .tp_doc = "One rank's step state and record buffer (module doc).",
    .tp_basicsize = sizeof(Rec),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_new = Rec_new,
    .tp_traverse = (traverseproc)Rec_traverse,
    .tp_clear = (inquiry)Rec_clear,
    .tp_dealloc = (destructor)Rec_dealloc,
    .tp_methods = Rec_methods,
    .tp_getset = Rec_getset,
};

/* --- the hooks ---------------------------------------------------------------------------- */

/* DistributedDataParallel.forward (ddp._traced_forward) */
static PyObject *hook_forward(Hook *h, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    if (PyVectorcall_NARGS(nargsf) < 1) return PyObject_Vectorcall(h->wrapped, args, nargsf, kwnames);
    Rec *r = h->rec;
    PyObject *self = args[0], *watch = NULL;
    if (self != h->module) {  /* not the module last seen with its buckets hooked: is it attached? */
        PyObject *d = PyObject_GetAttr(self, S_dict);
        if (d == NULL) return NULL;
        watch = PyDict_Check(d) ? PyDict_GetItemWithError(d, S_buckets_attr) : NULL;
        Py_XINCREF(watch);
        Py_DECREF(d);
        if (watch == NULL || watch == Py_None) {
            Py_XDECREF(watch);
            if (PyErr_Occurred()) return NULL;
            return PyObject_Vectorcall(h->wrapped, args, nargsf, kwnames);
        }
    }
    PyObject *out = NULL;
    long long t0, t1;
    if (read_clock(r, &t0) < 0) goto done;
    r->forward_seen = 1;
    if (r->step_start == NONE) r->step_start = t0;
    out = PyObject_Vectorcall(h->wrapped, args, nargsf, kwnames);
    if (out == NULL) goto done;
    if (read_clock(r, &t1) < 0 || push(r, R_PHASE, P_FORWARD, t0, t1) < 0) goto fail;
    r->fwd_end = t1;
    if (watch != NULL) {  /* BucketWatch.try_install until DDP has rebuilt its buckets */
        PyObject *v = PyObject_GetAttr(watch, S_ready);
        if (v == NULL) goto fail;
        int ready = PyObject_IsTrue(v);
        Py_DECREF(v);
        if (ready < 0) goto fail;
        if (!ready) {
            if ((v = PyObject_GetAttr(watch, S_active)) == NULL) goto fail;
            int active = PyObject_IsTrue(v);
            Py_DECREF(v);
            if (active < 0) goto fail;
            if (active) {
                if ((v = PyObject_GetAttr(watch, S_tries)) == NULL) goto fail;
                Py_ssize_t k = PyLong_AsSsize_t(v);
                Py_DECREF(v);
                if (k == -1 && PyErr_Occurred()) goto fail;
                if (k < h->max_tries) {
                    if ((v = PyObject_CallMethodNoArgs(watch, S_try_install)) == NULL) goto fail;
                    ready = PyObject_IsTrue(v);
                    Py_DECREF(v);
                    if (ready < 0) goto fail;
                }
            }
        }
        if (ready) Py_XSETREF(h->module, Py_NewRef(self));
    }
    goto done;
fail:
    Py_CLEAR(out);
done:
    Py_XDECREF(watch);
    return out;
}

/* The end of a backward (hooks._install_backward's finally): the launched buckets end here. */
static int backward_end(Rec *r, long long t0) {
    long long t1, launch = r->last_launch;
    if (read_clock(r, &t1) < 0) return -1;
    if (r->nlaunch) {
        long long last = r->launch[(r->nlaunch - 1) * 2];
        if (launch == NONE || last > launch) launch = last;
        for (Py_ssize_t i = 0; i < r->nlaunch; i++)
            if (push(r, R_BUCKET, r->launch[2 * i + 1], r->launch[2 * i], t1) < 0) return -1;
        r->nlaunch = 0;
    }
    return push(r, R_PHASE, P_BACKWARD, t0, launch != NONE && launch >= t0 ? launch : t1);
}

/* torch.autograd.backward (hooks._install_backward) */
static PyObject *hook_backward(Hook *h, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    Rec *r = h->rec;
    long long t0;
    if (read_clock(r, &t0) < 0) return NULL;
    if (r->step_start == NONE) r->step_start = t0;
    if (r->fwd_end != NONE) {
        if (push(r, R_PHASE, P_LOSS, r->fwd_end, t0) < 0) return NULL;
        r->fwd_end = NONE;
    }
    r->last_launch = NONE;
    PyObject *res = PyObject_Vectorcall(h->wrapped, args, nargsf, kwnames);
    PyObject *et = NULL, *ev = NULL, *tb = NULL;
    if (res == NULL) {
        int is_exc = PyErr_ExceptionMatches(PyExc_Exception);
        PyErr_Fetch(&et, &ev, &tb);
        PyErr_NormalizeException(&et, &ev, &tb);
        if (is_exc && ev != NULL) {
            if (tb != NULL) PyException_SetTraceback(ev, tb);
            PyObject *v = PyObject_CallMethod(r->tr, "failure", "OsL", ev, "backward", t0);
            if (v == NULL) {  /* the recorder's own error replaces the program's, as in Python */
                Py_XDECREF(et); Py_XDECREF(ev); Py_XDECREF(tb);
                et = ev = tb = NULL;
                PyErr_Fetch(&et, &ev, &tb);
            } else {
                Py_DECREF(v);
            }
        }
    }
    if (backward_end(r, t0) < 0) {  /* an error here replaces the pending one, as in a finally block */
        Py_XDECREF(et); Py_XDECREF(ev); Py_XDECREF(tb);
        Py_XDECREF(res);
        return NULL;
    }
    if (res == NULL) PyErr_Restore(et, ev, tb);
    return res;
}

/* optimizer step pre hook (hooks._install_optimizer.pre) */
static PyObject *hook_pre(Hook *h, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    if (PyVectorcall_NARGS(nargsf) < 1) { PyErr_SetString(PyExc_TypeError, "pre hook: no optimizer"); return NULL; }
    Rec *r = h->rec;
    PyObject *opt = args[0];
    long long n;
    if (opt == r->opt) {
        n = r->opt_next;
    } else {  /* another optimizer: the last one's count goes to the table, this one's comes from it */
        if (r->opt != NULL) {
            PyObject *k = PyLong_FromVoidPtr(r->opt), *v = PyLong_FromLongLong(r->opt_next);
            int bad = k == NULL || v == NULL || PyDict_SetItem(h->table, k, v) < 0;
            Py_XDECREF(k); Py_XDECREF(v);
            if (bad) return NULL;
            Py_CLEAR(r->opt);
        }
        PyObject *k = PyLong_FromVoidPtr(opt);
        if (k == NULL) return NULL;
        PyObject *v = PyDict_GetItemWithError(h->table, k);
        Py_DECREF(k);
        if (v != NULL) Py_INCREF(v);
        else if (PyErr_Occurred() || (v = PyObject_CallOneArg(h->fn, opt)) == NULL) return NULL;
        n = PyLong_AsLongLong(v);
        Py_DECREF(v);
        if (n == -1 && PyErr_Occurred()) return NULL;
        r->opt = Py_NewRef(opt);
    }
    r->opt_next = n + 1;
    if (read_clock(r, &r->pend_t0) < 0) return NULL;
    r->pend_n = n;
    r->pending = 1;
    Py_RETURN_NONE;
}

/* Tracer.end_step(n, None, t1) for the plain case, else the method itself */
static int end_step(Rec *r, long long n, long long t1) {
    long long start = NONE;
    int plain = !r->slow && !r->closed && PyList_GET_SIZE(r->callbacks) == 0;
    if (plain) {
        start = r->forward_seen || r->prev_end == NONE ? r->step_start : r->prev_end;
        plain = start != NONE;
    }
    if (!plain) {
        if (drain(r) < 0) return -1;
        PyObject *v = PyObject_CallMethod(r->tr, "end_step", "LOL", n, Py_None, t1);
        if (v == NULL) return -1;
        Py_DECREF(v);
        return 0;
    }
    if (push(r, R_CHUNK, n, start, t1) < 0) return -1;
    r->counter++;
    r->step = n + 1;
    r->step_start = r->fwd_end = NONE;
    r->forward_seen = 0;
    r->prev_end = t1;
    if (t1 - r->flushed_at > r->interval || PyList_GET_SIZE(r->chunks) + r->nev * 5 > r->flush_steps)
        return call_method0(r->tr, S_flush);
    return 0;
}

/* optimizer step post hook (hooks._install_optimizer.post) */
static PyObject *hook_post(Hook *h, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    if (PyVectorcall_NARGS(nargsf) < 1) { PyErr_SetString(PyExc_TypeError, "post hook: no optimizer"); return NULL; }
    Rec *r = h->rec;
    long long t1, t0, n;
    if (read_clock(r, &t1) < 0) return NULL;
    if (r->pending && args[0] == r->opt) {
        t0 = r->pend_t0;
        n = r->pend_n;
    } else {
        t0 = t1;
        n = r->counter;
    }
    r->pending = 0;
    if (push(r, R_PHASE, P_OPTIMIZER, t0, t1) < 0) return NULL;
    if (!r->explicit_steps && end_step(r, n, t1) < 0) return NULL;
    if (!r->dcp_installed) {
        PyObject *mods = PyImport_GetModuleDict();
        PyObject *m = PyDict_GetItemWithError(mods, S_dcp_module);
        if (m == NULL && PyErr_Occurred()) return NULL;
        if (m != NULL) {
            PyObject *v = PyObject_CallOneArg(h->fn, r->tr);
            if (v == NULL) return NULL;
            Py_DECREF(v);
        }
    }
    Py_RETURN_NONE;
}

/* a DDP bucket's gradient hook (buckets.BucketWatch._hook) */
static PyObject *hook_bucket(Hook *h, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    Rec *r = h->rec;
    PyObject *v = PyDict_GetItemWithError(h->table, S_require_sync);  /* under no_sync() DDP reduces nothing */
    int sync;
    if (v != NULL) {
        sync = PyObject_IsTrue(v);
    } else {
        if (PyErr_Occurred() || (v = PyObject_GetAttr(h->module, S_require_sync)) == NULL) return NULL;
        sync = PyObject_IsTrue(v);
        Py_DECREF(v);
    }
    if (sync < 0) return NULL;
    if (sync) {
        if (r->nlaunch == r->lcap) {
            Py_ssize_t cap = r->lcap ? 2 * r->lcap : 64;
            long long *p = PyMem_Realloc(r->launch, cap * 2 * sizeof(long long));
            if (p == NULL) return PyErr_NoMemory();
            r->launch = p;
            r->lcap = cap;
        }
        if (read_clock(r, &r->launch[2 * r->nlaunch]) < 0) return NULL;
        r->launch[2 * r->nlaunch + 1] = h->id;
        r->nlaunch++;
    }
    Py_RETURN_NONE;
}

static int Hook_traverse(Hook *h, visitproc visit, void *arg) {
    Py_VISIT(h->rec); Py_VISIT(h->wrapped); Py_VISIT(h->fn); Py_VISIT(h->table); Py_VISIT(h->module);
    return 0;
}

static int Hook_clear(Hook *h) {
    Py_CLEAR(h->rec); Py_CLEAR(h->wrapped); Py_CLEAR(h->fn); Py_CLEAR(h->table); Py_CLEAR(h->module);
    return 0;
}

static void Hook_dealloc(Hook *h) {
    PyObject_GC_UnTrack(h);
    Hook_clear(h);
    Py_TYPE(h)->tp_free((PyObject *)h);
}

/* forward binds like a function (it is a class attribute of DistributedDataParallel) */
static PyObject *Hook_get(PyObject *self, PyObject *obj, PyObject *type) {
    if (obj == NULL || obj == Py_None || ((Hook *)self)->kind != K_FORWARD) return Py_NewRef(self);
    return PyMethod_New(self, obj);
}

static PyObject *Hook_get_name(Hook *h, void *closure) {
    if (h->wrapped != NULL) return PyObject_GetAttr(h->wrapped, S_name);
    return PyUnicode_FromString("paradise_hook");
}

static PyMemberDef Hook_members[] = {
    {"wrapped", T_OBJECT_EX, offsetof(Hook, wrapped), 0, "the torch function called inside (forward, backward)"},
    {"__wrapped__", T_OBJECT_EX, offsetof(Hook, wrapped), READONLY, NULL},
    {"kind", T_INT, offsetof(Hook, kind), READONLY, "0 forward, 1 backward, 2 pre, 3 post, 4 bucket"},
    {NULL}};

static PyGetSetDef Hook_getset[] = {{"__name__", (getter)Hook_get_name, NULL, NULL, NULL}, {NULL}};

static PyTypeObject HookType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "tracers.torch._hooks.Hook",
    .tp_doc = "A compiled per-step hook of the torch tracer (made by this module's functions).",
    .tp_basicsize = sizeof(Hook),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(Hook, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_descr_get = Hook_get,
    .tp_traverse = (traverseproc)Hook_traverse,
    .tp_clear = (inquiry)Hook_clear,
    .tp_dealloc = (destructor)Hook_dealloc,
    .tp_members = Hook_members,
    .tp_getset = Hook_getset,
};

static Hook *new_hook(int kind, PyObject *rec) {
    if (!PyObject_TypeCheck(rec, &RecType)) { PyErr_SetString(PyExc_TypeError, "a Rec"); return NULL; }
    Hook *h = PyObject_GC_New(Hook, &HookType);
    if (h == NULL) return NULL;
    memset((char *)h + offsetof(Hook, vectorcall), 0, sizeof(Hook) - offsetof(Hook, vectorcall));
    static const vectorcallfunc fns[] = {(vectorcallfunc)hook_forward, (vectorcallfunc)hook_backward,
                                         (vectorcallfunc)hook_pre, (vectorcallfunc)hook_post,
                                         (vectorcallfunc)hook_bucket};
    h->vectorcall = fns[kind];
    h->kind = kind;
    h->rec = (Rec *)Py_NewRef(rec);
    PyObject_GC_Track(h);
    return h;
}

static PyObject *make_forward(PyObject *m, PyObject *args) {
    PyObject *rec, *orig;
    Py_ssize_t tries;
    if (!PyArg_ParseTuple(args, "OOn:forward", &rec, &orig, &tries)) return NULL;
    Hook *h = new_hook(K_FORWARD, rec);
    if (h == NULL) return NULL;
    h->wrapped = Py_NewRef(orig);
    h->max_tries = tries;
    return (PyObject *)h;
}

static PyObject *make_backward(PyObject *m, PyObject *args) {
    PyObject *rec, *orig;
    if (!PyArg_ParseTuple(args, "OO:backward", &rec, &orig)) return NULL;
    Hook *h = new_hook(K_BACKWARD, rec);
    if (h == NULL) return NULL;
    h->wrapped = Py_NewRef(orig);
    return (PyObject *)h;
}

static PyObject *make_pre(PyObject *m, PyObject *args) {
    PyObject *rec, *table, *first;
    if (!PyArg_ParseTuple(args, "OO!O:optimizer_pre", &rec, &PyDict_Type, &table, &first)) return NULL;
    Hook *h = new_hook(K_PRE, rec);
    if (h == NULL) return NULL;
    h->table = Py_NewRef(table);
    h->fn = Py_NewRef(first);
    Py_CLEAR(h->rec->opt);  /* a new table: numbers from it */
    h->rec->pending = 0;
    return (PyObject *)h;
}

static PyObject *make_post(PyObject *m, PyObject *args) {
    PyObject *rec, *install_dcp;
    if (!PyArg_ParseTuple(args, "OO:optimizer_post", &rec, &install_dcp)) return NULL;
    Hook *h = new_hook(K_POST, rec);
    if (h == NULL) return NULL;
    h->fn = Py_NewRef(install_dcp);
    return (PyObject *)h;
}

static PyObject *make_bucket(PyObject *m, PyObject *args) {
    PyObject *rec, *module;
    long long id;
    if (!PyArg_ParseTuple(args, "OOL:bucket", &rec, &module, &id)) return NULL;
    Hook *h = new_hook(K_BUCKET, rec);
    if (h == NULL) return NULL;
    if (id < 0 || id >= PyList_GET_SIZE(h->rec->rests)) {
        Py_DECREF(h);
        PyErr_SetString(PyExc_ValueError, "bucket: unknown id (Rec.add_bucket)");
        return NULL;
    }
    h->module = Py_NewRef(module);
    h->table = PyObject_GetAttr(module, S_dict);  /* require_backward_grad_sync is read from it */
    if (h->table == NULL || !PyDict_Check(h->table)) {
        PyErr_Clear();
        Py_XSETREF(h->table, PyDict_New());
        if (h->table == NULL) { Py_DECREF(h); return NULL; }
    }
    h->id = id;
    return (PyObject *)h;
}

static PyMethodDef methods[] = {
    {"forward", make_forward, METH_VARARGS, "forward(rec, orig, max_tries): DistributedDataParallel.forward, traced"},
    {"backward", make_backward, METH_VARARGS, "backward(rec, orig): torch.autograd.backward, traced"},
    {"optimizer_pre", make_pre, METH_VARARGS,
     "optimizer_pre(rec, next_number, first_number): the optimizer step pre hook"},
    {"optimizer_post", make_post, METH_VARARGS, "optimizer_post(rec, install_dcp): the optimizer step post hook"},
    {"bucket", make_bucket, METH_VARARGS,
     "bucket(rec, ddp_module, id): a DDP bucket's post-accumulate-grad hook (id from Rec.add_bucket)"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef moduledef = {PyModuleDef_HEAD_INIT, "tracers.torch._hooks",
                                       "The torch tracer's per-step recorder and hooks, compiled.", -1, methods};

PyMODINIT_FUNC PyInit__hooks(void) {
    struct { PyObject **slot; const char *text; } names[] = {
        {&S_dict, "__dict__"}, {&S_buckets_attr, "_paradise_buckets"}, {&S_ready, "ready"}, {&S_active, "active"},
        {&S_tries, "tries"}, {&S_try_install, "try_install"}, {&S_require_sync, "require_backward_grad_sync"},
        {&S_dcp_module, "torch.distributed.checkpoint"}, {&S_flush, "flush"}, {&S_overflow, "phases_overflow"},
        {&S_name, "__name__"}, {&S_phase_names[P_FORWARD], "forward"}, {&S_phase_names[P_LOSS], "loss"},
        {&S_phase_names[P_BACKWARD], "backward"}, {&S_phase_names[P_OPTIMIZER], "optimizer"}};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if ((*names[i].slot = PyUnicode_InternFromString(names[i].text)) == NULL) return NULL;
    if (PyType_Ready(&HookType) < 0 || PyType_Ready(&RecType) < 0) return NULL;
    PyObject *m = PyModule_Create(&moduledef);
    if (m == NULL) return NULL;
    Py_INCREF(&HookType);
    Py_INCREF(&RecType);
    if (PyModule_AddObject(m, "Hook", (PyObject *)&HookType) < 0 || PyModule_AddObject(m, "Rec", (PyObject *)&RecType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
