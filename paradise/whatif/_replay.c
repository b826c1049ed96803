/* The what-if replay's event loop in C (paradise/whatif/sim.py prepares its arrays and documents
 * the rules; tests/oracles/replay.py is the same loop in Python, the oracle of a test).
 *
 * replay(npes, pending, msg_off, msg_kids, obj_off, obj_kids, hold_off, hold_kids, arrive_after,
 *        cost, gap, pe, prio, orig, ovh, free_at, start, finish)
 * Every argument but npes is a C-contiguous int64 buffer; pending and free_at are worked on in
 * place, start and finish are written. Two binary heaps: the events (time, kind, exec), kind
 * 0 = a release (one of an exec's causes arrived), 1 = a finish; and per PE the ready execs
 * (priority, ready time, original start, exec). Ties are broken by the whole tuple, as Python's
 * heapq does, so both loops pop in the same order.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct { int64_t t, key; } Event; /* key = kind << 56 | exec */
typedef struct { int64_t prio, t, orig, i; } Ready;

#define KIND_SHIFT 56

static inline int ev_less(const Event *a, const Event *b) {
    return a->t < b->t || (a->t == b->t && a->key < b->key);
}

static inline int rd_less(const Ready *a, const Ready *b) {
    if (a->prio != b->prio) return a->prio < b->prio;
    if (a->t != b->t) return a->t < b->t;
    if (a->orig != b->orig) return a->orig < b->orig;
    return a->i < b->i;
}

/* A binary min-heap of T ordered by LESS: NAME##Heap, NAME##_push (-1 when out of memory), NAME##_pop. */
#define HEAP(NAME, T, LESS, FIRST_CAP)                                              \
    typedef struct { T *v; Py_ssize_t n, cap; } NAME##Heap;                         \
    static int NAME##_push(NAME##Heap *h, T x) {                                    \
        if (h->n == h->cap) {                                                       \
            Py_ssize_t cap = h->cap ? h->cap * 2 : FIRST_CAP;                       \
            T *v = realloc(h->v, (size_t)cap * sizeof(T));                          \
            if (!v) return -1;                                                      \
            h->v = v, h->cap = cap;                                                 \
        }                                                                           \
        Py_ssize_t k = h->n++;                                                      \
        while (k > 0) {                                                             \
            Py_ssize_t p = (k - 1) >> 1;                                            \
            if (!LESS(&x, &h->v[p])) break;                                         \
            h->v[k] = h->v[p];                                                      \
            k = p;                                                                  \
        }                                                                           \
        h->v[k] = x;                                                                \
        return 0;                                                                   \
    }                                                                               \
    static T NAME##_pop(NAME##Heap *h) {                                            \
        T top = h->v[0], last = h->v[--h->n];                                       \
        Py_ssize_t k = 0, n = h->n;                                                 \
        for (;;) {                                                                  \
            Py_ssize_t c = 2 * k + 1;                                               \
            if (c >= n) break;                                                      \
            if (c + 1 < n && LESS(&h->v[c + 1], &h->v[c])) c++;                     \
            if (!LESS(&h->v[c], &last)) break;                                      \
            h->v[k] = h->v[c];                                                      \
            k = c;                                                                  \
        }                                                                           \
        if (n) h->v[k] = last;                                                      \
        return top;                                                                 \
    }

HEAP(ev, Event, ev_less, 1024)
HEAP(rd, Ready, rd_less, 16)
typedef evHeap EventHeap;
typedef rdHeap ReadyHeap;

/* An event (time, kind, exec) on the heap. */
static inline int ev_add(EventHeap *h, int64_t t, int64_t kind, int64_t i) {
    Event e = {t, (kind << KIND_SHIFT) | i};
    return ev_push(h, e);
}

enum { PENDING, MSG_OFF, MSG_KIDS, OBJ_OFF, OBJ_KIDS, HOLD_OFF, HOLD_KIDS, ARRIVE, COST, GAP, PE, PRIO,
       ORIG, OVH, FREE_AT, START, FINISH, NBUF };

typedef struct {
    const int64_t *msg_off, *msg_kids, *arrive, *cost, *pe;
    int64_t *start, *finish;
    char *busy;
    EventHeap *events;
} Run;

/* Starts exec i at t on its PE: its finish and the arrivals of the messages it sends are events. */
static int begin(Run *r, int64_t i, int64_t t) {
    r->busy[r->pe[i]] = 1;
    r->start[i] = t;
    r->finish[i] = t + r->cost[i];
    if (ev_add(r->events, r->finish[i], 1, i)) return -1;
    for (int64_t k = r->msg_off[i]; k < r->msg_off[i + 1]; k++) {
        int64_t c = r->msg_kids[k];
        if (ev_add(r->events, t + r->arrive[c], 0, c)) return -1;
    }
    return 0;
}

static int run(Py_ssize_t n, Py_ssize_t npes, Py_buffer *b) {
    int64_t *pending = b[PENDING].buf, *free_at = b[FREE_AT].buf;
    const int64_t *obj_off = b[OBJ_OFF].buf, *obj_kids = b[OBJ_KIDS].buf, *hold_off = b[HOLD_OFF].buf,
                  *hold_kids = b[HOLD_KIDS].buf, *gap = b[GAP].buf, *pe = b[PE].buf, *prio = b[PRIO].buf,
                  *orig = b[ORIG].buf, *ovh = b[OVH].buf;
    EventHeap events = {0};
    ReadyHeap *ready = calloc((size_t)npes, sizeof(ReadyHeap));
    char *busy = calloc((size_t)npes, 1);
    Run r = {b[MSG_OFF].buf, b[MSG_KIDS].buf, b[ARRIVE].buf, b[COST].buf, pe, b[START].buf, b[FINISH].buf,
             busy, &events};
    int rc = -1;
    if (!ready || !busy) goto done;
    for (Py_ssize_t i = 0; i < n; i++)
        if (pending[i] == 0 && ev_add(&events, orig[i], 0, i)) goto done;
    while (events.n) {
        Event e = ev_pop(&events);
        int64_t t = e.t, kind = e.key >> KIND_SHIFT, i = e.key & (((int64_t)1 << KIND_SHIFT) - 1);
        int64_t p = pe[i];
        if (kind == 0) {
            if (--pending[i] > 0) continue;
            if (busy[p]) {
                Ready rd = {prio[i], t, orig[i], i};
                if (rd_push(&ready[p], rd)) goto done;
            } else if (begin(&r, i, t > free_at[p] ? t : free_at[p])) goto done;
            continue;
        }
        busy[p] = 0;
        free_at[p] = t + ovh[i];
        for (int64_t k = obj_off[i]; k < obj_off[i + 1]; k++)
            if (ev_add(&events, t, 0, obj_kids[k])) goto done;
        for (int64_t k = hold_off[i]; k < hold_off[i + 1]; k++) {
            int64_t c = hold_kids[k];
            if (ev_add(&events, t + gap[c], 0, c)) goto done;
        }
        if (ready[p].n && begin(&r, rd_pop(&ready[p]).i, free_at[p])) goto done;
    }
    rc = 0;
done:
    if (ready)
        for (Py_ssize_t p = 0; p < npes; p++) free(ready[p].v);
    free(ready);
    free(busy);
    free(events.v);
    return rc;
}

static PyObject *M_replay(PyObject *self, PyObject *args) {
    Py_ssize_t npes;
    Py_buffer b[NBUF];
    memset(b, 0, sizeof b);
    if (!PyArg_ParseTuple(args, "nw*y*y*y*y*y*y*y*y*y*y*y*y*y*w*w*w*", &npes, &b[PENDING], &b[MSG_OFF],
                          &b[MSG_KIDS], &b[OBJ_OFF], &b[OBJ_KIDS], &b[HOLD_OFF], &b[HOLD_KIDS], &b[ARRIVE],
                          &b[COST], &b[GAP], &b[PE], &b[PRIO], &b[ORIG], &b[OVH], &b[FREE_AT], &b[START],
                          &b[FINISH])) {
        for (int k = 0; k < NBUF; k++)
            if (b[k].obj) PyBuffer_Release(&b[k]);
        return NULL;
    }
    Py_ssize_t n = b[PENDING].len / 8;
    const char *bad = npes < 0 ? "npes is negative" : NULL;
    for (int k = 0; !bad && k < NBUF; k++) {
        Py_ssize_t want = k == MSG_OFF || k == OBJ_OFF || k == HOLD_OFF ? n + 1
                          : k == FREE_AT ? npes
                          : k == MSG_KIDS || k == OBJ_KIDS || k == HOLD_KIDS ? b[k].len / 8 : n;
        if (b[k].len != want * 8) bad = "array lengths do not agree";
    }
    const int64_t *pe = b[PE].buf;
    for (Py_ssize_t i = 0; !bad && i < n; i++)
        if (pe[i] < 0 || pe[i] >= npes) bad = "an exec's PE is outside 0..npes-1";
    for (int k = MSG_OFF; !bad && k <= HOLD_OFF; k += 2) { /* CSR (offsets, children) pairs */
        const int64_t *off = b[k].buf, *kids = b[k + 1].buf;
        Py_ssize_t m = b[k + 1].len / 8;
        for (Py_ssize_t i = 0; !bad && i < n; i++)
            if (off[i] < 0 || off[i] > off[i + 1] || off[i + 1] > m) bad = "children offsets out of range";
        for (Py_ssize_t j = 0; !bad && j < m; j++)
            if (kids[j] < 0 || kids[j] >= n) bad = "a child exec is outside 0..n-1";
    }
    int rc = 0;
    if (!bad) {
        Py_BEGIN_ALLOW_THREADS
        rc = run(n, npes, b);
        Py_END_ALLOW_THREADS
    }
    for (int k = 0; k < NBUF; k++) PyBuffer_Release(&b[k]);
    if (bad) {
        PyErr_SetString(PyExc_ValueError, bad);
        return NULL;
    }
    if (rc) return PyErr_NoMemory();
    Py_RETURN_NONE;
}

static PyMethodDef METHODS[] = {
    {"replay", M_replay, METH_VARARGS,
     "replay(npes, pending, msg_off, msg_kids, obj_off, obj_kids, hold_off, hold_kids, arrive_after, cost, "
     "gap, pe, prio, orig, ovh, free_at, start, finish): the what-if event loop (paradise/whatif/sim.py)"},
    {NULL}};

static struct PyModuleDef MODULE = {PyModuleDef_HEAD_INIT, "_replay",
                                    "The what-if replay's event loop in C (paradise/whatif/sim.py).", -1,
                                    METHODS};

PyMODINIT_FUNC PyInit__replay(void) { return PyModule_Create(&MODULE); }
