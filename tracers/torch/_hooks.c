/* The torch tracer's per-step hooks as compiled callables (tracers/torch/native.py chooses them).

Each one does what its Python twin in tracers/torch (hooks.py, ddp.py, buckets.py) does, on the
same objects: it reads the clock, appends its values to the tracer's flat lists (Tracer._phases,
_buckets, launched, _chunks) and sets the tracer's step state (step_start, fwd_end, ...), so both
give the same rows. What a step pays is then C calls, no Python frame: a cold Python frame costs
microseconds after the training step has evicted its code. Rare paths (a failure, a step that is
not the plain case, a flush, the first step of an optimizer) call the tracer's Python methods.

Kinds: forward (wraps DistributedDataParallel.forward, binds like a function), backward (wraps
torch.autograd.backward), optimizer pre / post hooks, a DDP bucket's gradient hook. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <time.h>

enum { K_FORWARD, K_BACKWARD, K_PRE, K_POST, K_BUCKET };

static PyObject *S_dict, *S_buckets_attr, *S_forward_seen, *S_step_start, *S_fwd_end, *S_last_launch,
    *S_ready, *S_active, *S_tries, *S_try_install, *S_require_sync, *S_explicit, *S_closed, *S_buffer,
    *S_inflight, *S_auto_io, *S_callbacks, *S_prev_end, *S_flushed_at, *S_interval, *S_counter, *S_step,
    *S_dcp_installed, *S_dcp_module, *S_failure, *S_end_step, *S_flush, *S_forward, *S_loss, *S_backward,
    *S_optimizer, *S_name;

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    int kind;
    PyObject *tr;        /* the Tracer */
    PyObject *wrapped;   /* forward / backward: the torch function called inside */
    PyObject *clock;     /* None: CLOCK_REALTIME (time.time_ns); else a callable returning ns */
    long long base;      /* subtracted from the clock: trace time */
    PyObject *phases, *buckets, *launched, *chunks;  /* the tracer's flat lists */
    PyObject *table;     /* pre: id(optimizer) -> number of its next step; bucket: the DDP module */
    PyObject *pending;   /* pre / post: id(optimizer) -> (t0, step number); bucket: the row's rest */
    PyObject *slow;      /* pre: first_number(opt); post: install_dcp(tr); forward/backward: phases_overflow */
    Py_ssize_t phases_max, buckets_max, flush_steps, max_tries;
} Hook;

static int read_clock(Hook *h, long long *out) {
    if (h->clock == Py_None) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        *out = (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec - h->base;
        return 0;
    }
    PyObject *r = PyObject_CallNoArgs(h->clock);
    if (r == NULL) return -1;
    long long v = PyLong_AsLongLong(r);
    Py_DECREF(r);
    if (v == -1 && PyErr_Occurred()) return -1;
    *out = v - h->base;
    return 0;
}

static int append_ll(PyObject *list, long long v) {
    PyObject *o = PyLong_FromLongLong(v);
    if (o == NULL) return -1;
    int rc = PyList_Append(list, o);
    Py_DECREF(o);
    return rc;
}

/* list.extend((name, t0, t1)) */
static int add_phase(PyObject *phases, PyObject *name, long long t0, long long t1) {
    if (PyList_Append(phases, name) < 0 || append_ll(phases, t0) < 0 || append_ll(phases, t1) < 0) return -1;
    return 0;
}

static int set_ll(PyObject *obj, PyObject *attr, long long v) {
    PyObject *o = PyLong_FromLongLong(v);
    if (o == NULL) return -1;
    int rc = PyObject_SetAttr(obj, attr, o);
    Py_DECREF(o);
    return rc;
}

/* obj.attr = v when obj.attr is None */
static int set_if_none(PyObject *obj, PyObject *attr, long long v) {
    PyObject *cur = PyObject_GetAttr(obj, attr);
    if (cur == NULL) return -1;
    int none = cur == Py_None;
    Py_DECREF(cur);
    return none ? set_ll(obj, attr, v) : 0;
}

/* truth of obj.attr, -1 on error */
static int attr_true(PyObject *obj, PyObject *attr) {
    PyObject *v = PyObject_GetAttr(obj, attr);
    if (v == NULL) return -1;
    int t = PyObject_IsTrue(v);
    Py_DECREF(v);
    return t;
}

static int call_void(PyObject *fn, PyObject *arg) {
    PyObject *r = arg ? PyObject_CallOneArg(fn, arg) : PyObject_CallNoArgs(fn);
    if (r == NULL) return -1;
    Py_DECREF(r);
    return 0;
}

static int overflow_check(Hook *h) {
    if (PyList_GET_SIZE(h->phases) > h->phases_max || PyList_GET_SIZE(h->buckets) > h->buckets_max)
        return call_void(h->slow, NULL);
    return 0;
}

/* DistributedDataParallel.forward (ddp._traced_forward) */
static PyObject *hook_forward(Hook *h, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    if (PyVectorcall_NARGS(nargsf) < 1) return PyObject_Vectorcall(h->wrapped, args, nargsf, kwnames);
    PyObject *d = PyObject_GetAttr(args[0], S_dict);
    if (d == NULL) return NULL;
    PyObject *watch = PyDict_Check(d) ? PyDict_GetItemWithError(d, S_buckets_attr) : NULL;
    Py_XINCREF(watch);
    Py_DECREF(d);
    if (watch == NULL || watch == Py_None) {
        Py_XDECREF(watch);
        if (PyErr_Occurred()) return NULL;
        return PyObject_Vectorcall(h->wrapped, args, nargsf, kwnames);
    }
    PyObject *out = NULL;
    long long t0, t1;
    if (read_clock(h, &t0) < 0 || PyObject_SetAttr(h->tr, S_forward_seen, Py_True) < 0 ||
        set_if_none(h->tr, S_step_start, t0) < 0)
        goto done;
    out = PyObject_Vectorcall(h->wrapped, args, nargsf, kwnames);
    if (out == NULL) goto done;
    if (read_clock(h, &t1) < 0 || add_phase(h->phases, S_forward, t0, t1) < 0 || set_ll(h->tr, S_fwd_end, t1) < 0)
        goto fail;
    if (PyList_GET_SIZE(h->phases) > h->phases_max && call_void(h->slow, NULL) < 0) goto fail;
    int ready = attr_true(watch, S_ready);
    if (ready < 0) goto fail;
    if (!ready) {  /* the bucket hooks go in once DDP has rebuilt its buckets (BucketWatch.try_install) */
        int active = attr_true(watch, S_active);
        if (active < 0) goto fail;
        if (active) {
            PyObject *tries = PyObject_GetAttr(watch, S_tries);
            if (tries == NULL) goto fail;
            Py_ssize_t k = PyLong_AsSsize_t(tries);
            Py_DECREF(tries);
            if (k == -1 && PyErr_Occurred()) goto fail;
            if (k < h->max_tries) {
                PyObject *r = PyObject_CallMethodNoArgs(watch, S_try_install);
                if (r == NULL) goto fail;
                Py_DECREF(r);
            }
        }
    }
    goto done;
fail:
    Py_CLEAR(out);
done:
    Py_DECREF(watch);
    return out;
}

/* The end of a backward (hooks._install_backward's finally): the launched buckets end here. */
static int backward_end(Hook *h, long long t0) {
    long long t1;
    if (read_clock(h, &t1) < 0) return -1;
    PyObject *launch = PyObject_GetAttr(h->tr, S_last_launch);
    if (launch == NULL) return -1;
    int rc = -1;
    long long end = t1;
    int have = 0;
    long long lv = 0;
    if (launch != Py_None) {
        lv = PyLong_AsLongLong(launch);
        if (lv == -1 && PyErr_Occurred()) goto out;
        have = 1;
    }
    Py_ssize_t n = PyList_GET_SIZE(h->launched);
    if (n) {
        long long last = PyLong_AsLongLong(PyList_GET_ITEM(h->launched, n - 7));
        if (last == -1 && PyErr_Occurred()) goto out;
        if (!have || last > lv) { lv = last; have = 1; }
        for (Py_ssize_t i = 1; i < n; i += 7) {
            PyObject *o = PyLong_FromLongLong(t1);
            if (o == NULL || PyList_SetItem(h->launched, i, o) < 0) goto out;
        }
        Py_ssize_t b = PyList_GET_SIZE(h->buckets);
        if (PyList_SetSlice(h->buckets, b, b, h->launched) < 0 || PyList_SetSlice(h->launched, 0, n, NULL) < 0)
            goto out;
    }
    if (have && lv >= t0) end = lv;
    if (add_phase(h->phases, S_backward, t0, end) < 0 || overflow_check(h) < 0) goto out;
    rc = 0;
out:
    Py_DECREF(launch);
    return rc;
}

/* torch.autograd.backward (hooks._install_backward) */
static PyObject *hook_backward(Hook *h, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    long long t0;
    if (read_clock(h, &t0) < 0 || set_if_none(h->tr, S_step_start, t0) < 0) return NULL;
    PyObject *fwd_end = PyObject_GetAttr(h->tr, S_fwd_end);
    if (fwd_end == NULL) return NULL;
    if (fwd_end != Py_None) {
        int bad = PyList_Append(h->phases, S_loss) < 0 || PyList_Append(h->phases, fwd_end) < 0 ||
                  append_ll(h->phases, t0) < 0 || PyObject_SetAttr(h->tr, S_fwd_end, Py_None) < 0;
        if (bad) { Py_DECREF(fwd_end); return NULL; }
    }
    Py_DECREF(fwd_end);
    if (PyObject_SetAttr(h->tr, S_last_launch, Py_None) < 0) return NULL;
    PyObject *res = PyObject_Vectorcall(h->wrapped, args, nargsf, kwnames);
    PyObject *et = NULL, *ev = NULL, *tb = NULL;
    if (res == NULL) {
        int is_exc = PyErr_ExceptionMatches(PyExc_Exception);
        PyErr_Fetch(&et, &ev, &tb);
        PyErr_NormalizeException(&et, &ev, &tb);
        if (is_exc && ev != NULL) {
            if (tb != NULL) PyException_SetTraceback(ev, tb);
            PyObject *r = PyObject_CallMethod(h->tr, "failure", "OsL", ev, "backward", t0);
            if (r == NULL) {  /* the recorder's own error replaces the program's, as in Python */
                Py_XDECREF(et); Py_XDECREF(ev); Py_XDECREF(tb);
                et = ev = tb = NULL;
                PyErr_Fetch(&et, &ev, &tb);
            } else {
                Py_DECREF(r);
            }
        }
    }
    if (backward_end(h, t0) < 0) {  /* an error in the finally block replaces the pending one */
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
    PyObject *key = PyLong_FromVoidPtr(args[0]);
    if (key == NULL) return NULL;
    PyObject *n = PyDict_GetItemWithError(h->table, key), *next = NULL, *entry = NULL, *ret = NULL;
    if (n != NULL) Py_INCREF(n);
    else if (PyErr_Occurred() || (n = PyObject_CallOneArg(h->slow, args[0])) == NULL) goto out;
    static PyObject *one = NULL;
    if (one == NULL && (one = PyLong_FromLong(1)) == NULL) goto out;
    next = PyNumber_Add(n, one);
    if (next == NULL || PyDict_SetItem(h->table, key, next) < 0) goto out;
    long long t;
    if (read_clock(h, &t) < 0) goto out;
    entry = Py_BuildValue("(LO)", t, n);
    if (entry == NULL || PyDict_SetItem(h->pending, key, entry) < 0) goto out;
    ret = Py_NewRef(Py_None);
out:
    Py_DECREF(key);
    Py_XDECREF(n);
    Py_XDECREF(next);
    Py_XDECREF(entry);
    return ret;
}

static int len_of(PyObject *obj, PyObject *attr) {
    PyObject *v = PyObject_GetAttr(obj, attr);
    if (v == NULL) return -1;
    Py_ssize_t n = PyObject_Length(v);
    Py_DECREF(v);
    return n < 0 ? -1 : (n > 0);
}

/* Tracer.end_step(n, None, t1) for the plain case, else the method itself */
static int end_step(Hook *h, PyObject *n, long long t1) {
    PyObject *tr = h->tr;
    int plain = 1, v;
    if ((v = attr_true(tr, S_closed)) < 0) return -1;
    plain = !v;
    PyObject *lists[4] = {S_buffer, S_inflight, S_auto_io, S_callbacks};
    for (int i = 0; plain && i < 4; i++) {
        if ((v = len_of(tr, lists[i])) < 0) return -1;
        plain = !v;
    }
    PyObject *start = NULL;
    if (plain) {
        int seen = attr_true(tr, S_forward_seen);
        if (seen < 0) return -1;
        PyObject *prev = PyObject_GetAttr(tr, S_prev_end);
        if (prev == NULL) return -1;
        if (seen || prev == Py_None) {
            Py_DECREF(prev);
            if ((start = PyObject_GetAttr(tr, S_step_start)) == NULL) return -1;
        } else {
            start = prev;
        }
        if (start == Py_None) { Py_CLEAR(start); plain = 0; }
    }
    if (!plain) {
        PyObject *r = PyObject_CallMethod(tr, "end_step", "OOL", n, Py_None, t1);
        if (r == NULL) return -1;
        Py_DECREF(r);
        return 0;
    }
    int rc = -1;
    PyObject *chunk = NULL, *counter = NULL, *next = NULL, *t1o = NULL, *flushed = NULL, *interval = NULL;
    chunk = Py_BuildValue("(nnOOL)", PyList_GET_SIZE(h->phases), PyList_GET_SIZE(h->buckets), n, start, t1);
    if (chunk == NULL) goto out;
    Py_ssize_t c = PyList_GET_SIZE(h->chunks);
    if (PyList_SetSlice(h->chunks, c, c, chunk) < 0) goto out;
    if ((counter = PyObject_GetAttr(tr, S_counter)) == NULL) goto out;
    PyObject *one = PyLong_FromLong(1);
    if (one == NULL) goto out;
    next = PyNumber_Add(counter, one);
    Py_SETREF(counter, next);
    next = PyNumber_Add(n, one);
    Py_DECREF(one);
    if (counter == NULL || next == NULL || PyObject_SetAttr(tr, S_counter, counter) < 0 ||
        PyObject_SetAttr(tr, S_step, next) < 0 || PyObject_SetAttr(tr, S_step_start, Py_None) < 0 ||
        PyObject_SetAttr(tr, S_fwd_end, Py_None) < 0 || PyObject_SetAttr(tr, S_forward_seen, Py_False) < 0 ||
        set_ll(tr, S_prev_end, t1) < 0)
        goto out;
    if ((flushed = PyObject_GetAttr(tr, S_flushed_at)) == NULL || (interval = PyObject_GetAttr(tr, S_interval)) == NULL)
        goto out;
    long long f = PyLong_AsLongLong(flushed), iv = PyLong_AsLongLong(interval);
    if (PyErr_Occurred()) goto out;
    if (t1 - f > iv || PyList_GET_SIZE(h->chunks) > h->flush_steps) {
        PyObject *r = PyObject_CallMethodNoArgs(tr, S_flush);
        if (r == NULL) goto out;
        Py_DECREF(r);
    }
    rc = 0;
out:
    Py_XDECREF(start);
    Py_XDECREF(chunk);
    Py_XDECREF(counter);
    Py_XDECREF(next);
    Py_XDECREF(t1o);
    Py_XDECREF(flushed);
    Py_XDECREF(interval);
    return rc;
}

/* optimizer step post hook (hooks._install_optimizer.post) */
static PyObject *hook_post(Hook *h, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    if (PyVectorcall_NARGS(nargsf) < 1) { PyErr_SetString(PyExc_TypeError, "post hook: no optimizer"); return NULL; }
    long long t1, t0;
    if (read_clock(h, &t1) < 0) return NULL;
    PyObject *key = PyLong_FromVoidPtr(args[0]);
    if (key == NULL) return NULL;
    PyObject *n = NULL, *ret = NULL;
    PyObject *entry = PyDict_GetItemWithError(h->pending, key);
    if (entry != NULL) {
        t0 = PyLong_AsLongLong(PyTuple_GET_ITEM(entry, 0));
        n = Py_NewRef(PyTuple_GET_ITEM(entry, 1));
        if ((t0 == -1 && PyErr_Occurred()) || PyDict_DelItem(h->pending, key) < 0) goto out;
    } else {
        if (PyErr_Occurred() || (n = PyObject_GetAttr(h->tr, S_counter)) == NULL) goto out;
        t0 = t1;
    }
    if (add_phase(h->phases, S_optimizer, t0, t1) < 0) goto out;
    int explicit_steps = attr_true(h->tr, S_explicit);
    if (explicit_steps < 0 || (!explicit_steps && end_step(h, n, t1) < 0)) goto out;
    int has = PyDict_Contains(PyImport_GetModuleDict(), S_dcp_module);
    if (has < 0) goto out;
    if (has) {
        int done = attr_true(h->tr, S_dcp_installed);
        if (done < 0 || (!done && call_void(h->slow, h->tr) < 0)) goto out;
    }
    ret = Py_NewRef(Py_None);
out:
    Py_DECREF(key);
    Py_XDECREF(n);
    return ret;
}

/* a DDP bucket's gradient hook (buckets.BucketWatch._hook) */
static PyObject *hook_bucket(Hook *h, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    int sync = attr_true(h->table, S_require_sync);  /* under no_sync() DDP reduces nothing */
    if (sync < 0) return NULL;
    if (sync) {
        long long t;
        if (read_clock(h, &t) < 0 || append_ll(h->launched, t) < 0) return NULL;
        Py_ssize_t n = PyList_GET_SIZE(h->launched);
        if (PyList_SetSlice(h->launched, n, n, h->pending) < 0) return NULL;
    }
    Py_RETURN_NONE;
}

static int Hook_traverse(Hook *h, visitproc visit, void *arg) {
    Py_VISIT(h->tr); Py_VISIT(h->wrapped); Py_VISIT(h->clock); Py_VISIT(h->phases); Py_VISIT(h->buckets);
    Py_VISIT(h->launched); Py_VISIT(h->chunks); Py_VISIT(h->table); Py_VISIT(h->pending); Py_VISIT(h->slow);
    return 0;
}

static int Hook_clear(Hook *h) {
    Py_CLEAR(h->tr); Py_CLEAR(h->wrapped); Py_CLEAR(h->clock); Py_CLEAR(h->phases); Py_CLEAR(h->buckets);
    Py_CLEAR(h->launched); Py_CLEAR(h->chunks); Py_CLEAR(h->table); Py_CLEAR(h->pending); Py_CLEAR(h->slow);
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
    if (h->wrapped != NULL && h->wrapped != Py_None) return PyObject_GetAttr(h->wrapped, S_name);
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
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_vectorcall_offset = offsetof(Hook, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_descr_get = Hook_get,
    .tp_traverse = (traverseproc)Hook_traverse,
    .tp_clear = (inquiry)Hook_clear,
    .tp_dealloc = (destructor)Hook_dealloc,
    .tp_members = Hook_members,
    .tp_getset = Hook_getset,
};

static Hook *new_hook(int kind, PyObject *tr, PyObject *clock, long long base) {
    Hook *h = PyObject_GC_New(Hook, &HookType);
    if (h == NULL) return NULL;
    memset((char *)h + offsetof(Hook, vectorcall), 0, sizeof(Hook) - offsetof(Hook, vectorcall));
    static const vectorcallfunc fns[] = {(vectorcallfunc)hook_forward, (vectorcallfunc)hook_backward,
                                         (vectorcallfunc)hook_pre, (vectorcallfunc)hook_post,
                                         (vectorcallfunc)hook_bucket};
    h->vectorcall = fns[kind];
    h->kind = kind;
    h->tr = Py_NewRef(tr);
    h->clock = Py_NewRef(clock);
    h->base = base;
    PyObject_GC_Track(h);
    return h;
}

#define LIST_CHECK(x) if (!PyList_Check(x)) { PyErr_SetString(PyExc_TypeError, #x " must be a list"); return NULL; }

static PyObject *make_forward(PyObject *m, PyObject *args) {
    PyObject *tr, *orig, *clock, *phases, *overflow;
    long long base;
    Py_ssize_t pmax, tries;
    if (!PyArg_ParseTuple(args, "OOOLO!nOn:forward", &tr, &orig, &clock, &base, &PyList_Type, &phases, &pmax,
                          &overflow, &tries))
        return NULL;
    Hook *h = new_hook(K_FORWARD, tr, clock, base);
    if (h == NULL) return NULL;
    h->wrapped = Py_NewRef(orig);
    h->phases = Py_NewRef(phases);
    h->phases_max = pmax;
    h->slow = Py_NewRef(overflow);
    h->max_tries = tries;
    return (PyObject *)h;
}

static PyObject *make_backward(PyObject *m, PyObject *args) {
    PyObject *tr, *orig, *clock, *phases, *buckets, *launched, *overflow;
    long long base;
    Py_ssize_t pmax, bmax;
    if (!PyArg_ParseTuple(args, "OOOLO!O!O!nnO:backward", &tr, &orig, &clock, &base, &PyList_Type, &phases,
                          &PyList_Type, &buckets, &PyList_Type, &launched, &pmax, &bmax, &overflow))
        return NULL;
    Hook *h = new_hook(K_BACKWARD, tr, clock, base);
    if (h == NULL) return NULL;
    h->wrapped = Py_NewRef(orig);
    h->phases = Py_NewRef(phases);
    h->buckets = Py_NewRef(buckets);
    h->launched = Py_NewRef(launched);
    h->phases_max = pmax;
    h->buckets_max = bmax;
    h->slow = Py_NewRef(overflow);
    return (PyObject *)h;
}

static PyObject *make_pre(PyObject *m, PyObject *args) {
    PyObject *tr, *clock, *table, *pending, *first;
    long long base;
    if (!PyArg_ParseTuple(args, "OOLO!O!O:optimizer_pre", &tr, &clock, &base, &PyDict_Type, &table, &PyDict_Type,
                          &pending, &first))
        return NULL;
    Hook *h = new_hook(K_PRE, tr, clock, base);
    if (h == NULL) return NULL;
    h->table = Py_NewRef(table);
    h->pending = Py_NewRef(pending);
    h->slow = Py_NewRef(first);
    return (PyObject *)h;
}

static PyObject *make_post(PyObject *m, PyObject *args) {
    PyObject *tr, *clock, *pending, *phases, *buckets, *chunks, *install_dcp;
    long long base;
    Py_ssize_t flush_steps;
    if (!PyArg_ParseTuple(args, "OOLO!O!O!O!nO:optimizer_post", &tr, &clock, &base, &PyDict_Type, &pending,
                          &PyList_Type, &phases, &PyList_Type, &buckets, &PyList_Type, &chunks, &flush_steps,
                          &install_dcp))
        return NULL;
    Hook *h = new_hook(K_POST, tr, clock, base);
    if (h == NULL) return NULL;
    h->pending = Py_NewRef(pending);
    h->phases = Py_NewRef(phases);
    h->buckets = Py_NewRef(buckets);
    h->chunks = Py_NewRef(chunks);
    h->flush_steps = flush_steps;
    h->slow = Py_NewRef(install_dcp);
    return (PyObject *)h;
}

static PyObject *make_bucket(PyObject *m, PyObject *args) {
    PyObject *tr, *clock, *module, *launched, *rest;
    long long base;
    if (!PyArg_ParseTuple(args, "OOLOO!O!:bucket", &tr, &clock, &base, &module, &PyList_Type, &launched,
                          &PyTuple_Type, &rest))
        return NULL;
    Hook *h = new_hook(K_BUCKET, tr, clock, base);
    if (h == NULL) return NULL;
    h->table = Py_NewRef(module);
    h->launched = Py_NewRef(launched);
    h->pending = Py_NewRef(rest);
    return (PyObject *)h;
}

static PyMethodDef methods[] = {
    {"forward", make_forward, METH_VARARGS,
     "forward(tr, orig, clock, base, phases, phases_max, overflow, max_tries): DistributedDataParallel.forward, traced"},
    {"backward", make_backward, METH_VARARGS,
     "backward(tr, orig, clock, base, phases, buckets, launched, phases_max, buckets_max, overflow): "
     "torch.autograd.backward, traced"},
    {"optimizer_pre", make_pre, METH_VARARGS,
     "optimizer_pre(tr, clock, base, next_number, pending, first_number): the optimizer step pre hook"},
    {"optimizer_post", make_post, METH_VARARGS,
     "optimizer_post(tr, clock, base, pending, phases, buckets, chunks, flush_steps, install_dcp): the post hook"},
    {"bucket", make_bucket, METH_VARARGS,
     "bucket(tr, clock, base, ddp_module, launched, rest): a DDP bucket's post-accumulate-grad hook"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef moduledef = {PyModuleDef_HEAD_INIT, "tracers.torch._hooks",
                                       "The torch tracer's per-step hooks, compiled.", -1, methods};

PyMODINIT_FUNC PyInit__hooks(void) {
    struct { PyObject **slot; const char *text; } names[] = {
        {&S_dict, "__dict__"}, {&S_buckets_attr, "_paradise_buckets"}, {&S_forward_seen, "forward_seen"},
        {&S_step_start, "step_start"}, {&S_fwd_end, "fwd_end"}, {&S_last_launch, "last_launch"},
        {&S_ready, "ready"}, {&S_active, "active"}, {&S_tries, "tries"}, {&S_try_install, "try_install"},
        {&S_require_sync, "require_backward_grad_sync"}, {&S_explicit, "_explicit"}, {&S_closed, "closed"},
        {&S_buffer, "_buffer"}, {&S_inflight, "_inflight"}, {&S_auto_io, "_auto_io"},
        {&S_callbacks, "step_callbacks"}, {&S_prev_end, "_prev_end"}, {&S_flushed_at, "_flushed_at"},
        {&S_interval, "flush_interval_ns"}, {&S_counter, "_counter"}, {&S_step, "step"},
        {&S_dcp_installed, "dcp_installed"}, {&S_dcp_module, "torch.distributed.checkpoint"},
        {&S_failure, "failure"}, {&S_end_step, "end_step"}, {&S_flush, "flush"}, {&S_forward, "forward"},
        {&S_loss, "loss"}, {&S_backward, "backward"}, {&S_optimizer, "optimizer"}, {&S_name, "__name__"}};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if ((*names[i].slot = PyUnicode_InternFromString(names[i].text)) == NULL) return NULL;
    if (PyType_Ready(&HookType) < 0) return NULL;
    PyObject *m = PyModule_Create(&moduledef);
    if (m == NULL) return NULL;
    Py_INCREF(&HookType);
    if (PyModule_AddObject(m, "Hook", (PyObject *)&HookType) < 0) { Py_DECREF(&HookType); Py_DECREF(m); return NULL; }
    return m;
}
