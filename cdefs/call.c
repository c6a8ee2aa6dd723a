/* launcher._call: the call of a prepared launch, in C (launcher.prepared.PreparedLaunch), and
 * the common encode of a host tensor descriptor (launcher.tensormap.DescriptorEncoder; below).
 *
 * `p()` and `p(*args)` of a prepared launch are the calls a decode loop makes again and again,
 * so they are a C type's tp_call: no Python frame, no cffi call, no struct.pack.  What is
 * checked is decided once, in Python (launcher.checks.c_checks, with the prepared call's
 * assumptions: the same facts as launcher.specialization.AssumptionCheck), and handed to
 * FastCall._fast_set as plain tuples of the header's LAUNCHER_CHECK_* and LAUNCHER_PACK_* codes;
 * this file only carries it out.  A call with keywords (or fewer arguments) is bound here as
 * Python binds the kernel's parameters (bind_call: by name, the left-out ones filled with their
 * prepared or default values), then checked as a positional one.  Every argument the tests below
 * do not pass, every keyword that is not a parameter (launch options, grid=, stream=), every call
 * Python's binding would refuse and every launch with hooks set goes to the Python method
 * `launch`, which binds, checks and explains (a TypeError, an AssumptionError naming the
 * parameter): the C path never raises about an argument, it only declines.
 *
 * The native library (launcher._native, cffi) is called through function pointers whose
 * addresses Python passes in (typed here by cdefs/launcher.h's prototypes, which this file
 * includes for them, the launch header's layout and the check and pack codes); the objects owning the plan and the bound launch are kept
 * referenced here, and again for the duration of each call (the launch runs without the GIL),
 * so that close() from Python code the call runs, or on another thread, cannot free them under
 * it; a call that finds the launch closed after such code ran goes to the general path, which
 * refuses it.  (close() gives the kernel's module back: closing a prepared launch while another
 * thread is inside its launch is a race on the module, on every path.)
 *
 * Limited API (3.10): one abi3 build serves every supported Python, as for launcher._native. */
#ifndef Py_LIMITED_API
#define Py_LIMITED_API 0x030A0000
#endif
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "launcher.h"

/* Vectorcall (PEP 590), for the objects `kernel[grid](...)` calls (GuardItem, GuardCall): the
 * protocol (the type flag, the type's offset, the function's signature) is the same from Python
 * 3.8 on and is part of the limited API from 3.12; it is stated here under names of our own, for
 * the 3.10 build (which headers of 3.12 on would declare in part).  A heap type takes its offset
 * from its spec's "__vectorcalloffset__" member (3.9 on), and keeps a tp_call for callers that
 * use that slot. */
typedef PyObject *(*vectorcall_fn)(PyObject *callable, PyObject *const *args, size_t nargsf, PyObject *kwnames);
#define VECTORCALL_FLAG (1UL << 11)  /* Py_TPFLAGS_HAVE_VECTORCALL */
static inline Py_ssize_t vectorcall_nargs(size_t nargsf) {  /* PyVectorcall_NARGS */
    return (Py_ssize_t)(nargsf & ~((size_t)1 << (8 * sizeof(size_t) - 1)));
}
#include <structmember.h>  /* PyMemberDef's T_PYSSIZET, READONLY: the vectorcall offset */

/* The native entries, as the header declares them (called through the addresses Python gives:
 * launcher._native is another extension module, not a library this one links). */
typedef __typeof__(&launcher_launch) launch_fn;
typedef __typeof__(&launcher_dry_run) dry_run_fn;
typedef __typeof__(&launcher_bound_launch) bound_fn;
typedef __typeof__(&launcher_encode_tensor_map) encode_fn;

/* Where the launch header's fields lie in every packed buffer. */
enum {
    FUNCTION_AT = offsetof(launcher_header, function),
    STREAM_AT = offsetof(launcher_header, stream),
    GRID_AT = offsetof(launcher_header, grid_x),
    HEADER_SIZE = sizeof(launcher_header),
};

typedef struct check {
    int kind;        /* LAUNCHER_CHECK_* */
    PyObject *obj;   /* constexpr: its value; pointer: the tensor class; call: the function */
    PyObject *dtype; /* pointer: the dtype object (compared by identity) */
    int eq;          /* constexpr: a value of the same class that compares equal passes too */
    unsigned long long mask; /* pointer, int: no bit of it may be set (the kernel assumed divisibility: its
                              * specialization.DIVISIBILITY_MASK, given by launcher.checks); 0: nothing assumed */
    __int128 lo, hi; /* int: the range the kernel takes, within the code's (check_build narrows it) */
    char code;       /* LAUNCHER_PACK_* of the packed value */
    Py_ssize_t offset;
    Py_ssize_t n;    /* tuple: items; call: values the function returns */
    struct check *items;      /* tuple: its items */
    char *codes;              /* call: code of each value */
    Py_ssize_t *offsets;      /* call: offset of each value */
} check;

typedef struct {
    PyObject_HEAD
    int ready;        /* _fast_set done (else every call takes the general path) */
    PyObject *stream_fn, *stream_args;
    PyObject *runtime, *hook_chain;  /* Triton's runtime knobs and HookChain, or NULL */
    bound_fn bound_launch; launcher_bound *bound; PyObject *bound_keep, *bound_buf;
    launch_fn launch; dry_run_fn dry_run; const launcher_plan *plan; PyObject *plan_keep;
    PyObject *template_;   /* bytes: the packed buffer with the function handle, zero elsewhere */
    Py_ssize_t size, out_size;
    int32_t grid[3];
    PyObject *grid_fn, *names;  /* callable grid and the parameter names it is given */
    Py_ssize_t n_checks, n_min;
    PyObject *checks;      /* a capsule of n_checks checks; NULL: new arguments take the general path */
    PyObject *trailing;    /* prepared values of the trailing constexprs a call may leave out */
    PyObject *keywords;    /* {name: index} of the parameters a call may pass by name (exact str keys) */
    PyObject *defaults;    /* per parameter: (value,) a call that leaves it out gets, or () */
    PyObject *split;       /* dry run: bytes -> what launch's dry run returns */
} FastCall;

static PyObject *s_calls, *s_dtype, *s_data_ptr, *s_enter, *s_exit, *s_launch, *s_failed;
static const char CHECKS[] = "launcher._call.checks";

/* ---- checks: built from Python tuples once ---- */

/* *slot = value (a new reference), the old one released after. */
static void replace_ref(PyObject **slot, PyObject *value) {
    PyObject *old = *slot;
    *slot = value;
    Py_XDECREF(old);
}

/* fn(first, *args, **kwargs) with a vectorcall's arguments (args[0 .. nargs), then the values of
 * kwnames' keywords), where first is not NULL; else fn(*args, **kwargs): for a caller in C that
 * hands a vectorcall on to Python code through PyObject_Call (limited API 3.10). */
static PyObject *call_with(PyObject *fn, PyObject *first, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
    Py_ssize_t head = first ? 1 : 0, nkw = kwnames ? PyTuple_Size(kwnames) : 0;
    PyObject *argv = PyTuple_New(head + nargs), *kw = nkw ? PyDict_New() : NULL, *result = NULL;
    if (argv) {
        if (first) PyTuple_SetItem(argv, 0, Py_NewRef(first));
        for (Py_ssize_t i = 0; i < nargs; i++) PyTuple_SetItem(argv, head + i, Py_NewRef(args[i]));
    }
    for (Py_ssize_t k = 0; kw && k < nkw; k++)
        if (PyDict_SetItem(kw, PyTuple_GetItem(kwnames, k), args[nargs + k]) < 0) Py_CLEAR(kw);
    if (argv && (kw || !nkw)) result = PyObject_Call(fn, argv, kw);
    Py_XDECREF(argv); Py_XDECREF(kw);
    return result;
}

/* ---- a tensor's dtype and data_ptr(): the one home of how every path here reads them ----
 *
 * t_dtype(r, v) is v.dtype and t_data_ptr(r, v) is v.data_ptr(), where r is what t_for() answered
 * for v's class in this call (NULL: v is read as Python reads it).  Where the tensor class a
 * guard or a check names (torch.Tensor) looks attributes up in the generic way (no
 * __getattribute__ of its own) and finds both names in one immutable base type's slots (torch's
 * TensorBase: its tp_getset's "dtype" getter, its tp_methods' METH_NOARGS "data_ptr"), r is not
 * NULL for that class while its lookup of an instance's attribute still ends there: its MRO is
 * the one seen then and no class before the base in it holds either name (asked once per call:
 * a torch.Tensor.data_ptr set since is read as Python reads it).  For an instance of exactly
 * that class the base's C functions are then called directly: what the descriptors call, less
 * the lookup and the call's frames (about half of a tensor's cost in a hit).  One difference
 * from Python remains: an attribute set on one tensor object (t.data_ptr = f) is not read, its
 * class's is.  Errors are what the functions raise.  The first class found to qualify is the
 * one served for the life of the process (there is one torch.Tensor). */
typedef struct {
    PyObject *cls, *mro, *before, *tried;  /* held for the life of the module; before: the __dict__ (a
                                            * mappingproxy of the type's own dict, which a type keeps for
                                            * life) of each class in cls's MRO before the base */
    getter dtype_get; void *dtype_closure;
    PyCFunction ptr_fn;
} tensor_reads_t;
static tensor_reads_t t_reads;
static PyTypeObject *method_descr_type, *getset_descr_type;  /* type(str.join), type(int.real) */
static PyObject *s_dict, *s_mro, *s_objclass;

/* The index in mro of the class whose __dict__ holds name first, where that is an immutable
 * type whose descriptor of it has type `type` and was made for it (__objclass__); else -1. */
static Py_ssize_t t_base_of(PyObject *mro, PyObject *name, PyTypeObject *type) {
    for (Py_ssize_t i = 0; i < PyTuple_Size(mro); i++) {
        PyObject *base = PyTuple_GetItem(mro, i), *dict = PyObject_GetAttr(base, s_dict);
        PyObject *d = dict ? PyObject_GetItem(dict, name) : NULL;
        Py_XDECREF(dict);
        if (!d) { PyErr_Clear(); continue; }
        PyObject *owner = PyObject_GetAttr(d, s_objclass);
        int ok = Py_TYPE(d) == type && owner == base && PyType_Check(base)
                 && (PyType_GetFlags((PyTypeObject *)base) & (1UL << 8));  /* Py_TPFLAGS_IMMUTABLETYPE */
        PyErr_Clear();
        Py_XDECREF(owner); Py_DECREF(d);
        return ok ? i : -1;
    }
    return -1;
}

static int t_generic(PyObject *cls) {
    return PyType_GetSlot((PyTypeObject *)cls, Py_tp_getattro) == (void *)PyObject_GenericGetAttr;
}

/* Serve cls where it qualifies (see above); nothing where another class is served already. */
static void t_setup(PyObject *cls) {
    replace_ref(&t_reads.tried, Py_NewRef(cls));  /* asked once, unless another class is asked for */
    if (t_reads.cls || !PyType_Check(cls) || !method_descr_type || !getset_descr_type || !t_generic(cls)) return;
    PyObject *mro = PyObject_GetAttr(cls, s_mro), *before = NULL;
    Py_ssize_t at = mro && PyTuple_Check(mro) ? t_base_of(mro, s_dtype, getset_descr_type) : -1;
    if (at < 0 || t_base_of(mro, s_data_ptr, method_descr_type) != at || !(before = PyTuple_New(at))) {
        PyErr_Clear();
        Py_XDECREF(mro);
        return;
    }
    for (Py_ssize_t i = 0; i < at; i++) {
        PyObject *dict = PyObject_GetAttr(PyTuple_GetItem(mro, i), s_dict);
        if (!dict || Py_TYPE(dict) != &PyDictProxy_Type) {  /* a metaclass's __dict__ of its own: not served */
            PyErr_Clear(); Py_XDECREF(dict); Py_DECREF(mro); Py_DECREF(before);
            return;
        }
        PyTuple_SetItem(before, i, dict);
    }
    PyTypeObject *base = (PyTypeObject *)PyTuple_GetItem(mro, at);
    getter get = NULL; void *closure = NULL; PyCFunction fn = NULL;
    /* the first def of each name: the one the immutable type's dict was filled from */
    for (PyGetSetDef *gs = PyType_GetSlot(base, Py_tp_getset); gs && gs->name; gs++)
        if (!strcmp(gs->name, "dtype")) { get = gs->get; closure = gs->closure; break; }
    for (PyMethodDef *m = PyType_GetSlot(base, Py_tp_methods); m && m->ml_name; m++)
        if (!strcmp(m->ml_name, "data_ptr")) {
            if ((m->ml_flags & ~METH_COEXIST) == METH_NOARGS) fn = m->ml_meth;
            break;
        }
    PyErr_Clear();
    if (!get || !fn || t_reads.cls) { Py_DECREF(mro); Py_DECREF(before); return; }  /* t_reads.cls: set meanwhile */
    t_reads.mro = mro; t_reads.before = before;  /* no Python code runs from here on */
    t_reads.dtype_get = get; t_reads.dtype_closure = closure; t_reads.ptr_fn = fn;
    t_reads.cls = Py_NewRef(cls);
}

/* Whether an instance's lookup of dtype and data_ptr in the served class still ends in the base:
 * the same MRO, and no class before the base holding either name. */
static int t_current(PyObject *cls) {
    if (!t_generic(cls)) return 0;
    PyObject *mro = PyObject_GetAttr(cls, s_mro);
    int ok = mro == t_reads.mro;
    Py_XDECREF(mro);
    for (Py_ssize_t i = 0; ok && i < PyTuple_Size(t_reads.before); i++) {
        PyObject *dict = PyTuple_GetItem(t_reads.before, i);
        ok = PySequence_Contains(dict, s_dtype) == 0 && PySequence_Contains(dict, s_data_ptr) == 0;
    }
    if (!ok && PyErr_Occurred()) PyErr_Clear();  /* an error: not served (read as Python reads it) */
    return ok;
}

/* One call's reads: t_for(tc, cls) asks once per call (tc starts {NULL, NULL}) whether the class
 * is served, and its lookup still ends in the base (setup: whether a class a guard or a check
 * names as its tensor class is tried, where none is served yet). */
typedef struct { PyObject *cls; const tensor_reads_t *r; } t_call;

static const tensor_reads_t *t_for(t_call *tc, PyObject *cls, int setup) {
    if (tc->cls == cls) return tc->r;
    if (setup && !t_reads.cls && cls != t_reads.tried) t_setup(cls);
    tc->cls = cls;
    tc->r = cls == t_reads.cls && t_current(cls) ? &t_reads : NULL;
    return tc->r;
}

static PyObject *t_dtype(const tensor_reads_t *r, PyObject *v) {
    if (r && (PyObject *)Py_TYPE(v) == r->cls) return r->dtype_get(v, r->dtype_closure);
    return PyObject_GetAttr(v, s_dtype);
}

static PyObject *t_data_ptr(const tensor_reads_t *r, PyObject *v) {
    if (r && (PyObject *)Py_TYPE(v) == r->cls) return r->ptr_fn(v, NULL);
    return PyObject_CallMethodObjArgs(v, s_data_ptr, NULL);
}

static void check_free(check *c) {
    Py_CLEAR(c->obj);
    Py_CLEAR(c->dtype);
    if (c->items) {
        for (Py_ssize_t i = 0; i < c->n; i++) check_free(&c->items[i]);
        PyMem_Free(c->items);
        c->items = NULL;
    }
    PyMem_Free(c->codes); c->codes = NULL;
    PyMem_Free(c->offsets); c->offsets = NULL;
}

static inline int as_int128(PyObject *v, __int128 *out) {  /* an int in the i64 or u64 range; -1 with an error */
    int overflow = 0;
    long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (x == -1 && PyErr_Occurred()) return -1;
    if (!overflow) { *out = x; return 0; }
    if (overflow < 0) { PyErr_SetString(PyExc_OverflowError, "int below the i64 range"); return -1; }
    unsigned long long u = PyLong_AsUnsignedLongLong(v);
    if (u == (unsigned long long)-1 && PyErr_Occurred()) return -1;
    *out = (__int128)u;
    return 0;
}

/* Bytes of a value of pack code c (LAUNCHER_PACK_*), 0 for a code this file does not pack. */
static inline int code_size(int c) {
    switch (c) {
    case LAUNCHER_PACK_BOOL: case LAUNCHER_PACK_I8: case LAUNCHER_PACK_U8: return 1;
    case LAUNCHER_PACK_I16: case LAUNCHER_PACK_U16: return 2;
    case LAUNCHER_PACK_I32: case LAUNCHER_PACK_U32: case LAUNCHER_PACK_F32: return 4;
    case LAUNCHER_PACK_I64: case LAUNCHER_PACK_U64: case LAUNCHER_PACK_F64: return 8;
    case LAUNCHER_PACK_TENSORMAP: return 128;
    }
    return 0;
}

static Py_ssize_t ssize_item(PyObject *t, Py_ssize_t i) {
    PyObject *o = PyTuple_GetItem(t, i);
    return o ? PyLong_AsSsize_t(o) : -1;
}

/* A check's mask (an exact int, 0 to 2**64 - 1: a bool is refused, so that True cannot pass for a mask of 1). */
static int check_mask(PyObject *o, unsigned long long *mask) {
    if (!o || !PyLong_CheckExact(o)) {
        if (o) PyErr_Format(PyExc_TypeError, "a check's mask is an int (0: no divisibility assumed), got %R", o);
        return -1;
    }
    *mask = PyLong_AsUnsignedLongLong(o);
    return *mask == (unsigned long long)-1 && PyErr_Occurred() ? -1 : 0;
}

static int code_item(PyObject *t, Py_ssize_t i, char *code) {  /* a LAUNCHER_PACK_* */
    PyObject *o = PyTuple_GetItem(t, i);
    if (!o) return -1;
    long c = PyLong_AsLong(o);
    if (c == -1 && PyErr_Occurred()) return -1;
    if (c < 0 || c > CHAR_MAX || !code_size((int)c)) { PyErr_Format(PyExc_ValueError, "unknown pack code %R", o); return -1; }
    *code = (char)c;
    return 0;
}

/* The range of an integer pack code's values: 1 with *lo, *hi set; 0 for a code that packs no integer. */
static inline int code_range(char code, __int128 *lo, __int128 *hi) {
    switch (code) {
    case LAUNCHER_PACK_I8: *lo = INT8_MIN; *hi = INT8_MAX; return 1;
    case LAUNCHER_PACK_U8: *lo = 0; *hi = UINT8_MAX; return 1;
    case LAUNCHER_PACK_I16: *lo = INT16_MIN; *hi = INT16_MAX; return 1;
    case LAUNCHER_PACK_U16: *lo = 0; *hi = UINT16_MAX; return 1;
    case LAUNCHER_PACK_I32: *lo = INT32_MIN; *hi = INT32_MAX; return 1;
    case LAUNCHER_PACK_U32: *lo = 0; *hi = UINT32_MAX; return 1;
    case LAUNCHER_PACK_I64: *lo = INT64_MIN; *hi = INT64_MAX; return 1;
    case LAUNCHER_PACK_U64: *lo = 0; *hi = (__int128)UINT64_MAX; return 1;
    }
    return 0;
}

static inline int int_fits(__int128 v, char code) {
    __int128 lo, hi;
    return code_range(code, &lo, &hi) && v >= lo && v <= hi;
}

static int check_build(check *c, PyObject *t, Py_ssize_t limit);

static int checks_build(PyObject *seq, check **out, Py_ssize_t *n_out, Py_ssize_t limit) {
    if (!PyTuple_Check(seq)) { PyErr_SetString(PyExc_TypeError, "checks must be a tuple"); return -1; }
    Py_ssize_t n = PyTuple_Size(seq);
    check *cs = PyMem_Calloc(n ? n : 1, sizeof(check));
    if (!cs) { PyErr_NoMemory(); return -1; }
    *out = cs; *n_out = n;  /* freed by the caller's check_free, even when building fails */
    for (Py_ssize_t i = 0; i < n; i++)
        if (check_build(&cs[i], PyTuple_GetItem(seq, i), limit) < 0) return -1;
    return 0;
}

static int offset_ok(Py_ssize_t offset, char code, Py_ssize_t limit) {
    Py_ssize_t size = code_size(code);
    if (offset < HEADER_SIZE || offset + size > limit) {
        PyErr_Format(PyExc_ValueError, "offset %zd (code %c) outside the %zd-byte buffer", offset, code, limit);
        return 0;
    }
    return 1;
}

static int check_build(check *c, PyObject *t, Py_ssize_t limit) {
    if (!t || !PyTuple_Check(t) || PyTuple_Size(t) < 1) {
        PyErr_SetString(PyExc_TypeError, "a check must be a non-empty tuple");
        return -1;
    }
    long kind = PyLong_AsLong(PyTuple_GetItem(t, 0));
    if (kind == -1 && PyErr_Occurred()) return -1;
    Py_ssize_t n = PyTuple_Size(t);
#define NEED(k) if (n != (k)) { PyErr_Format(PyExc_ValueError, "check kind %ld takes %d items", kind, (k)); return -1; }
    c->kind = (int)kind;
    switch (kind) {
    case LAUNCHER_CHECK_CONSTEXPR:  /* (kind, value, eq) */
        NEED(3);
        c->obj = Py_NewRef(PyTuple_GetItem(t, 1));
        c->eq = PyObject_IsTrue(PyTuple_GetItem(t, 2));
        return c->eq < 0 ? -1 : 0;
    case LAUNCHER_CHECK_POINTER:  /* (kind, class, dtype, mask, offset) */
        NEED(5);
        c->code = LAUNCHER_PACK_U64;
        c->obj = Py_NewRef(PyTuple_GetItem(t, 1));
        c->dtype = Py_NewRef(PyTuple_GetItem(t, 2));
        c->offset = ssize_item(t, 4);
        if (check_mask(PyTuple_GetItem(t, 3), &c->mask) < 0 || PyErr_Occurred()) return -1;
        return offset_ok(c->offset, c->code, limit) ? 0 : -1;
    case LAUNCHER_CHECK_INT:  /* (kind, lo, hi, mask, offset, code) */
        NEED(6);
        if (as_int128(PyTuple_GetItem(t, 1), &c->lo) < 0 || as_int128(PyTuple_GetItem(t, 2), &c->hi) < 0) return -1;
        c->offset = ssize_item(t, 4);
        if (check_mask(PyTuple_GetItem(t, 3), &c->mask) < 0 || PyErr_Occurred() || code_item(t, 5, &c->code) < 0)
            return -1;
        __int128 lo, hi;
        if (!code_range(c->code, &lo, &hi)) {
            PyErr_SetString(PyExc_ValueError, "an int check packs an integer code");
            return -1;
        }
        if (c->lo < lo) c->lo = lo;  /* the range taken is within the code's: one test when packing */
        if (c->hi > hi) c->hi = hi;
        return offset_ok(c->offset, c->code, limit) ? 0 : -1;
    case LAUNCHER_CHECK_FLOAT:  /* (kind, offset, code): F32 or F64 */
        NEED(3);
        c->offset = ssize_item(t, 1);
        if (PyErr_Occurred() || code_item(t, 2, &c->code) < 0) return -1;
        if (c->code != LAUNCHER_PACK_F32 && c->code != LAUNCHER_PACK_F64) {
            PyErr_SetString(PyExc_ValueError, "a float check packs LAUNCHER_PACK_F32 or LAUNCHER_PACK_F64");
            return -1;
        }
        return offset_ok(c->offset, c->code, limit) ? 0 : -1;
    case LAUNCHER_CHECK_BOOL:  /* (kind, offset) */
        NEED(2);
        c->code = LAUNCHER_PACK_U8;
        c->offset = ssize_item(t, 1);
        if (PyErr_Occurred()) return -1;
        return offset_ok(c->offset, c->code, limit) ? 0 : -1;
    case LAUNCHER_CHECK_TUPLE:  /* (kind, (checks...)) */
        NEED(2);
        return checks_build(PyTuple_GetItem(t, 1), &c->items, &c->n, limit);
    case LAUNCHER_CHECK_SKIP:  /* (kind,): a constexpr the caller's key has decided (FlatLaunch) */
        NEED(1);
        return 0;
    case LAUNCHER_CHECK_ADDRESS:  /* (kind, offset): an int address, or what data_ptr() gives (FlatLaunch) */
        NEED(2);
        c->code = LAUNCHER_PACK_U64;
        c->offset = ssize_item(t, 1);
        if (PyErr_Occurred()) return -1;
        return offset_ok(c->offset, c->code, limit) ? 0 : -1;
    case LAUNCHER_CHECK_CALL: {  /* (kind, fn, ((offset, code), ...)): fn(arg) -> values or None */
        NEED(3);
        c->obj = Py_NewRef(PyTuple_GetItem(t, 1));
        PyObject *slots = PyTuple_GetItem(t, 2);
        if (!PyTuple_Check(slots)) { PyErr_SetString(PyExc_TypeError, "call slots must be a tuple"); return -1; }
        c->n = PyTuple_Size(slots);
        c->codes = PyMem_Calloc(c->n ? c->n : 1, 1);
        c->offsets = PyMem_Calloc(c->n ? c->n : 1, sizeof(Py_ssize_t));
        if (!c->codes || !c->offsets) { PyErr_NoMemory(); return -1; }
        for (Py_ssize_t i = 0; i < c->n; i++) {
            PyObject *s = PyTuple_GetItem(slots, i);
            if (!PyTuple_Check(s) || PyTuple_Size(s) != 2) { PyErr_SetString(PyExc_TypeError, "a call slot is (offset, code)"); return -1; }
            c->offsets[i] = ssize_item(s, 0);
            if (PyErr_Occurred() || code_item(s, 1, &c->codes[i]) < 0) return -1;
            if (!offset_ok(c->offsets[i], c->codes[i], limit)) return -1;
        }
        return 0;
    }
    }
#undef NEED
    c->kind = -1;
    PyErr_Format(PyExc_ValueError, "unknown check kind %ld", kind);
    return -1;
}

/* ---- packing ---- */


static inline void put_int(char *buf, Py_ssize_t offset, char code, __int128 v) {  /* little-endian, as struct "<" */
    uint64_t u = (uint64_t)v;
    int size = code_size(code);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    switch (size) {  /* the host's own order: one store (the byte loop was a tenth of a 19-argument launch) */
    case 1: { uint8_t x = (uint8_t)u; memcpy(buf + offset, &x, 1); return; }
    case 2: { uint16_t x = (uint16_t)u; memcpy(buf + offset, &x, 2); return; }
    case 4: { uint32_t x = (uint32_t)u; memcpy(buf + offset, &x, 4); return; }
    case 8: memcpy(buf + offset, &u, 8); return;
    }
#endif
    for (int i = 0; i < size; i++) buf[offset + i] = (char)(u >> (8 * i));
}

static int put_float(char *buf, Py_ssize_t offset, char code, double d) {  /* 0: refused (struct raises) */
    if (code == LAUNCHER_PACK_F64) { memcpy(buf + offset, &d, 8); return 1; }
    float f = (float)d;
    if (isinf(f) && !isinf(d)) return 0;
    memcpy(buf + offset, &f, 4);
    return 1;
}

/* One value a call check's function returned, packed as struct would; 1 packed, 0 declined. */
static int put_value(char *buf, Py_ssize_t offset, char code, PyObject *v) {
    if (code == LAUNCHER_PACK_TENSORMAP) {
        if (!PyBytes_Check(v) || PyBytes_Size(v) != 128) return 0;
        memcpy(buf + offset, PyBytes_AsString(v), 128);
        return 1;
    }
    if (code == LAUNCHER_PACK_F32 || code == LAUNCHER_PACK_F64) {
        if (!PyFloat_Check(v) && !PyLong_Check(v)) return 0;
        double d = PyFloat_AsDouble(v);
        if (d == -1.0 && PyErr_Occurred()) { PyErr_Clear(); return 0; }
        return put_float(buf, offset, code, d);
    }
    if (!PyLong_Check(v) || (code == LAUNCHER_PACK_U64 && PyBool_Check(v))) return 0;  /* a bool is no address */
    __int128 x;
    if (as_int128(v, &x) < 0) { PyErr_Clear(); return 0; }
    if (code == LAUNCHER_PACK_BOOL) {  /* i1 / u1: a bool, or the int 0 or 1 */
        if (x != 0 && x != 1) return 0;
        code = LAUNCHER_PACK_U8;
    }
    if (!int_fits(x, code)) return 0;
    put_int(buf, offset, code, x);
    return 1;
}

/* What an error that Python code a C path ran (data_ptr(), dtype, __index__, an attribute) raised
 * makes of the call: 0, declined, for an Exception (cleared: the general path meets it again and
 * explains); -1, raised, for anything else (KeyboardInterrupt, SystemExit, GeneratorExit): an
 * interrupt is never lost to a fallback that runs the same code again, and may launch. */
static int decline_error(void) {
    if (PyErr_ExceptionMatches(PyExc_Exception)) { PyErr_Clear(); return 0; }
    return -1;
}

/* Check argument `a` against `c` and pack it: 1 packed, 0 declined (the general path decides),
 * -1 an error to raise (only where Python code the check calls raised something other than
 * Exception: KeyboardInterrupt and the like; decline_error). */
static int check_pack(const check *c, PyObject *a, char *buf, t_call *tc) {
    switch (c->kind) {
    case LAUNCHER_CHECK_CONSTEXPR:
        if (a == c->obj) return 1;
        if (!c->eq || Py_TYPE(a) != Py_TYPE(c->obj)) return 0;
        {
            int r = PyObject_RichCompareBool(a, c->obj, Py_EQ);
            return r < 0 ? decline_error() : r;
        }
    case LAUNCHER_CHECK_POINTER: {
        __int128 v;
        if ((PyObject *)Py_TYPE(a) == c->obj) {
            const tensor_reads_t *r = t_for(tc, c->obj, 1);
            PyObject *dt = t_dtype(r, a);
            if (!dt) return decline_error();
            Py_DECREF(dt);  /* identity only: dtypes are singletons */
            if (dt != c->dtype) return 0;
            PyObject *p = t_data_ptr(r, a);
            if (!p) return decline_error();
            int ok = PyLong_Check(p) && as_int128(p, &v) == 0;
            Py_DECREF(p);
            if (!ok) { PyErr_Clear(); return 0; }
        } else if (PyLong_CheckExact(a)) {
            if (as_int128(a, &v) < 0) { PyErr_Clear(); return 0; }
        } else {
            return 0;
        }
        if (!int_fits(v, LAUNCHER_PACK_U64) || (v & c->mask)) return 0;
        put_int(buf, c->offset, LAUNCHER_PACK_U64, v);
        return 1;
    }
    case LAUNCHER_CHECK_INT: {
        if (!PyLong_CheckExact(a)) return 0;
        __int128 v;
        if (as_int128(a, &v) < 0) { PyErr_Clear(); return 0; }
        if (v < c->lo || v > c->hi || (v & c->mask)) return 0;  /* lo, hi: within the code's range */
        put_int(buf, c->offset, c->code, v);
        return 1;
    }
    case LAUNCHER_CHECK_FLOAT:
        if (!PyFloat_CheckExact(a)) return 0;
        return put_float(buf, c->offset, c->code, PyFloat_AsDouble(a));
    case LAUNCHER_CHECK_BOOL:
        if (a != Py_True && a != Py_False) return 0;
        buf[c->offset] = (char)(a == Py_True);
        return 1;
    case LAUNCHER_CHECK_TUPLE:
        if (!PyTuple_CheckExact(a) || PyTuple_Size(a) != c->n) return 0;
        for (Py_ssize_t i = 0; i < c->n; i++) {
            int r = check_pack(&c->items[i], PyTuple_GetItem(a, i), buf, tc);
            if (r != 1) return r;
        }
        return 1;
    case LAUNCHER_CHECK_SKIP:
        return 1;
    case LAUNCHER_CHECK_ADDRESS: {  /* as the generated launch converts a pointer: an int, else data_ptr() (not None, not a bool) */
        __int128 v;
        if (PyLong_CheckExact(a)) {
            if (as_int128(a, &v) < 0) { PyErr_Clear(); return 0; }
        } else if (a == Py_None || PyBool_Check(a)) {
            return 0;
        } else {
            PyObject *p = t_data_ptr(t_for(tc, (PyObject *)Py_TYPE(a), 0), a);
            if (!p) return decline_error();
            int ok = PyLong_CheckExact(p) && as_int128(p, &v) == 0;
            Py_DECREF(p);
            if (!ok) { PyErr_Clear(); return 0; }
        }
        if (!int_fits(v, LAUNCHER_PACK_U64)) return 0;
        put_int(buf, c->offset, LAUNCHER_PACK_U64, v);
        return 1;
    }
    case LAUNCHER_CHECK_CALL: {
        PyObject *vs = PyObject_CallFunctionObjArgs(c->obj, a, NULL);
        if (!vs) return decline_error();
        int r = PyTuple_Check(vs) && PyTuple_Size(vs) == c->n;
        for (Py_ssize_t i = 0; r && i < c->n; i++)
            r = put_value(buf, c->offsets[i], c->codes[i], PyTuple_GetItem(vs, i));
        Py_DECREF(vs);
        return r;
    }
    }
    return 0;
}

/* Check and pack each of `values` with its check: 1 all packed, 0 one declined, -1 an error to
 * raise (check_pack says which). */
static int pack_all(const check *checks, Py_ssize_t n, PyObject *const *values, char *buf) {
    t_call tc = {NULL, NULL};
    for (Py_ssize_t i = 0; i < n; i++) {
        int r = check_pack(&checks[i], values[i], buf, &tc);
        if (r != 1) return r;
    }
    return 1;
}

/* The native call of a packed buffer, shared by FastCall and FlatLaunch: launch it with `plan`
 * (the GIL released around the call) or, with `dry` set, dry-run it, *out getting a new bytes
 * object of what each parameter would receive (out_size bytes, at least one).  Returns NULL
 * with an error set, None (a new reference) when done, or a new (status, packed bytes) tuple
 * when the native library refused it (the caller's launcher raises with those). */
static PyObject *native_call(const launcher_plan *plan, launch_fn launch, dry_run_fn dry, const char *buf,
                             Py_ssize_t size, Py_ssize_t out_size, PyObject **out) {
    int rc;
    if (dry) {
        Py_ssize_t out_len = out_size > 0 ? out_size : 1;
        PyObject *o = PyBytes_FromStringAndSize(NULL, out_len);
        if (!o) return NULL;
        rc = dry(plan, buf, (size_t)size, PyBytes_AsString(o), (size_t)out_len);
        if (!rc) { *out = o; Py_RETURN_NONE; }
        Py_DECREF(o);
    } else {
        Py_BEGIN_ALLOW_THREADS
        rc = launch(plan, buf, (size_t)size);
        Py_END_ALLOW_THREADS
        if (!rc) Py_RETURN_NONE;
    }
    return Py_BuildValue("(iy#)", rc, buf, size);
}

/* ---- the call ---- */

static PyObject *general(FastCall *self, PyObject *args, PyObject *kwargs) {
    PyObject *m = PyObject_GetAttr((PyObject *)self, s_launch);
    if (!m) return NULL;
    PyObject *r = PyObject_Call(m, args, kwargs);
    Py_DECREF(m);
    return r;
}

/* 1 when a launch hook is set (a HookChain with calls, or any other object), 0 when not, -1 on error. */
static int hook_set(PyObject *runtime, PyObject *hook_chain, PyObject *name) {
    PyObject *h = PyObject_GetAttr(runtime, name);
    if (!h) return -1;
    int set;
    if (h == Py_None) {
        set = 0;
    } else if (hook_chain && (PyObject *)Py_TYPE(h) == hook_chain) {
        PyObject *calls = PyObject_GetAttr(h, s_calls);
        set = calls ? PyObject_IsTrue(calls) : -1;
        Py_XDECREF(calls);
    } else {
        set = 1;
    }
    Py_DECREF(h);
    return set;
}

/* The current stream, as the getter gives it: 1 with *stream set where it is an int in
 * [0, 2**64) or has an __index__ giving one (as the general path takes it); 0, declined, for
 * anything else (the general path asks again and names the stream in its error); -1 with the
 * getter's error (or an __index__'s KeyboardInterrupt and the like: decline_error).  The getter
 * and its arguments are held while it runs: it may close this prepared launch. */
static int current_stream(FastCall *self, uint64_t *stream) {
    if (!self->stream_fn) { PyErr_SetString(PyExc_ValueError, "this prepared launch was closed"); return -1; }
    PyObject *fn = Py_NewRef(self->stream_fn), *args = Py_NewRef(self->stream_args);
    PyObject *s = PyObject_Call(fn, args, NULL);
    Py_DECREF(fn);
    Py_DECREF(args);
    if (!s) return -1;
    PyObject *index = PyNumber_Index(s);
    Py_DECREF(s);
    if (!index) return decline_error();
    unsigned long long u = PyLong_AsUnsignedLongLong(index);
    Py_DECREF(index);
    if (u == (unsigned long long)-1 && PyErr_Occurred()) return decline_error();  /* negative, or 2**64 on */
    *stream = u;
    return 1;
}

/* self._failed(status, packed bytes), from native_call's refusal (status, packed bytes). */
static PyObject *failed(FastCall *self, PyObject *refusal) {
    PyObject *m = PyObject_GetAttr((PyObject *)self, s_failed);
    PyObject *r = m ? PyObject_Call(m, refusal, NULL) : NULL;
    Py_XDECREF(m);
    if (!r) return NULL;
    Py_DECREF(r);
    Py_RETURN_NONE;  /* _failed raises; should it not, the launch counts as done */
}

/* The grid from the callable grid: 1 done, 0 declined, -1 error (the callable raised, or an
 * item's __index__ raised KeyboardInterrupt or the like: decline_error). */
static int call_grid(PyObject *grid_fn, PyObject *names, Py_ssize_t n, PyObject *const *values, int32_t grid[3]) {
    PyObject *named = PyDict_New();
    if (!named) return -1;
    for (Py_ssize_t i = 0; i < n; i++)
        if (PyDict_SetItem(named, PyTuple_GetItem(names, i), values[i]) < 0) { Py_DECREF(named); return -1; }
    PyObject *g = PyObject_CallFunctionObjArgs(grid_fn, named, NULL);
    Py_DECREF(named);
    if (!g) return -1;
    int ok = (PyTuple_CheckExact(g) || PyList_CheckExact(g));
    Py_ssize_t len = ok ? PySequence_Size(g) : 0;
    ok = ok && len >= 1 && len <= 3;
    grid[0] = grid[1] = grid[2] = 1;
    for (Py_ssize_t i = 0; ok && i < len; i++) {
        PyObject *item = PySequence_GetItem(g, i);
        PyObject *x = item ? PyNumber_Index(item) : NULL;
        Py_XDECREF(item);
        long long v = x ? PyLong_AsLongLong(x) : -1;
        Py_XDECREF(x);
        if (v == -1 && PyErr_Occurred()) { ok = decline_error(); break; }
        if (v < INT32_MIN || v > INT32_MAX) ok = 0;
        else grid[i] = (int32_t)v;
    }
    Py_DECREF(g);
    return ok;
}

static void checks_destroy(PyObject *capsule) {
    check *cs = PyCapsule_GetPointer(capsule, CHECKS);
    Py_ssize_t *n = PyCapsule_GetContext(capsule);
    if (!cs) { PyErr_Clear(); return; }
    for (Py_ssize_t i = 0; n && i < *n; i++) check_free(&cs[i]);
    PyMem_Free(cs);
    PyMem_Free(n);
}

/* The checks built from the tuple `checks` (values packed within `limit` bytes), in a capsule
 * that owns them; NULL with an error when they are malformed. */
static PyObject *checks_capsule(PyObject *checks, Py_ssize_t limit, Py_ssize_t *n_out) {
    check *cs = NULL;
    Py_ssize_t n = 0, *count = PyMem_Malloc(sizeof(Py_ssize_t));
    if (!count) { PyErr_NoMemory(); return NULL; }
    int r = checks_build(checks, &cs, &n, limit);
    *count = n;
    PyObject *capsule = cs ? PyCapsule_New(cs, CHECKS, checks_destroy) : NULL;
    if (!capsule) {
        for (Py_ssize_t i = 0; cs && i < n; i++) check_free(&cs[i]);
        PyMem_Free(cs);
        PyMem_Free(count);
        return NULL;
    }
    PyCapsule_SetContext(capsule, count);
    if (r < 0) { Py_DECREF(capsule); return NULL; }
    *n_out = n;
    return capsule;
}

/* The binding of a call's arguments to a kernel's n parameters, as Python binds a call of a
 * function with those parameters (none of them *args or **kwargs): the positional ones first
 * (the caller has put them in values[0 .. nargs), nargs <= n, and NULL in the rest), then each
 * keyword at its parameter's index (`keywords`: {exact str: index}), then each parameter left
 * out from `defaults` (n tuples of at most one item: empty, no default).  The keywords come as a
 * vectorcall's (kwnames, their values at kwvalues) or as a dict (kwargs).  values[] are
 * borrowed.  A keyword that names no parameter goes into *options (a new dict, made on the first)
 * where options is given.  The one home of that rule: a prepared call's (FastCall, which declines
 * what is not BIND_OK, and Python explains) and a guarded kernel[grid]'s (gk_call_bound, which
 * raises Python's TypeError itself).  Answers BIND_OK or, with *at the parameter it concerns,
 * what Python would refuse (or, without options, a keyword that names no parameter or is not an
 * exact str); -1 with an error.  Without options it runs no Python code (exact str keys, exact
 * dicts), so what it reads cannot change under it. */
enum { BIND_OK, BIND_TWICE, BIND_MISSING, BIND_UNKNOWN };

static int bind_keyword(PyObject *name, PyObject *value, PyObject *keywords, PyObject **values, PyObject **options,
                        Py_ssize_t *at) {
    /* a str subclass is looked up where options are taken (the guard's call): Python binds it by == */
    int str = PyUnicode_CheckExact(name) || (options && PyUnicode_Check(name));
    PyObject *index = str ? PyDict_GetItemWithError(keywords, name) : NULL;
    if (!index) {
        if (PyErr_Occurred()) return -1;
        if (!options || !str) return BIND_UNKNOWN;
        if (!*options && !(*options = PyDict_New())) return -1;
        return PyDict_SetItem(*options, name, value) < 0 ? -1 : BIND_OK;
    }
    Py_ssize_t i = PyLong_AsSsize_t(index);  /* in [0, n): checked when the keywords were set */
    if (values[i]) { *at = i; return BIND_TWICE; }
    values[i] = value;
    return BIND_OK;
}

static int bind_args(PyObject **values, Py_ssize_t nargs, Py_ssize_t n, PyObject *kwnames, PyObject *const *kwvalues,
                     PyObject *kwargs, PyObject *keywords, PyObject *defaults, PyObject **options, Py_ssize_t *at) {
    int r = BIND_OK;
    if (kwnames) {
        for (Py_ssize_t k = 0; r == BIND_OK && k < PyTuple_Size(kwnames); k++)
            r = bind_keyword(PyTuple_GetItem(kwnames, k), kwvalues[k], keywords, values, options, at);
    } else if (kwargs) {
        Py_ssize_t pos = 0;
        PyObject *key, *value;
        while (r == BIND_OK && PyDict_Next(kwargs, &pos, &key, &value))
            r = bind_keyword(key, value, keywords, values, options, at);
    }
    for (Py_ssize_t i = nargs; r == BIND_OK && i < n; i++) {
        if (values[i]) continue;
        PyObject *fill = PyTuple_GetItem(defaults, i);
        if (PyTuple_Size(fill) != 1) { *at = i; return BIND_MISSING; }
        values[i] = PyTuple_GetItem(fill, 0);
    }
    return r;
}

/* The values of a prepared call with keywords, or with another number of positional arguments
 * (bind_args, as launcher.prepared.bind binds them): 1, bound, values[] new references; 0,
 * declined (more arguments than parameters, or what bind_args does not bind), values[] untouched:
 * the general path raises what Python's binding raises, or takes the keyword as its own; -1 with
 * an error. */
static int bind_call(PyObject *args, PyObject *kwargs, PyObject *keywords, PyObject *defaults, Py_ssize_t n,
                     PyObject **values) {
    Py_ssize_t given = PyTuple_Size(args), at;
    if (given > n) return 0;
    for (Py_ssize_t i = 0; i < n; i++) values[i] = i < given ? PyTuple_GetItem(args, i) : NULL;
    int r = bind_args(values, given, n, NULL, NULL, kwargs, keywords, defaults, NULL, &at);
    if (r != BIND_OK) return r < 0 ? -1 : 0;
    for (Py_ssize_t i = 0; i < n; i++) Py_INCREF(values[i]);
    return 1;
}

static PyObject *fc_call(PyObject *op, PyObject *args, PyObject *kwargs) {
    FastCall *self = (FastCall *)op;
    if (!self->ready) return general(self, args, kwargs);
    int named = kwargs && PyDict_Size(kwargs);  /* keywords: bound below (bind_call) */
    if (self->runtime) {  /* held: reading a hook may run Python code that closes this launch */
        PyObject *runtime = Py_NewRef(self->runtime), *chain = self->hook_chain ? Py_NewRef(self->hook_chain) : NULL;
        int e = hook_set(runtime, chain, s_enter);
        int x = e == 0 ? hook_set(runtime, chain, s_exit) : 0;
        Py_DECREF(runtime);
        Py_XDECREF(chain);
        if (e < 0 || x < 0) return NULL;
        if (e || x || !self->ready) return general(self, args, kwargs);
    }
    Py_ssize_t n = PyTuple_Size(args);
    if (n == 0 && !named) {  /* the prepared arguments: the launch bound at prepare time */
        if (!self->bound) return general(self, args, kwargs);
        uint64_t stream;
        int got = current_stream(self, &stream);
        if (got < 0) return NULL;
        if (!got || !self->bound) return general(self, args, kwargs);  /* an odd stream, or closed meanwhile */
        PyObject *keep = Py_NewRef(self->bound_keep), *buf = Py_NewRef(self->bound_buf);
        bound_fn fn = self->bound_launch;
        launcher_bound *h = self->bound;
        int rc;
        Py_BEGIN_ALLOW_THREADS
        rc = fn(h, stream);
        Py_END_ALLOW_THREADS
        PyObject *r = Py_NewRef(Py_None);
        if (rc) {  /* refused: _failed raises */
            PyObject *refusal = Py_BuildValue("(iO)", rc, buf);
            Py_DECREF(r);
            r = refusal ? failed(self, refusal) : NULL;
            Py_XDECREF(refusal);
        }
        Py_DECREF(keep);
        Py_DECREF(buf);
        return r;
    }
    if (!self->checks || n > self->n_checks) return general(self, args, kwargs);
    int bind = named || (n != self->n_min && n != self->n_checks);  /* else positional, trailing constexprs */

    /* Everything this call reads, held for its duration: a check's function, data_ptr(), a
     * grid callable or the stream getter run Python code, which may close this prepared launch
     * (clearing the fields) or run it on another thread. */
    PyObject *capsule = Py_NewRef(self->checks), *keep = Py_NewRef(self->plan_keep);
    PyObject *tmpl = Py_NewRef(self->template_), *trailing = Py_NewRef(self->trailing), *names = Py_NewRef(self->names);
    PyObject *split = self->split ? Py_NewRef(self->split) : NULL;
    PyObject *grid_fn = self->grid_fn ? Py_NewRef(self->grid_fn) : NULL;
    const check *checks = PyCapsule_GetPointer(capsule, CHECKS);
    Py_ssize_t n_checks = self->n_checks, n_min = self->n_min, size = self->size, out_size = self->out_size;
    launch_fn launch = self->launch;
    dry_run_fn dry = split ? self->dry_run : NULL;
    const launcher_plan *plan = self->plan;
    int32_t grid[3] = {self->grid[0], self->grid[1], self->grid[2]};
    PyObject *result = NULL;
    int owned = 0;  /* values[] are new references (bind_call's) */
    char stack[4096], *buf = size <= (Py_ssize_t)sizeof stack ? stack : PyMem_Malloc(size);
    PyObject *values_stack[64], **values = n_checks <= 64 ? values_stack : PyMem_Malloc(n_checks * sizeof(PyObject *));
    if (!buf || !values || !checks) { if (!PyErr_Occurred()) PyErr_NoMemory(); goto done; }
    memcpy(buf, PyBytes_AsString(tmpl), size);
    if (bind) {  /* no Python code has run since ready was checked: keywords and defaults are there */
        owned = bind_call(args, named ? kwargs : NULL, self->keywords, self->defaults, n_checks, values);
        if (owned < 0) { owned = 0; goto done; }
        if (!owned) { result = general(self, args, kwargs); goto done; }
    } else {
        for (Py_ssize_t i = 0; i < n_checks; i++)  /* borrowed: args and trailing are held */
            values[i] = i < n ? PyTuple_GetItem(args, i) : PyTuple_GetItem(trailing, i - n_min);
    }
    int r = pack_all(checks, n_checks, (PyObject *const *)values, buf);
    if (r < 0) goto done;
    int decline = !r;
    if (!decline && grid_fn) {
        int r = call_grid(grid_fn, names, n_checks, (PyObject *const *)values, grid);
        if (r < 0) goto done;
        decline = !r;
    }
    if (decline || !self->ready) { result = general(self, args, kwargs); goto done; }
    uint64_t stream;
    int got = current_stream(self, &stream);
    if (got < 0) goto done;
    if (!got || !self->ready) { result = general(self, args, kwargs); goto done; }  /* an odd stream, or closed */
    memcpy(buf + STREAM_AT, &stream, 8);
    memcpy(buf + GRID_AT, grid, 12);
    PyObject *out = NULL, *ran = native_call(plan, launch, dry, buf, size, out_size, &out);
    if (ran && ran != Py_None) result = failed(self, ran);  /* refused */
    else if (ran && out) result = PyObject_CallFunctionObjArgs(split, out, NULL);  /* dry run: split bytes */
    else result = Py_XNewRef(ran);
    Py_XDECREF(ran);
    Py_XDECREF(out);
done:
    if (buf && buf != stack) PyMem_Free(buf);
    for (Py_ssize_t i = 0; owned && i < n_checks; i++) Py_DECREF(values[i]);
    if (values && values != values_stack) PyMem_Free(values);
    Py_DECREF(capsule); Py_DECREF(keep); Py_DECREF(tmpl); Py_DECREF(trailing); Py_DECREF(names);
    Py_XDECREF(split); Py_XDECREF(grid_fn);
    return result;
}

/* ---- setup and teardown ---- */

static void fc_clear_state(FastCall *self) {
    self->ready = 0;
    self->bound = NULL; self->bound_launch = NULL; self->plan = NULL; self->launch = NULL; self->dry_run = NULL;
    self->n_checks = self->n_min = 0;
    Py_CLEAR(self->stream_fn); Py_CLEAR(self->stream_args);
    Py_CLEAR(self->runtime); Py_CLEAR(self->hook_chain);
    Py_CLEAR(self->bound_keep); Py_CLEAR(self->bound_buf); Py_CLEAR(self->plan_keep);
    Py_CLEAR(self->template_); Py_CLEAR(self->grid_fn); Py_CLEAR(self->names);
    Py_CLEAR(self->trailing); Py_CLEAR(self->split); Py_CLEAR(self->checks);
    Py_CLEAR(self->keywords); Py_CLEAR(self->defaults);
}

/* cfg[key], borrowed; NULL with a KeyError when it is missing. */
static PyObject *get(PyObject *cfg, const char *key) {
    PyObject *v = PyDict_GetItemString(cfg, key);
    if (!v) PyErr_Format(PyExc_KeyError, "_fast_set: no %s", key);
    return v;
}

static int get_ref(PyObject *cfg, const char *key, PyObject **out, int none_is_null) {
    PyObject *v = get(cfg, key);
    if (!v) return -1;
    *out = none_is_null && v == Py_None ? NULL : Py_NewRef(v);
    return 0;
}

static int get_size(PyObject *cfg, const char *key, Py_ssize_t *out) {
    PyObject *v = get(cfg, key);
    if (!v) return -1;
    *out = PyLong_AsSsize_t(v);
    return PyErr_Occurred() ? -1 : 0;
}

static int get_address(PyObject *cfg, const char *key, uintptr_t *out) {
    PyObject *v = get(cfg, key);
    if (!v) return -1;
    unsigned long long a = PyLong_AsUnsignedLongLong(v);
    if (a == (unsigned long long)-1 && PyErr_Occurred()) return -1;
    if (!a) { PyErr_Format(PyExc_ValueError, "_fast_set: %s is a null address", key); return -1; }
    *out = (uintptr_t)a;
    return 0;
}

/* What bind_call reads, checked once: `keywords` maps exact strs to distinct ints in [0, n),
 * `defaults` holds n tuples of at most one item. */
static int fits_binding(PyObject *keywords, PyObject *defaults, Py_ssize_t n) {
    if (PyTuple_Size(defaults) != n) goto bad;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *fill = PyTuple_GetItem(defaults, i);
        if (!PyTuple_CheckExact(fill) || PyTuple_Size(fill) > 1) goto bad;
    }
    if (PyDict_Size(keywords) > n) goto bad;
    char *seen = PyMem_Calloc(n ? n : 1, 1);
    if (!seen) { PyErr_NoMemory(); return -1; }
    Py_ssize_t pos = 0;
    PyObject *key, *at;
    int ok = 1;
    while (ok && PyDict_Next(keywords, &pos, &key, &at)) {
        Py_ssize_t i = PyLong_CheckExact(at) ? PyLong_AsSsize_t(at) : -1;
        if (i == -1) PyErr_Clear();
        ok = PyUnicode_CheckExact(key) && i >= 0 && i < n && !seen[i];
        if (ok) seen[i] = 1;
    }
    PyMem_Free(seen);
    if (ok) return 0;
bad:
    PyErr_SetString(PyExc_ValueError, "keywords and defaults do not fit the parameters");
    return -1;
}

static int set_state(FastCall *self, PyObject *cfg) {
    PyObject *bound, *grid, *checks;
    if (get_ref(cfg, "stream_fn", &self->stream_fn, 0) || get_ref(cfg, "stream_args", &self->stream_args, 0)
            || get_ref(cfg, "runtime", &self->runtime, 1) || get_ref(cfg, "hook_chain", &self->hook_chain, 1)
            || get_ref(cfg, "template", &self->template_, 0) || get_ref(cfg, "grid_fn", &self->grid_fn, 1)
            || get_ref(cfg, "names", &self->names, 0) || get_ref(cfg, "trailing", &self->trailing, 0)
            || get_ref(cfg, "split", &self->split, 1) || get_ref(cfg, "plan_keep", &self->plan_keep, 0)
            || get_ref(cfg, "keywords", &self->keywords, 0) || get_ref(cfg, "defaults", &self->defaults, 0)
            || get_size(cfg, "out_size", &self->out_size) || get_size(cfg, "n_min", &self->n_min)
            || !(bound = get(cfg, "bound")) || !(grid = get(cfg, "grid")) || !(checks = get(cfg, "checks")))
        return -1;
    if (!PyTuple_Check(self->stream_args) || !PyBytes_Check(self->template_) || !PyTuple_Check(self->names)
            || !PyTuple_Check(self->trailing) || !PyTuple_CheckExact(self->defaults) || !PyDict_CheckExact(self->keywords)) {
        PyErr_SetString(PyExc_TypeError,
                        "_fast_set: stream_args, names, trailing and defaults are tuples, keywords a dict, template bytes");
        return -1;
    }
    self->size = PyBytes_Size(self->template_);
    if (self->size < HEADER_SIZE) {
        PyErr_SetString(PyExc_ValueError, "_fast_set: the template is shorter than the launch header");
        return -1;
    }
    if (bound != Py_None) {  /* p(): the launch bound at prepare time */
        uintptr_t h, fn;
        if (get_address(cfg, "bound", &h) || get_address(cfg, "bound_launch", &fn)
                || get_ref(cfg, "bound_keep", &self->bound_keep, 0) || get_ref(cfg, "bound_buf", &self->bound_buf, 0))
            return -1;
        self->bound = (launcher_bound *)h;
        self->bound_launch = (bound_fn)fn;
    }
    if (grid != Py_None) {
        if (!PyTuple_Check(grid) || PyTuple_Size(grid) != 3) {
            PyErr_SetString(PyExc_TypeError, "_fast_set: grid is 3 ints or None");
            return -1;
        }
        for (int i = 0; i < 3; i++) {
            long long g = PyLong_AsLongLong(PyTuple_GetItem(grid, i));
            if (g == -1 && PyErr_Occurred()) return -1;
            if (g < INT32_MIN || g > INT32_MAX) { PyErr_SetString(PyExc_OverflowError, "_fast_set: grid beyond int32"); return -1; }
            self->grid[i] = (int32_t)g;
        }
    } else if (!self->grid_fn && checks != Py_None) {
        PyErr_SetString(PyExc_ValueError, "_fast_set: no grid and no grid callable");
        return -1;
    }
    if (checks != Py_None) {  /* p(*args): each argument checked and packed */
        uintptr_t plan, launch, dry = 0;
        if (get_address(cfg, "plan", &plan) || get_address(cfg, "launch", &launch)
                || (self->split && get_address(cfg, "dry_run", &dry)))
            return -1;
        self->plan = (const launcher_plan *)plan;
        self->launch = (launch_fn)launch;
        self->dry_run = (dry_run_fn)dry;
        Py_ssize_t n = 0;
        if (!(self->checks = checks_capsule(checks, self->size, &n))) return -1;
        self->n_checks = n;
        if (PyTuple_Size(self->names) != n || self->n_min < 0 || self->n_min > n
                || PyTuple_Size(self->trailing) != n - self->n_min) {
            PyErr_SetString(PyExc_ValueError, "_fast_set: names, n_min and trailing do not fit the checks");
            return -1;
        }
        if (fits_binding(self->keywords, self->defaults, n) < 0) return -1;
        PyObject *own = PyDict_Copy(self->keywords);  /* checked: a copy the caller cannot change */
        if (!own) return -1;
        replace_ref(&self->keywords, own);
    }
    return 0;
}

/* _fast_set(cfg): the C path of this prepared launch, from the dict that
 * launcher.prepared.PreparedLaunch._fast_setup makes (it says what each key holds). */
static PyObject *fc_fast_set(PyObject *op, PyObject *cfg) {
    FastCall *self = (FastCall *)op;
    if (!PyDict_Check(cfg)) { PyErr_SetString(PyExc_TypeError, "_fast_set takes a dict"); return NULL; }
    fc_clear_state(self);
    if (set_state(self, cfg) < 0) {
        fc_clear_state(self);
        return NULL;
    }
    self->ready = 1;
    Py_RETURN_NONE;
}

static PyObject *fc_fast_clear(PyObject *op, PyObject *unused) {
    fc_clear_state((FastCall *)op);
    Py_RETURN_NONE;
}

static PyObject *fc_fast_ready(PyObject *op, PyObject *unused) {
    FastCall *self = (FastCall *)op;
    return Py_BuildValue("(OO)", self->ready && self->bound ? Py_True : Py_False,
                         self->ready && self->checks ? Py_True : Py_False);
}

static int check_traverse(const check *c, visitproc visit, void *arg) {
    Py_VISIT(c->obj);
    Py_VISIT(c->dtype);
    for (Py_ssize_t i = 0; c->items && i < c->n; i++) {
        int r = check_traverse(&c->items[i], visit, arg);
        if (r) return r;
    }
    return 0;
}

static int capsule_traverse(PyObject *capsule, visitproc visit, void *arg) {
    if (!capsule) return 0;
    const check *cs = PyCapsule_GetPointer(capsule, CHECKS);
    Py_ssize_t *n = PyCapsule_GetContext(capsule);
    for (Py_ssize_t i = 0; cs && n && i < *n; i++) {
        int r = check_traverse(&cs[i], visit, arg);
        if (r) return r;
    }
    return 0;
}

/* The checks' objects (constexpr values, tensor classes, dtypes, descriptor functions) are
 * visited through the capsule that owns them, so that a cycle through one of them (a tensor
 * class that refers to the launch) is collected and the launch's module given back. */
static int fc_traverse(PyObject *op, visitproc visit, void *arg) {
    FastCall *self = (FastCall *)op;
    int r = capsule_traverse(self->checks, visit, arg);
    if (r) return r;
    Py_VISIT(Py_TYPE(op));
    Py_VISIT(self->stream_fn); Py_VISIT(self->stream_args); Py_VISIT(self->runtime); Py_VISIT(self->hook_chain);
    Py_VISIT(self->bound_keep); Py_VISIT(self->bound_buf); Py_VISIT(self->plan_keep); Py_VISIT(self->grid_fn);
    Py_VISIT(self->names); Py_VISIT(self->trailing); Py_VISIT(self->split); Py_VISIT(self->template_);
    Py_VISIT(self->keywords); Py_VISIT(self->defaults);
    return 0;
}

static int fc_clear(PyObject *op) {
    fc_clear_state((FastCall *)op);
    return 0;
}

/* Every type here: untrack, clear with the type's own clear, free, and drop the (heap) type,
 * which this dealloc holds for a Python subclass too (PreparedLaunch's instances). */
static void gc_dealloc(PyObject *op, inquiry clear) {
    PyTypeObject *tp = Py_TYPE(op);
    PyObject_GC_UnTrack(op);
    clear(op);
    freefunc tp_free = (freefunc)PyType_GetSlot(tp, Py_tp_free);
    tp_free(op);
    Py_DECREF(tp);
}

static void fc_dealloc(PyObject *op) { gc_dealloc(op, fc_clear); }

static PyMethodDef fc_methods[] = {
    {"_fast_set", fc_fast_set, METH_O, "Set the C path of this prepared launch (see launcher.prepared)."},
    {"_fast_clear", fc_fast_clear, METH_NOARGS, "Drop the C path: every call takes the general path."},
    {"_fast_ready", fc_fast_ready, METH_NOARGS, "(p() is a bound launch, p(*args) has checks) in C."},
    {NULL, NULL, 0, NULL},
};

/* A garbage-collected type of this module, launcher._call.Type: its slots prefix_slots (the
 * type's own, given after its doc; prefix_traverse, prefix_clear and prefix_dealloc, which is
 * gc_dealloc with prefix_clear; the doc) and its spec prefix_spec, with `flags`. */
#define GC_TYPE(prefix, Type, flags, doc, ...) \
    static PyType_Slot prefix##_slots[] = { \
        __VA_ARGS__, {Py_tp_traverse, prefix##_traverse}, {Py_tp_clear, prefix##_clear}, \
        {Py_tp_dealloc, prefix##_dealloc}, {Py_tp_doc, doc}, {0, NULL}}; \
    static PyType_Spec prefix##_spec = { \
        "launcher._call." #Type, sizeof(Type), 0, Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | (flags), prefix##_slots}

GC_TYPE(fc, FastCall, Py_TPFLAGS_BASETYPE,
        "The C call of a prepared launch: p() and p(*args) (base of launcher.prepared.PreparedLaunch).",
        {Py_tp_call, fc_call}, {Py_tp_methods, fc_methods});

/* ---- the flat launch of a kernel launcher.fast_dispatch and bundles have chosen ----
 *
 * FlatLaunch(plan, plan_keep, launch, size, checks, dry_run=0, out_size=0, record=None) is made
 * once per spec shape (launcher.cuda_launcher._Shape.flat): `checks` holds one check per kernel
 * parameter, in order (launcher.checks.c_checks without assumptions: skip for a constexpr,
 * address for a pointer, int, float, bool, or a tuple of those).  Its bound method
 * launch(function, stream, grid, *values) packs the header (launcher_header) and every value into
 * the shape's buffer and launches it, with no Python code between the call and the driver: None
 * when launched, (status, packed bytes) when the driver refused (the caller's launcher raises with
 * them), False when it declined: a value of another type or range than the checks take, a grid
 * that is not a tuple or list of 1 to 3 ints, a count that does not fit.  A declined call is the
 * caller's generated launch to make, which converts, checks and explains: like every path in this
 * file, this one never raises about an argument.  The caller's key has decided what the compiled
 * kernel assumed (alignment, constexprs); this only packs.  With record set it is a dry run:
 * record(packed bytes, bytes the driver would receive) instead of the launch (the CPU tests).
 * Nothing here changes after it is made, so calls on several threads share it. */
typedef struct {
    PyObject_HEAD
    launch_fn launch; dry_run_fn dry_run; const launcher_plan *plan;
    PyObject *plan_keep, *record, *checks;  /* checks: a capsule of n checks */
    Py_ssize_t n, size, out_size;
} FlatLaunch;

/* An exact int that fits code (U64 for handles): 1 with *out set, 0 (no error set) when not one. */
static int exact_int(PyObject *v, char code, __int128 *out) {
    if (!PyLong_CheckExact(v)) return 0;
    if (as_int128(v, out) < 0) { PyErr_Clear(); return 0; }
    return int_fits(*out, code);
}

static PyObject *fl_launch(PyObject *op, PyObject *const *args, Py_ssize_t nargs) {
    FlatLaunch *self = (FlatLaunch *)op;
    if (!self->checks || nargs != 3 + self->n) Py_RETURN_FALSE;
    __int128 function, stream;
    int32_t grid[3] = {1, 1, 1};
    PyObject *g = args[2];
    int is_list = PyList_CheckExact(g);
    if (!exact_int(args[0], LAUNCHER_PACK_U64, &function) || !exact_int(args[1], LAUNCHER_PACK_U64, &stream)
            || (!is_list && !PyTuple_CheckExact(g)))
        Py_RETURN_FALSE;
    Py_ssize_t glen = is_list ? PyList_Size(g) : PyTuple_Size(g);
    if (glen < 1 || glen > 3) Py_RETURN_FALSE;
    for (Py_ssize_t i = 0; i < glen; i++) {  /* read before any value runs Python code (data_ptr) */
        __int128 x;
        if (!exact_int(is_list ? PyList_GetItem(g, i) : PyTuple_GetItem(g, i), LAUNCHER_PACK_I32, &x)) Py_RETURN_FALSE;
        grid[i] = (int32_t)x;
    }
    PyObject *capsule = Py_NewRef(self->checks), *keep = Py_NewRef(self->plan_keep);
    PyObject *record = self->record ? Py_NewRef(self->record) : NULL;
    const check *checks = PyCapsule_GetPointer(capsule, CHECKS);
    const Py_ssize_t size = self->size;
    PyObject *result = NULL;
    char stack[4096], *buf = size <= (Py_ssize_t)sizeof stack ? stack : PyMem_Malloc(size);
    if (!buf || !checks) { if (!PyErr_Occurred()) PyErr_NoMemory(); goto done; }
    memset(buf, 0, size);
    put_int(buf, FUNCTION_AT, LAUNCHER_PACK_U64, function);
    put_int(buf, STREAM_AT, LAUNCHER_PACK_U64, stream);
    memcpy(buf + GRID_AT, grid, 12);
    int r = pack_all(checks, self->n, args + 3, buf);
    if (r < 0) goto done;
    if (!r) { result = Py_NewRef(Py_False); goto done; }
    PyObject *out = NULL, *ran = native_call(self->plan, self->launch, record ? self->dry_run : NULL, buf, size,
                                             self->out_size, &out);
    if (ran == Py_None && out) {  /* dry run: recorded */
        PyObject *packed = PyBytes_FromStringAndSize(buf, size);
        PyObject *rec = packed ? PyObject_CallFunctionObjArgs(record, packed, out, NULL) : NULL;
        Py_XDECREF(packed);
        if (!rec) Py_CLEAR(ran);
        Py_XDECREF(rec);
    }
    result = ran;  /* None, (status, packed bytes), or NULL */
    Py_XDECREF(out);
done:
    if (buf && buf != stack) PyMem_Free(buf);
    Py_DECREF(capsule); Py_DECREF(keep); Py_XDECREF(record);
    return result;
}

static PyObject *fl_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    unsigned long long plan, launch, dry_run = 0;
    PyObject *plan_keep, *checks, *record = Py_None;
    Py_ssize_t size, out_size = 0;
    static char *names[] = {"plan", "plan_keep", "launch", "size", "checks", "dry_run", "out_size", "record", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "KOKnO|KnO", names, &plan, &plan_keep, &launch, &size, &checks,
                                     &dry_run, &out_size, &record))
        return NULL;
    if (!plan || !launch || (record != Py_None && (!dry_run || !PyCallable_Check(record)))) {
        PyErr_SetString(PyExc_ValueError, "FlatLaunch: a null address, or a record without a dry run");
        return NULL;
    }
    if (size < HEADER_SIZE || out_size < 0) {
        PyErr_SetString(PyExc_ValueError, "FlatLaunch: a buffer shorter than the launch header");
        return NULL;
    }
    Py_ssize_t n = 0;
    PyObject *capsule = checks_capsule(checks, size, &n);
    if (!capsule) return NULL;
    allocfunc alloc = (allocfunc)PyType_GetSlot(type, Py_tp_alloc);
    FlatLaunch *self = (FlatLaunch *)alloc(type, 0);
    if (!self) { Py_DECREF(capsule); return NULL; }
    self->plan = (const launcher_plan *)(uintptr_t)plan;
    self->launch = (launch_fn)(uintptr_t)launch;
    self->dry_run = (dry_run_fn)(uintptr_t)dry_run;
    self->plan_keep = Py_NewRef(plan_keep);
    self->record = record == Py_None ? NULL : Py_NewRef(record);
    self->size = size; self->out_size = out_size;
    self->checks = capsule;
    self->n = n;
    return (PyObject *)self;
}

static int fl_traverse(PyObject *op, visitproc visit, void *arg) {
    FlatLaunch *self = (FlatLaunch *)op;
    int r = capsule_traverse(self->checks, visit, arg);
    if (r) return r;
    Py_VISIT(Py_TYPE(op));
    Py_VISIT(self->plan_keep); Py_VISIT(self->record);
    return 0;
}

static int fl_clear(PyObject *op) {
    FlatLaunch *self = (FlatLaunch *)op;
    self->n = 0;
    Py_CLEAR(self->checks); Py_CLEAR(self->plan_keep); Py_CLEAR(self->record);
    return 0;
}

static void fl_dealloc(PyObject *op) { gc_dealloc(op, fl_clear); }

static PyMethodDef fl_methods[] = {
    {"launch", (PyCFunction)(void (*)(void))fl_launch, METH_FASTCALL,
     "launch(function, stream, grid, *values): None launched, (status, packed bytes) refused by the driver, "
     "False declined."},
    {NULL, NULL, 0, NULL},
};

GC_TYPE(fl, FlatLaunch, 0,
        "FlatLaunch(plan, plan_keep, launch, size, checks, dry_run=0, out_size=0, record=None): "
        "one shape's pack and launch in C (launcher.cuda_launcher).",
        {Py_tp_new, fl_new}, {Py_tp_methods, fl_methods});

/* ---- host tensor descriptors: launcher.tensormap.DescriptorEncoder's common call in C ----
 *
 * A TMA-lowered kernel takes a host TensorDescriptor as (CUtensorMap bytes, *shape, *strides).
 * DescEncoder(fallback, ndim, check_tf32) is called with the descriptor, as the Python encoder
 * is: a descriptor whose base is an int or has data_ptr(), whose shape and strides are lists
 * or tuples of `ndim` ints (the last stride 1), with padding "zero" or "nan" and no tf32
 * rounding asked for, is encoded here with the format Python armed for that padding (_arm),
 * in one call of the native library's launcher_encode_tensor_map, with no cache (an encode
 * costs less than a cache's key).  Everything else, an encoder failure included, goes to
 * `fallback` (the Python DescriptorEncoder), which checks, encodes and explains: this code
 * never raises about a descriptor, it only declines (what Python code it runs raised, an
 * Exception, is the fallback's to meet again; a KeyboardInterrupt or the like is raised:
 * decline_error).  It reads what the Python encoder reads, as that reads it: the padding an
 * exact str (tensordesc.nan_padding), round_f32_to_tf32 as getattr(desc, name, False) does, the
 * sizes and strides as tuple() iterates them. */
typedef struct {
    PyObject_HEAD
    PyObject *fallback;        /* desc -> values: the Python encoder */
    encode_fn encode;          /* launcher_encode_tensor_map, once armed */
    const launcher_tensor_map_format *format[2];  /* by padding (zero, nan); NULL: not armed, the fallback encodes */
    PyObject *keep[2];         /* what owns each format */
    Py_ssize_t ndim;
    int check_tf32;            /* the kernel's release reads round_f32_to_tf32: set, it declines */
} DescEncoder;

static PyObject *s_base, *s_shape, *s_strides, *s_padding, *s_tf32;

/* Whether seq is a list (1) or a tuple (0) whose items are what iterating it gives: an exact
 * one, or one of a subclass that keeps the base's __iter__ (torch.Size); -1 for anything else. */
static int plain_sequence(PyObject *seq) {
    int is_list = PyList_Check(seq);
    if (!is_list && !PyTuple_Check(seq)) return -1;
    if (is_list ? PyList_CheckExact(seq) : PyTuple_CheckExact(seq)) return is_list;
    PyTypeObject *base = is_list ? &PyList_Type : &PyTuple_Type;
    return PyType_GetSlot(Py_TYPE(seq), Py_tp_iter) == PyType_GetSlot(base, Py_tp_iter) ? is_list : -1;
}

/* The ints of a list or tuple of n exact ints into dims, and the items themselves into objs (new
 * references, which the caller releases, set or not: Python code that runs later, a property or
 * a finalizer, may empty a list); 0 (no error set) when it is not one. */
static int int_items(PyObject *seq, Py_ssize_t n, int64_t *dims, PyObject **objs) {
    int is_list = plain_sequence(seq);
    if (is_list < 0) return 0;
    if ((is_list ? PyList_Size(seq) : PyTuple_Size(seq)) != n) return 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *v = is_list ? PyList_GetItem(seq, i) : PyTuple_GetItem(seq, i);
        if (!v || !PyLong_CheckExact(v)) { PyErr_Clear(); return 0; }
        int overflow = 0;
        long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
        if (overflow || (x == -1 && PyErr_Occurred())) { PyErr_Clear(); return 0; }
        dims[i] = x;
        objs[i] = Py_NewRef(v);
    }
    return 1;
}

/* The encoded values of `desc`; NULL without an error where the fallback must take it, NULL
 * with one where Python code it ran raised something other than an Exception. */
static PyObject *desc_fast(DescEncoder *self, PyObject *desc) {
    PyObject *base = NULL, *shape = NULL, *strides = NULL, *padding = NULL, *result = NULL, *items[10] = {NULL};
    int64_t dims[10];
    uint64_t address;
    const Py_ssize_t n = self->ndim;
    if (!self->encode || n < 1 || n > 5) return NULL;
    if (!(base = PyObject_GetAttr(desc, s_base))) goto decline;
    if (PyLong_CheckExact(base)) {
        address = PyLong_AsUnsignedLongLong(base);
    } else {
        t_call tc = {NULL, NULL};
        PyObject *p = t_data_ptr(t_for(&tc, (PyObject *)Py_TYPE(base), 0), base);
        if (!p) goto decline;
        address = PyLong_CheckExact(p) ? PyLong_AsUnsignedLongLong(p) : (unsigned long long)-1;
        Py_DECREF(p);
    }
    if (address == (uint64_t)-1) goto decline;  /* not an address (or a negative one): Python says so */
    if (!(padding = PyObject_GetAttr(desc, s_padding)) || !PyUnicode_CheckExact(padding)) goto decline;
    int nan = PyUnicode_CompareWithASCIIString(padding, "nan") == 0;
    if (!nan && PyUnicode_CompareWithASCIIString(padding, "zero") != 0) goto decline;
    if (!self->format[nan]) goto decline;
    if (self->check_tf32) {
        PyObject *r = PyObject_GetAttr(desc, s_tf32);
        if (!r && !PyErr_ExceptionMatches(PyExc_AttributeError)) goto decline;  /* as getattr(desc, name, False) */
        PyErr_Clear();
        int plain = !r || r == Py_False;
        Py_XDECREF(r);
        if (!plain) goto decline;
    }
    if (!(shape = PyObject_GetAttr(desc, s_shape)) || !int_items(shape, n, dims, items)) goto decline;
    if (!(strides = PyObject_GetAttr(desc, s_strides)) || !int_items(strides, n, dims + n, items + n)) goto decline;
    if (dims[2 * n - 1] != 1) goto decline;
    char map[128];
    if (self->encode(map, self->format[nan], address, dims) != 0) goto decline;
    if (!(result = PyTuple_New(1 + 2 * n))) goto decline;
    PyObject *data = PyBytes_FromStringAndSize(map, 128);
    if (!data) goto decline;
    PyTuple_SetItem(result, 0, data);
    for (Py_ssize_t i = 0; i < 2 * n; i++) {  /* the items encoded, held since they were read */
        PyTuple_SetItem(result, 1 + i, items[i]);
        items[i] = NULL;
    }
    Py_DECREF(base); Py_DECREF(shape); Py_DECREF(strides); Py_DECREF(padding);
    return result;
decline:  /* an error on the way (an attribute missing, no memory) is the fallback's to meet again */
    if (PyErr_Occurred()) decline_error();  /* a KeyboardInterrupt or the like stays set */
    for (Py_ssize_t i = 0; i < 2 * n; i++) Py_XDECREF(items[i]);
    Py_XDECREF(result); Py_XDECREF(base); Py_XDECREF(shape); Py_XDECREF(strides); Py_XDECREF(padding);
    return NULL;
}

static PyObject *de_call(PyObject *op, PyObject *args, PyObject *kwargs) {
    DescEncoder *self = (DescEncoder *)op;
    if (!kwargs && PyTuple_Size(args) == 1) {
        PyObject *out = desc_fast(self, PyTuple_GetItem(args, 0));
        if (out || PyErr_Occurred()) return out;
    }
    return PyObject_Call(self->fallback, args, kwargs);
}

static PyObject *de_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    PyObject *fallback;
    Py_ssize_t ndim;
    int check_tf32;
    static char *names[] = {"fallback", "ndim", "check_tf32", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "Onp", names, &fallback, &ndim, &check_tf32)) return NULL;
    if (!PyCallable_Check(fallback)) { PyErr_SetString(PyExc_TypeError, "DescEncoder: fallback must be callable"); return NULL; }
    allocfunc alloc = (allocfunc)PyType_GetSlot(type, Py_tp_alloc);
    DescEncoder *self = (DescEncoder *)alloc(type, 0);
    if (!self) return NULL;
    self->fallback = Py_NewRef(fallback);
    self->ndim = ndim;
    self->check_tf32 = check_tf32;
    return (PyObject *)self;
}

/* _arm(nan, encode_address, format_address, keep): descriptors with that padding are encoded
 * here from now on, with the format at format_address (kept alive through `keep`). */
static PyObject *de_arm(PyObject *op, PyObject *args) {
    DescEncoder *self = (DescEncoder *)op;
    int nan;
    unsigned long long fn, fmt;
    PyObject *keep;
    if (!PyArg_ParseTuple(args, "pKKO", &nan, &fn, &fmt, &keep)) return NULL;
    if (!fn || !fmt) { PyErr_SetString(PyExc_ValueError, "DescEncoder._arm: null address"); return NULL; }
    PyObject *old = self->keep[nan];
    self->keep[nan] = Py_NewRef(keep);
    Py_XDECREF(old);
    self->encode = (encode_fn)(uintptr_t)fn;
    self->format[nan] = (const launcher_tensor_map_format *)(uintptr_t)fmt;
    Py_RETURN_NONE;
}

static PyObject *de_armed(PyObject *op, PyObject *unused) {
    DescEncoder *self = (DescEncoder *)op;
    return Py_BuildValue("(OO)", self->format[0] ? Py_True : Py_False, self->format[1] ? Py_True : Py_False);
}

static int de_traverse(PyObject *op, visitproc visit, void *arg) {
    DescEncoder *self = (DescEncoder *)op;
    Py_VISIT(Py_TYPE(op));
    Py_VISIT(self->fallback); Py_VISIT(self->keep[0]); Py_VISIT(self->keep[1]);
    return 0;
}

static int de_clear(PyObject *op) {
    DescEncoder *self = (DescEncoder *)op;
    self->format[0] = self->format[1] = NULL;
    self->encode = NULL;
    Py_CLEAR(self->fallback); Py_CLEAR(self->keep[0]); Py_CLEAR(self->keep[1]);
    return 0;
}

static void de_dealloc(PyObject *op) { gc_dealloc(op, de_clear); }

static PyMethodDef de_methods[] = {
    {"_arm", de_arm, METH_VARARGS, "_arm(nan, encode_address, format_address, keep): encode that padding in C."},
    {"_armed", de_armed, METH_NOARGS, "(zero padding, NaN padding) encoded in C."},
    {NULL, NULL, 0, NULL},
};

GC_TYPE(de, DescEncoder, 0,
        "DescEncoder(fallback, ndim, check_tf32): a host tensor descriptor's values, encoded in C "
        "(launcher.tensormap.DescriptorEncoder).",
        {Py_tp_new, de_new}, {Py_tp_call, de_call}, {Py_tp_methods, de_methods});

/* ---- a guarded kernel[grid] call: its key, and its hit ----
 *
 * GuardKey(params, heads, tensor, int_key, classify, no_key, mask, hit=None, entries=None) is made
 * once per guarded kernel (launcher.fast_dispatch.Guard._namespace) and per bundled kernel
 * (launcher.bundle_kernel.BundleKernel._generate), and carries out, in C, the key rules
 * Python states (launcher.fast_dispatch and launcher.specialization: this file decides none of
 * them), the guard's hit, and the guard's kernel[grid] call (below: it binds the arguments and
 * hits, and leaves the rest to the generated general path, launcher.codegen.GUARD_TEMPLATE).
 *
 * heads: what the key starts with, each read as its spec says (gk_head): "device" (first),
 * "options" (the launch options' key), ("attr", obj, name), ("own", obj, name, default[, plain]),
 * ("env", fn, (variable name, ...)).  The device and the options' key are given to key() and
 * find() (the "given" heads, in order); a hit reads the device from its getter, and its options'
 * key is ().  The others are read on every call (the guard's: the kernel's debug flag and the
 * knobs in Triton's key, launcher.fast_dispatch._knobs), an "env" head's fn where the
 * environment changed since (env_unchanged).
 *
 * key(*given heads, *arguments) takes the given heads and then one argument per kernel
 * parameter, and answers the key tuple: the heads, then two items per parameter:
 *   a constexpr:       its class and its value (a tuple: table(v), spec.bounded, which
 *                      refuses one nested too deep to hash and keys its items by class and
 *                      value, where the parameter has a table);
 *   a parameter keyed by value (a bundle's autotune key or heuristics input): an exact int,
 *                      float, bool, str or None by its class and its value; anything else
 *                      table(v) (the parameter's own callable), None;
 *   a `tensor`:        its dtype, and whether data_ptr() & mask is 0 (True/False) where the
 *                      parameter is specialized on alignment, False where only specialized, None;
 *   an exact int:      int_key's code (read from the parameter's table of int_key's codes,
 *                      specialization.INT_KEYS, else int_key(v, specialize, align)), None;
 *   a float, a bool, None: its class, None;
 *   an exact tuple:    the tuple of its items' keys (gk_item_key: Triton specializes them fully,
 *                      as specialization.item_key states), None;
 *   anything else:     classify(v, specialize, align, tensor), None.
 * The answer is the tuple (key, *values): the launch value of each parameter marked `out`, a
 * tensor's data_ptr() (read once, for the key and the launch), else the argument.  Where classify
 * answers an instance of `no_key` (an argument of a class that never keys), that instance stands
 * where the key would (the values None): the guard's code looks for it on a miss only.  Errors raised by the Python code called (int_key, classify, data_ptr) propagate.
 *
 * hit(grid, *arguments), where `hit` was given (a dict: what the generated code reads, and the
 * current-device getter), is the guard's hit, whole, for a call without launch options: the key as
 * key() makes it, the entry recorded for it (entries[key], a codegen.GuardEntry, its fields at
 * the positions `fields` names), and, where that entry still holds (the kernel's hash, its
 * device_caches entry for the device and Triton's kernel cache still what was recorded), no
 * pre-run hooks, no stages hook and no launch hook is set (hook_set, the rule of
 * triton_adapter.hooks_set): the kernel's used globals checked (check_globals), the grid
 * evaluated (a callable is called with the arguments by parameter name), the current stream
 * read (stream(device)), and the launch: the entry's flat launch (FlatLaunch.launch, called
 * directly) with every tensor's data_ptr() read for the key, else (no flat launch, or it
 * declined) the entry's direct launch with grid3(grid); a driver refusal goes to the entry's
 * launcher._launch_failed, which raises.  It answers the kernel launched; or, before anything is
 * called that the general path would call again, what key() answers where it made the key but
 * found no entry that holds (a miss, or a NoKey: the general path takes it, and does not make it
 * again), or NotImplemented: a key that cannot be made (the error is cleared: the general path
 * makes it again and explains), a hook or a pre-run hook set.  Errors of what it calls after that point
 * (check_globals, the grid, the stream, the launches) propagate, as they do from the generated
 * code.  Each launch is counted (guard_hits()).
 *
 * find(*given heads, *arguments), where `entries` was given (a dict: key -> entry), is the lookup
 * alone, for callers that launch by themselves (launcher.bundle_kernel): (entry, key, *the out
 * parameters' launch values), entry None where the dict has none for the key (or the key is a
 * NoKey); errors of the called code, and a key that cannot be hashed, raise.  hit() looks up in
 * the same way.  Where a hit was given, an entry found must also still hold (above).
 *
 * The last key found and its entry are remembered: a call whose key items equal that key's (each
 * as the dict compares keys: identity, else ==) takes that entry without making the key tuple or
 * looking it up; whether the entry still holds is tested as for any other, and where it no
 * longer does, the key is looked up (the guard may have recorded a newer entry for it).
 * Without a hit nothing tests that an entry still holds: the pair serves its key until forget()
 * lets go of it (a bundle that releases its entries' modules).
 *
 * call(grid, *args, **kwargs), where set_call() gave the general path, the parameters' defaults
 * and the never-keying class (if any), is kernel[grid](*args, **kwargs): see gk_call_bound.
 * GuardItem hands out kernel[grid] as a GuardCall, whose call is this one with the grid bound.
 * `live` says whether the guard is in front of its kernel (only then does a call hit); settle()
 * replaces the device getter and the tensor class once torch's CUDA is up.
 *
 * Besides the remembered pair, only the device getter and the tensor class (settle()), `live`
 * and the call's parts (set_call()) change after it is made, each replaced whole; calls hold
 * what they call while they call it, so calls on several threads share it (one that replaces
 * the pair only makes another look its key up). */
enum { GK_ARGUMENT, GK_CONSTEXPR, GK_BY_VALUE };  /* how a parameter is keyed (params' first item) */

typedef struct {
    char mode, specialize, align, out;
    PyObject *table;  /* an argument's {int: int_key code} of its (specialize, align); a by-value one's
                       * callable; NULL for a constexpr */
} gk_param;

enum { F_HASH, F_CACHES, F_KERNEL_GET, F_TRITON_KEY, F_KERNEL, F_LAUNCHER, F_FUNCTION, F_DIRECT, F_FLAT, F_COUNT };
static const char *const gk_field_names[F_COUNT] = {
    "hash", "caches", "kernel_get", "triton_key", "kernel", "launcher", "function", "direct", "flat"};

/* A head of the key (heads' items): the device (given to key() and find(); the `device` getter's
 * answer in a hit), the launch options' key (given to key(); () in a hit), obj.name (attr),
 * obj.__dict__.get(name, extra) (own: a knob's own setting; obj's instance dict read without the
 * attribute lookup where the head says its class is plain: plain_dict), obj(*extra) (env: a
 * function of the environment variable extra[0] alone, called again only where the environment
 * may have changed since: env_unchanged). */
enum { H_DEVICE, H_OPTIONS, H_ATTR, H_OWN, H_ENV };
static const char *const gk_head_kinds[] = {"device", "options", "attr", "own", "env"};

/* ---- an environment variable, watched: the one home of when an "env" head is read again ----
 * What a read of the environment saw: the `environ` array, its entry count, its last entry and
 * the variable's first entry (its index, -1 where it had none), as pointers and, for the two
 * entries, as copies of their text. glibc's setenv, putenv, unsetenv and clearenv (os.environ's
 * writes call them) each change one of these for any change of the variable's value: an entry
 * added goes at the end (a new last entry, or a new array), a value replaced is another string in
 * the variable's slot, an entry removed moves the later ones down (the last slot becomes the
 * terminator), clearenv sets `environ` to NULL. The texts are compared too because a putenv
 * string is its caller's: freed after it is replaced or removed, its address may come back with
 * another variable or value. Not seen: C code that assigns `environ` itself (glibc may then shrink
 * its old array in place, under the same address). */
extern char **environ;
typedef struct {
    char **env, *last, *entry;
    char *last_text, *entry_text;  /* copies (PyMem), or NULL */
    size_t n;
    Py_ssize_t at;
} env_seen;

static void env_forget(env_seen *w) {
    PyMem_Free(w->last_text);
    PyMem_Free(w->entry_text);
    memset(w, 0, sizeof *w);
}

static char *env_copy(const char *text) {
    size_t size = strlen(text) + 1;
    char *c = PyMem_Malloc(size);
    return c ? memcpy(c, text, size) : NULL;
}

/* Look at the environment now (prefix: "NAME="); 0, or -1 where a copy could not be made. */
static int env_look(env_seen *w, const char *prefix, size_t len) {
    char **e = environ;
    memset(w, 0, sizeof *w);
    w->env = e; w->at = -1;
    for (size_t i = 0; e && e[i]; i++) {
        if (w->at < 0 && !strncmp(e[i], prefix, len)) { w->at = (Py_ssize_t)i; w->entry = e[i]; }
        w->n = i + 1;
        w->last = e[i];
    }
    if ((w->last && !(w->last_text = env_copy(w->last))) || (w->entry && !(w->entry_text = env_copy(w->entry)))) {
        env_forget(w);
        return -1;
    }
    return 0;
}

static int env_unchanged(const env_seen *w) {
    char **e = environ;
    if (e != w->env) return 0;
    if (!e) return 1;
    if (e[w->n] || (w->n && (e[w->n - 1] != w->last || strcmp(e[w->n - 1], w->last_text)))) return 0;
    return w->at < 0 || (e[w->at] == w->entry && !strcmp(e[w->at], w->entry_text));
}

typedef struct {
    char kind;
    PyObject *obj, *name, *extra;
    PyObject *plain;  /* own: the class obj had when it was judged plain (its __dict__ is the instance dict:
                       * fast_dispatch._plain(type(obj), ())), or NULL; read so only while obj is of it */
    PyObject *value;  /* env: obj(*extra)'s last answer, while `seen` holds (else NULL) */
    env_seen seen;  /* env: the environment before that call */
} gk_head;

typedef struct {
    PyObject_HEAD
    gk_param *params;
    Py_ssize_t n, heads, given, outs;
    gk_head *head;
    PyObject *tensor, *int_key, *classify, *no_key;
    unsigned long long mask;
    /* hit: all set, or none */
    PyObject *jit, *runtime, *device, *stream, *hook_chain, *check_globals, *grid3, *names;
    Py_ssize_t fields[F_COUNT];
    PyObject *plain;  /* the kernel's class where the attributes a hit reads are what its __dict__ holds, where it
                       * holds them (read so only while the kernel is of that class), or NULL */
    PyObject *entries;  /* key -> entry (find and hit), or NULL */
    PyObject *last;  /* (key, entry) of the last key found, or NULL */
    PyObject **last_items;  /* that key's items (borrowed from it), heads + 2n of them: set with `last` */
    PyObject *last_call;  /* the GuardCall gcl_new made last (kernel[grid] of the same grid object is it again), or NULL */
    /* who is in charge of a guarded kernel's call (optional parts of the hit): the guard's run (set_call), which
     * kernel[grid] calls only while it is the kernel's run; the run the guard put on the kernel's class (a hit
     * only while the class's run is still it); Triton's driver config and the active driver the device and
     * stream getters came from (a hit only while that driver is still active); Triton's JITCallable class */
    PyObject *run, *class_run, *driver_config, *active, *driver_plain, *jit_callable;
    PyObject *left;  /* left(entry, device, grid, bound): the launch of what a grid callable left in its arguments, or NULL */
    /* the call (set_call): all set, or none */
    PyObject *general, *keywords, *defaults, *never_class, *kname;
    Py_ssize_t never;  /* the parameter whose argument of class never_class goes to the general path, or -1 */
    int live;  /* whether the guard is in front of its kernel: a call hits only then */
    int bundle;  /* the call is a bundled kernel's (set_bundle_call): its hit is gk_bundle_hit */
    Py_ssize_t positional;  /* a bundled kernel's parameters a call may pass by position */
} GuardKey;

static PyObject *s_hash, *s_device_caches, *s_pre_run_hooks, *s_stages, *s_used_globals, *s_launch_failed;
static PyObject *s_active, *s_cache_key, *s_grid, *s_warmup, *s_run;
static PyTypeObject *flat_type;  /* launcher._call.FlatLaunch: its launch is called directly */
static unsigned long long guard_hit_count;

static void release(PyObject **values, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++) Py_CLEAR(values[i]);
}

/* The one home of reading an object's instance dict in place of its attributes: obj's instance
 * dict while obj is of `cls`, the class judged plain for the names read (launcher.fast_dispatch
 * ._plain), and cls still looks attributes up generically; else NULL with no error (cls NULL or
 * None, obj of another class since, or cls (or a base) given a __getattribute__ or __getattr__
 * since, which sets its tp_getattro slot: read its attributes).  A new reference, or NULL with an
 * error. */
static PyObject *plain_dict(PyObject *obj, PyObject *cls) {
    return cls && (PyObject *)Py_TYPE(obj) == cls && t_generic(cls) ? PyObject_GenericGetDict(obj, NULL) : NULL;
}

/* obj.name: read from dict (obj's __dict__, where its class is plain: no __getattribute__,
 * __getattr__ or data descriptor of that name) where it holds the name, else as an attribute.
 * A new reference, or NULL with an error. */
static PyObject *attr_of(PyObject *obj, PyObject *dict, PyObject *name) {
    if (dict) {
        PyObject *v = PyDict_GetItemWithError(dict, name);
        if (v) return Py_NewRef(v);
        if (PyErr_Occurred()) return NULL;
    }
    return PyObject_GetAttr(obj, name);
}

/* 1 where obj.name (attr_of) is true (truth=1) or is not None (truth=0); -1 with an error. */
static int attr_set(PyObject *obj, PyObject *dict, PyObject *name, int truth) {
    PyObject *v = attr_of(obj, dict, name);
    if (!v) return -1;
    int r = truth ? PyObject_IsTrue(v) : v != Py_None;
    Py_DECREF(v);
    return r;
}

/* The heads of a call, as new references in out[0 .. heads): the given ones from `given`, in
 * order (the device, the options' key), or where `given` is NULL (a hit: a call without launch
 * options) the device getter's answer and (); the others as their spec says.  0, or -1 with an
 * error (nothing left in out). */
static int gk_heads(GuardKey *self, PyObject *const *given, PyObject **out, PyObject *jd) {
    Py_ssize_t g = 0;
    for (Py_ssize_t i = 0; i < self->heads; i++) {
        const gk_head *h = &self->head[i];
        PyObject *v = NULL, *d;
        switch (h->kind) {
        case H_DEVICE:
            if (given) {
                v = Py_NewRef(given[g++]);
            } else {
                PyObject *get = Py_NewRef(self->device);  /* settle() may replace it meanwhile */
                v = PyObject_CallObject(get, NULL);
                Py_DECREF(get);
            }
            break;
        case H_OPTIONS:
            v = given ? Py_NewRef(given[g++]) : PyTuple_New(0);
            break;
        case H_ATTR:
            v = attr_of(h->obj, h->obj == self->jit ? jd : NULL, h->name);
            break;
        case H_OWN:
            if (!(d = plain_dict(h->obj, h->plain)) && (PyErr_Occurred() || !(d = PyObject_GetAttr(h->obj, s_dict))))
                break;
            if (PyDict_CheckExact(d)) {  /* a dict subclass's own get() is what obj.__dict__.get() calls */
                v = PyDict_GetItemWithError(d, h->name);
                if (v) Py_INCREF(v);
                else if (!PyErr_Occurred()) v = Py_NewRef(h->extra);
            } else {
                v = PyObject_CallMethod(d, "get", "OO", h->name, h->extra);
            }
            Py_DECREF(d);
            break;
        default: {
            gk_head *w = &self->head[i];
            if (w->value && env_unchanged(&w->seen)) { v = Py_NewRef(w->value); break; }
            env_seen seen;  /* before the call: a change while it runs is seen next time */
            if (env_look(&seen, PyBytes_AsString(w->name), (size_t)PyBytes_Size(w->name)) < 0) { PyErr_NoMemory(); break; }
            if (!(v = PyObject_Call(h->obj, h->extra, NULL))) { env_forget(&seen); break; }
            PyObject *old = w->value;  /* the pair is replaced whole: the call may have run this code meanwhile */
            env_forget(&w->seen);
            w->seen = seen;
            w->value = Py_NewRef(v);
            Py_XDECREF(old);
        }
        }
        if (!v) { release(out, i); return -1; }
        out[i] = v;
    }
    return 0;
}

#define GK_STACK 64  /* parameters whose launch values live on the stack; more are allocated */
#define GK_ITEMS (8 + 2 * GK_STACK)  /* key items on the stack; more are allocated */

/* An array of n NULLs: `stack` (GK_STACK items) where n fits, else allocated (NULL: no memory). */
static inline PyObject **gk_nulls(PyObject **stack, Py_ssize_t n) {
    if (n > GK_STACK) return PyMem_Calloc((size_t)n, sizeof(PyObject *));
    memset(stack, 0, (size_t)n * sizeof(PyObject *));
    return stack;
}

/* Whether the address `p` (data_ptr()'s answer) has no bit of `mask` set: 1, 0, or -1 with an error. */
static int gk_aligned(PyObject *p, unsigned long long mask) {
    if (PyLong_CheckExact(p)) {
        unsigned long long low = PyLong_AsUnsignedLongLongMask(p);
        if (low == (unsigned long long)-1 && PyErr_Occurred()) return -1;
        return !(low & mask);
    }
    PyObject *m = PyLong_FromUnsignedLongLong(mask), *r = m ? PyNumber_And(p, m) : NULL;  /* as `not p & mask` reads it */
    Py_XDECREF(m);
    if (!r) return -1;
    int t = PyObject_IsTrue(r);
    Py_DECREF(r);
    return t < 0 ? -1 : !t;
}

/* A tensor's part of a key, the one rule for arguments and tuple items alike: *dtype, *ptr
 * (data_ptr()'s answer: the launch value) and *aligned (True where data_ptr() & mask is 0 and the
 * parameter is specialized with alignment, False where it is not aligned or specialized without
 * alignment, None where it is not specialized), all new references; 0, or -1 with an error and
 * no reference held. */
static int gk_tensor(GuardKey *self, PyObject *v, int specialize, int align, t_call *tc,
                     PyObject **dtype, PyObject **ptr, PyObject **aligned) {
    const tensor_reads_t *reads = t_for(tc, self->tensor, 1);
    if (!(*dtype = t_dtype(reads, v))) return -1;
    if (!(*ptr = t_data_ptr(reads, v))) { Py_CLEAR(*dtype); return -1; }
    int r = specialize && align ? gk_aligned(*ptr, self->mask) : 0;
    if (r < 0) { Py_CLEAR(*dtype); Py_CLEAR(*ptr); return -1; }
    *aligned = Py_NewRef(r ? Py_True : specialize ? Py_False : Py_None);
    return 0;
}

#define GK_TUPLE_DEPTH 32  /* tuples nested deeper are keyed by classify */

/* An exact int's code in `table` (one of specialization.INT_KEYS: int_key's memo of its codes):
 * table[a], a new reference; NULL without an error where the table has none (the caller asks
 * int_key, which fills it), NULL with an error.  The answers are remembered here too, by the
 * table and the int's value, in a small direct-mapped cache: a dict lookup of an int costs about
 * as much as the rest of an int argument's key and pack together.  Nothing is restated: a code
 * comes from the table, and int_key's codes depend on the value alone. */
#define IC_BITS 9
typedef struct { PyObject *table, *code; long long v; } ic_slot;
static ic_slot int_codes[1 << IC_BITS];

static PyObject *table_code(PyObject *table, PyObject *a) {
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(a, &overflow);
    ic_slot *slot = NULL;
    if (v == -1 && PyErr_Occurred()) return NULL;
    if (!overflow) {
        uint64_t h = ((uint64_t)v ^ (uint64_t)((uintptr_t)table >> 4)) * 0x9E3779B97F4A7C15ull;
        slot = &int_codes[h >> (64 - IC_BITS)];
        if (slot->table == table && slot->v == v) return Py_NewRef(slot->code);
    }
    PyObject *code = PyDict_GetItemWithError(table, a);
    if (!code) return NULL;
    Py_INCREF(code);
    if (slot) {  /* the slot is whole before the old entry's references go (no Python code runs between) */
        PyObject *old_table = slot->table, *old_code = slot->code;
        slot->table = Py_NewRef(table); slot->code = Py_NewRef(code); slot->v = v;
        Py_XDECREF(old_table); Py_XDECREF(old_code);
    }
    return code;
}

/* An exact int's part of a key, the one rule for arguments and tuple items alike: its code in
 * `table` (the parameter's INT_KEYS table, the one of (specialize, align); NULL: none at hand),
 * else int_key(v, specialize, align)'s answer, which puts the code in its table (None beyond 64
 * bits).  A new reference, or NULL with an error. */
static PyObject *gk_int(GuardKey *self, PyObject *table, PyObject *v, int specialize, int align) {
    PyObject *k = table ? table_code(table, v) : NULL;
    if (k || PyErr_Occurred()) return k;
    return PyObject_CallFunctionObjArgs(self->int_key, v, specialize ? Py_True : Py_False, align ? Py_True : Py_False,
                                        NULL);
}

/* The key of an item of an exact tuple argument (Triton specializes items fully), by the rule of
 * specialization.item_key (and, for what that leaves, the guard's or the bundle's classify): a `tensor` by
 * (dtype, data_ptr() & mask is 0), an exact int by int_key's code (the parameter's table where it is
 * specialized fully, else int_key(v, True, True)), a float, bool or None by its class, an exact
 * tuple by the tuple of its items' keys, anything else by classify(v, True, True, tensor), whose
 * NoKey is raised.  A new reference, or NULL with an error. */
static PyObject *gk_item_key(GuardKey *self, const gk_param *p, PyObject *v, int depth, t_call *tc) {
    PyTypeObject *cls = Py_TYPE(v);
    PyObject *k;
    if ((PyObject *)cls == self->tensor) {  /* an item is specialized fully */
        PyObject *dtype, *ptr, *aligned;
        if (gk_tensor(self, v, 1, 1, tc, &dtype, &ptr, &aligned) < 0) return NULL;
        k = PyTuple_Pack(2, dtype, aligned);
        Py_DECREF(dtype); Py_DECREF(ptr); Py_DECREF(aligned);
        return k;
    }
    if (PyLong_CheckExact(v)) return gk_int(self, p->specialize && p->align ? p->table : NULL, v, 1, 1);
    if (PyFloat_CheckExact(v) || PyBool_Check(v) || v == Py_None) return Py_NewRef((PyObject *)cls);
    if (PyTuple_CheckExact(v) && depth < GK_TUPLE_DEPTH) {
        Py_ssize_t n = PyTuple_Size(v);
        PyObject *key = PyTuple_New(n);
        for (Py_ssize_t i = 0; key && i < n; i++) {
            PyObject *item = gk_item_key(self, p, PyTuple_GetItem(v, i), depth + 1, tc);
            if (!item) Py_CLEAR(key);
            else PyTuple_SetItem(key, i, item);
        }
        return key;
    }
    k = PyObject_CallFunctionObjArgs(self->classify, v, Py_True, Py_True, self->tensor, NULL);
    if (k && (PyObject *)Py_TYPE(k) == self->no_key) {  /* a class that never keys, inside a tuple */
        PyErr_SetObject(self->no_key, k);
        Py_CLEAR(k);
    }
    return k;
}

/* The key's items of a call (heads: self->heads values, args: self->n arguments), as new
 * references in items[0 .. heads + 2n): 0; or 1 where an argument of a class that never keys
 * was found (*nokey: a new reference to the NoKey instance that stands for the key; no items
 * are left); or -1 with an error (no items left).  values[i] gets a new reference to a tensor
 * argument's data_ptr() (NULL for other arguments: the launch value is the argument); the caller
 * releases them, also after an error. */
/* The key of a JIT function passed as an argument (a Triton JITCallable), the one rule for it: its cache_key, as
 * Triton's cache key takes it (compute_cache_key puts each JITCallable's cache_key in its place, so a function
 * whose source changed makes another key): the `hash` it holds once cache_key has been read (a str; None again
 * after _unsafe_update_src), else cache_key itself, which computes it.  A new reference, NULL with an error. */
static PyObject *jit_key(PyObject *fn) {
    PyObject *h = PyObject_GetAttr(fn, s_hash);  /* a bound constexpr_function has none: its cache_key */
    if (h && PyUnicode_CheckExact(h)) return h;
    Py_XDECREF(h);
    if (!h) {
        if (!PyErr_ExceptionMatches(PyExc_AttributeError)) return NULL;
        PyErr_Clear();
    }
    return PyObject_GetAttr(fn, s_cache_key);
}

static PyObject *mod_jit_key(PyObject *module, PyObject *fn) {
    return jit_key(fn);
}

/* Whether the guard is in charge of its kernel's call, besides being in front of it (live): 0 where it is; 1
 * where the kernel's class's run is no longer the run the guard put there (other code put its own there since:
 * that code runs first, and the guard beneath it); 2 where Triton's active driver is no longer the one the
 * guard's device and stream getters came from (the guard is out of date); -1 with an error. */
static int gk_in_charge(GuardKey *self) {
    if (!self->jit) return 0;
    if (self->class_run) {
        PyObject *r = PyObject_GetAttr((PyObject *)Py_TYPE(self->jit), s_run);
        if (!r) return -1;
        int same = r == self->class_run;
        Py_DECREF(r);
        if (!same) return 1;
    }
    if (self->driver_config) {
        PyObject *d = plain_dict(self->driver_config, self->driver_plain);
        if (!d && PyErr_Occurred()) return -1;
        PyObject *a = attr_of(self->driver_config, d, s_active);
        Py_XDECREF(d);
        if (!a) return -1;
        int same = a == self->active;
        Py_DECREF(a);
        if (!same) return 2;
    }
    return 0;
}

static PyObject *gk_in_charge_py(PyObject *op, PyObject *unused) {
    int r = gk_in_charge((GuardKey *)op);
    return r < 0 ? NULL : PyLong_FromLong(r);
}

static int gk_items(GuardKey *self, PyObject *const *heads, PyObject *const *args, PyObject **items, PyObject **values,
                    PyObject **nokey) {
    t_call tc = {NULL, NULL};  /* the tensor class's reads, asked once per call */
    for (Py_ssize_t i = 0; i < self->heads; i++) items[i] = Py_NewRef(heads[i]);
    Py_ssize_t at = self->heads;
    for (Py_ssize_t i = 0; i < self->n; i++, at += 2) {
        const gk_param *p = &self->params[i];
        PyObject *a = args[i], *k = NULL, *d = NULL;
        PyTypeObject *cls = Py_TYPE(a);
        if (p->mode == GK_CONSTEXPR || (p->mode == GK_BY_VALUE && (PyLong_CheckExact(a) || PyFloat_CheckExact(a)
                || PyBool_Check(a) || PyUnicode_CheckExact(a) || a == Py_None))) {
            k = Py_NewRef((PyObject *)cls);
            if (p->mode == GK_CONSTEXPR && p->table && PyTuple_Check(a)) {  /* bounded before anything hashes it */
                if (!(d = PyObject_CallFunctionObjArgs(p->table, a, NULL))) { Py_DECREF(k); goto error; }
            } else if (p->mode == GK_CONSTEXPR && self->jit_callable && PyObject_TypeCheck(a, (PyTypeObject *)self->jit_callable)) {
                if (!(d = jit_key(a))) { Py_DECREF(k); goto error; }
            } else {
                d = Py_NewRef(a);
            }
        } else if (p->mode == GK_BY_VALUE) {
            if (!(k = PyObject_CallFunctionObjArgs(p->table, a, NULL))) goto error;
        } else if ((PyObject *)cls == self->tensor) {
            if (gk_tensor(self, a, p->specialize, p->align, &tc, &k, &values[i], &d) < 0) goto error;
        } else if (PyLong_CheckExact(a)) {
            if (!(k = gk_int(self, p->table, a, p->specialize, p->align))) goto error;
        } else if (PyFloat_CheckExact(a) || PyBool_Check(a) || a == Py_None) {
            k = Py_NewRef((PyObject *)cls);
        } else if (PyTuple_CheckExact(a)) {
            if (!(k = gk_item_key(self, p, a, 1, &tc))) goto error;
        } else {
            k = PyObject_CallFunctionObjArgs(self->classify, a, p->specialize ? Py_True : Py_False,
                                             p->align ? Py_True : Py_False, self->tensor, NULL);
            if (!k) goto error;
            if ((PyObject *)Py_TYPE(k) == self->no_key) {  /* never keys: the NoKey stands for the key */
                release(items, at);
                *nokey = k;
                return 1;
            }
        }
        items[at] = k;
        items[at + 1] = d ? d : Py_NewRef(Py_None);
    }
    return 0;
error:
    release(items, at);
    return -1;
}

/* The key tuple of items (gk_items'), whose references it takes; NULL with an error (the items released). */
static PyObject *gk_tuple(PyObject **items, Py_ssize_t n) {
    PyObject *key = PyTuple_New(n);
    if (!key) { release(items, n); return NULL; }
    for (Py_ssize_t i = 0; i < n; i++) { PyTuple_SetItem(key, i, items[i]); items[i] = NULL; }
    return key;
}

/* The key of a call: a new tuple, a new reference to the NoKey instance that stands for it, or
 * NULL with an error (values: as gk_items). */
static PyObject *gk_build(GuardKey *self, PyObject *const *heads, PyObject *const *args, PyObject **values) {
    const Py_ssize_t size = self->heads + 2 * self->n;
    PyObject *stack[GK_ITEMS], **items = size <= GK_ITEMS ? stack : PyMem_Calloc(size, sizeof(PyObject *)), *key;
    if (!items) return PyErr_NoMemory();
    int r = gk_items(self, heads, args, items, values, &key);
    if (r == 0) key = gk_tuple(items, size);
    else if (r < 0) key = NULL;
    if (items != stack) PyMem_Free(items);
    return key;
}

/* Whether the last key (`key`: self->last's, held by the caller, read from self->last just now)
 * holds exactly items (as a dict lookup compares keys: identity, else equal hashes and ==): 1, 0, -1 with an
 * error.  Identity is tested on self->last_items, its items as an array, before any Python code
 * can run (another thread may replace the last key after that); == on the tuple itself. */
static int gk_same(GuardKey *self, PyObject *key, PyObject *const *items, Py_ssize_t n) {
    Py_ssize_t i = 0;
    PyObject *const *last = self->last_items;
    while (i < n && last[i] == items[i]) i++;
    for (; i < n; i++) {
        PyObject *k = PyTuple_GetItem(key, i);
        if (k == items[i]) continue;
        Py_hash_t hk = PyObject_Hash(k), hi = hk == -1 ? -1 : PyObject_Hash(items[i]);
        if (hi == -1) return -1;  /* unhashable: the dict's lookup raises too */
        if (hk != hi) return 0;  /* as the dict: equal only with equal hashes (an __eq__ that says True to all is not enough) */
        int r = PyObject_RichCompareBool(k, items[i], Py_EQ);
        if (r <= 0) return r;
    }
    return 1;
}


/* (key, *the out parameters' launch values): what key() answers, and hit() where it keys a call it
 * does not launch; find()'s answer has the entry (a new reference, NULL for None) first.  Steals
 * `key` and `entry`; NULL with an error. */
static PyObject *gk_answer(GuardKey *self, PyObject *key, PyObject *const *args, PyObject *const *values,
                           int with_entry, PyObject *entry) {
    PyObject *result = PyTuple_New(with_entry + 1 + self->outs);
    if (!result) { Py_DECREF(key); Py_XDECREF(entry); return NULL; }
    int keyed = (PyObject *)Py_TYPE(key) != self->no_key;  /* else the values are None */
    if (with_entry) PyTuple_SetItem(result, 0, entry ? entry : Py_NewRef(Py_None));
    PyTuple_SetItem(result, with_entry, key);
    Py_ssize_t at = with_entry + 1;
    for (Py_ssize_t i = 0; i < self->n; i++) {
        if (!self->params[i].out) continue;
        PyObject *v = !keyed ? Py_None : values[i] ? values[i] : args[i];
        PyTuple_SetItem(result, at++, Py_NewRef(v));
    }
    return result;
}

#define GK_HEADS 16  /* heads at most (checked when made) */

static PyObject *gk_key(PyObject *op, PyObject *const *args, Py_ssize_t nargs) {
    GuardKey *self = (GuardKey *)op;
    if (nargs != self->given + self->n) {
        PyErr_Format(PyExc_TypeError, "GuardKey.key takes %zd arguments (%zd given)", self->given + self->n, nargs);
        return NULL;
    }
    PyObject *heads[GK_HEADS], *stack[GK_STACK];
    PyObject **values = gk_nulls(stack, self->n), *result = NULL;
    if (!values) return PyErr_NoMemory();
    if (gk_heads(self, args, heads, NULL) == 0) {
        PyObject *key = gk_build(self, heads, args + self->given, values);
        result = key ? gk_answer(self, key, args + self->given, values, 0, NULL) : NULL;
        release(heads, self->heads);
    }
    release(values, self->n);
    if (values != stack) PyMem_Free(values);
    return result;
}

/* entry[field] (a tuple's item: the entry is a codegen.GuardEntry), borrowed. */
static PyObject *field(GuardKey *self, PyObject *entry, int f) {
    return PyTuple_GetItem(entry, self->fields[f]);
}

static PyCFunction dict_get;  /* what dict.get runs: {}.get's function */

/* get(key), where get is the get of an exact dict read directly (what it answers: the value or
 * None); anything else called.  A new reference, or NULL with an error. */
static PyObject *call_get(PyObject *get, PyObject *key) {
    PyObject *d = PyCFunction_Check(get) && PyCFunction_GetFunction(get) == dict_get ? PyCFunction_GetSelf(get) : NULL;
    if (d && PyDict_CheckExact(d)) {
        PyObject *v = PyDict_GetItemWithError(d, key);
        return v ? Py_NewRef(v) : PyErr_Occurred() ? NULL : Py_NewRef(Py_None);
    }
    return PyObject_CallFunctionObjArgs(get, key, NULL);
}

/* Whether the recorded entry still holds (GUARD_TEMPLATE's test; with no hit given, every entry
 * does): 1, 0, -1 with an error. */
static int gk_holds(GuardKey *self, PyObject *entry, PyObject *device, PyObject *jd) {
    if (!self->jit) return 1;
    if (!PyTuple_Check(entry)) return 0;
    PyObject *hash = attr_of(self->jit, jd, s_hash);
    if (!hash) return -1;
    int same = hash == field(self, entry, F_HASH);
    Py_DECREF(hash);
    if (!same) return 0;
    PyObject *caches = attr_of(self->jit, jd, s_device_caches), *now;
    if (!caches) return -1;
    if (PyDict_Check(caches)) {  /* a defaultdict too: read without making an entry, as .get() */
        now = PyDict_GetItemWithError(caches, device);
        Py_XINCREF(now);
        if (!now && !PyErr_Occurred()) now = Py_NewRef(Py_None);
    } else {
        now = PyObject_CallMethod(caches, "get", "O", device);
    }
    Py_DECREF(caches);
    if (!now) return -1;
    same = now == field(self, entry, F_CACHES);
    Py_DECREF(now);
    if (!same) return 0;
    PyObject *got = call_get(field(self, entry, F_KERNEL_GET), field(self, entry, F_TRITON_KEY));
    if (!got) return -1;
    same = got == field(self, entry, F_KERNEL);
    Py_DECREF(got);
    return same;
}

/* flat(function, stream, grid, *the launch values) (values[i], else args[i]): a FlatLaunch's
 * launch called directly (no bound call's tuple), anything else by PyObject_Call.  Its answer
 * (None launched, False declined, (status, packed bytes) refused), NULL with an error. */
static PyObject *flat_call(PyObject *flat, PyObject *function, PyObject *stream, PyObject *grid, Py_ssize_t n,
                           PyObject *const *args, PyObject *const *values) {
    PyObject *stack[3 + GK_STACK], **vec = n <= GK_STACK ? stack : PyMem_Calloc(3 + n, sizeof(PyObject *)), *st = NULL;
    if (!vec) return PyErr_NoMemory();
    vec[0] = function; vec[1] = stream; vec[2] = grid;  /* borrowed: each is held by the caller */
    for (Py_ssize_t i = 0; i < n; i++) vec[3 + i] = values[i] ? values[i] : args[i];
    PyObject *fl = PyCFunction_Check(flat) ? PyCFunction_GetSelf(flat) : NULL, *argv;
    if (fl && Py_TYPE(fl) == flat_type) {
        Py_INCREF(fl);
        st = fl_launch(fl, vec, 3 + n);
        Py_DECREF(fl);
    } else if ((argv = PyTuple_New(3 + n))) {
        for (Py_ssize_t i = 0; i < 3 + n; i++) PyTuple_SetItem(argv, i, Py_NewRef(vec[i]));
        st = PyObject_Call(flat, argv, NULL);
        Py_DECREF(argv);
    }
    if (vec != stack) PyMem_Free(vec);
    return st;
}

/* Whether `bound` (the dict of the arguments by name a grid callable was given) no longer holds exactly args
 * under names, in that order (the callable wrote into it): the one test, the hit's and the generated code's
 * (grid_wrote).  A name is the same key where it is the same object or an equal exact str (a dict literal's keys
 * are its code's constants); a value only where it is the same object.  1, 0, or -1 with an error. */
static int bound_changed(PyObject *bound, PyObject *names, PyObject *const *args, Py_ssize_t n) {
    if (!PyDict_CheckExact(bound) || PyDict_Size(bound) != n) return 1;
    Py_ssize_t pos = 0, i = 0;
    PyObject *k, *v;
    while (PyDict_Next(bound, &pos, &k, &v)) {
        PyObject *name = PyTuple_GetItem(names, i);
        if (!name) return -1;
        if (v != args[i]) return 1;
        if (k != name && !(PyUnicode_CheckExact(k) && PyUnicode_CheckExact(name) && PyUnicode_Compare(k, name) == 0)) {
            if (PyErr_Occurred()) return -1;
            return 1;
        }
        i++;
    }
    return 0;
}

/* grid_wrote(bound, names, values): bound_changed, for the generated code (names, values: tuples of one length). */
static PyObject *grid_wrote(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3 || !PyTuple_Check(args[1]) || !PyTuple_Check(args[2]) || PyTuple_Size(args[1]) != PyTuple_Size(args[2])) {
        PyErr_SetString(PyExc_TypeError, "grid_wrote(bound, names, values): names and values, tuples of one length");
        return NULL;
    }
    Py_ssize_t n = PyTuple_Size(args[2]);
    PyObject *stack[GK_STACK], **values = n <= GK_STACK ? stack : PyMem_Calloc((size_t)n + 1, sizeof(PyObject *));
    if (!values) return PyErr_NoMemory();
    for (Py_ssize_t i = 0; i < n; i++) values[i] = PyTuple_GetItem(args[2], i);  /* borrowed: the tuple holds them */
    int r = bound_changed(args[0], args[1], values, n);
    if (values != stack) PyMem_Free(values);
    return r < 0 ? NULL : PyBool_FromLong(r);
}

/* The launch of a hit whose entry holds: 0 launched, -1 with an error. */
static int gk_launch(GuardKey *self, PyObject *entry, PyObject *device, PyObject *grid, PyObject *const *args,
                     PyObject **values, PyObject *jd) {
    const Py_ssize_t n = self->n;
    int r = attr_set(self->jit, jd, s_used_globals, 1);
    if (r < 0) return -1;
    if (r) {
        PyObject *ok = PyObject_CallFunctionObjArgs(self->check_globals, self->jit, NULL);
        if (!ok) return -1;
        Py_DECREF(ok);
    }
    PyObject *g = NULL, *stream = NULL, *argv = NULL, *st = NULL;
    int result = -1;
    if (!PyTuple_CheckExact(grid) && PyCallable_Check(grid)) {  /* grid(bound arguments by name) */
        PyObject *bound = PyDict_New();
        for (Py_ssize_t i = 0; bound && i < n; i++)
            if (PyDict_SetItem(bound, PyTuple_GetItem(self->names, i), args[i]) < 0) Py_CLEAR(bound);
        if (!bound) return -1;
        g = PyObject_CallFunctionObjArgs(grid, bound, NULL);
        int wrote = g && self->left ? bound_changed(bound, self->names, args, n) : 0;
        if (wrote < 0) Py_CLEAR(g);
        if (wrote > 0) {
            /* the grid wrote into its arguments: Triton's run launches what it left there (left() does, as the
             * general path does) */
            PyObject *k = PyObject_CallFunctionObjArgs(self->left, entry, device, g, bound, NULL);
            Py_DECREF(bound);
            Py_DECREF(g);
            if (!k) return -1;
            Py_DECREF(k);
            guard_hit_count++;
            return 0;
        }
        Py_DECREF(bound);
        if (!g) return -1;
    } else {
        g = Py_NewRef(grid);
    }
    if (!(stream = PyObject_CallFunctionObjArgs(self->stream, device, NULL))) goto done;
    PyObject *function = field(self, entry, F_FUNCTION);
    PyObject *flat = field(self, entry, F_FLAT);
    guard_hit_count++;
    if (flat != Py_None) {  /* (function, stream, grid, *values): None launched, False declined */
        if (!(st = flat_call(flat, function, stream, g, n, args, values))) goto done;
        if (st == Py_None) { result = 0; goto done; }
        if (PyTuple_Check(st)) {  /* (status, packed bytes): the driver refused; the launcher raises */
            PyObject *failed = PyObject_GetAttr(field(self, entry, F_LAUNCHER), s_launch_failed);
            PyObject *raised = failed ? PyObject_Call(failed, st, NULL) : NULL;
            Py_XDECREF(failed);
            if (raised) { Py_DECREF(raised); result = 0; }
            goto done;
        }
    }
    {
        PyObject *g3 = PyObject_CallFunctionObjArgs(self->grid3, g, NULL);
        if (!g3) goto done;
        if (!PyTuple_Check(g3) || PyTuple_Size(g3) != 3) {
            Py_DECREF(g3);
            PyErr_SetString(PyExc_SystemError, "grid3 did not answer 3 items");
            goto done;
        }
        if (!(argv = PyTuple_New(6 + n))) { Py_DECREF(g3); goto done; }
        PyTuple_SetItem(argv, 0, Py_NewRef(field(self, entry, F_LAUNCHER)));
        for (int j = 0; j < 3; j++) PyTuple_SetItem(argv, 1 + j, Py_NewRef(PyTuple_GetItem(g3, j)));
        Py_DECREF(g3);
        PyTuple_SetItem(argv, 4, Py_NewRef(stream));
        PyTuple_SetItem(argv, 5, Py_NewRef(function));
        for (Py_ssize_t i = 0; i < n; i++) PyTuple_SetItem(argv, 6 + i, Py_NewRef(values[i] ? values[i] : args[i]));
        PyObject *done_ = PyObject_Call(field(self, entry, F_DIRECT), argv, NULL);
        if (done_) { Py_DECREF(done_); result = 0; }
    }
done:
    Py_XDECREF(g); Py_XDECREF(stream); Py_XDECREF(argv); Py_XDECREF(st);
    return result;
}

/* The entry recorded for a call's key (the last one found, else entries[key]) that still holds
 * (gk_holds): 0 with *key (a new reference: the key tuple, or the NoKey instance that stands for
 * it) and *entry (a new reference; NULL where none is found or holds); or -1 with an error, *key
 * set where the key was made.  values: as gk_items. */
static int gk_lookup(GuardKey *self, PyObject *const *heads, PyObject *const *args, PyObject **values,
                     PyObject **key, PyObject **entry, PyObject *jd) {
    const Py_ssize_t size = self->heads + 2 * self->n;
    PyObject *istack[GK_ITEMS], **items = size <= GK_ITEMS ? istack : PyMem_Calloc(size, sizeof(PyObject *));
    PyObject *last = NULL;
    *key = *entry = NULL;
    if (!items) { PyErr_NoMemory(); return -1; }
    int r = gk_items(self, heads, args, items, values, key);
    if (r != 0) { r = r > 0 ? 0 : -1; goto out; }  /* r > 0: *key is the NoKey (no entry) */
    last = self->last ? Py_NewRef(self->last) : NULL;  /* (key, entry) of the last key found */
    r = last ? gk_same(self, PyTuple_GetItem(last, 0), items, size) : 0;
    if (r != 0) {  /* the last key (or a comparison raised) */
        release(items, size);
        if (r < 0) goto out;
        *key = Py_NewRef(PyTuple_GetItem(last, 0));
        *entry = Py_NewRef(PyTuple_GetItem(last, 1));
        if ((r = gk_holds(self, *entry, heads[0], jd)) < 0) goto out;
        if (!r) Py_CLEAR(*entry);  /* no longer holds: a newer entry may have been recorded for the key */
    } else if (!(*key = gk_tuple(items, size))) {
        r = -1;
        goto out;
    }
    if (!*entry) {
        PyObject *found = PyDict_GetItemWithError(self->entries, *key);  /* an unhashable key: TypeError */
        if (!found) { r = PyErr_Occurred() ? -1 : 0; goto out; }
        *entry = Py_NewRef(found);
        if ((r = gk_holds(self, *entry, heads[0], jd)) <= 0) { Py_CLEAR(*entry); goto out; }
    }
    if (!last || PyTuple_GetItem(last, 1) != *entry) {  /* remembered for the next call (none where it cannot be) */
        PyObject *pair = PyTuple_Pack(2, *key, *entry);
        if (!pair) PyErr_Clear();
        for (Py_ssize_t i = 0; pair && i < size; i++) self->last_items[i] = PyTuple_GetItem(*key, i);
        PyObject *old = self->last;
        self->last = pair;  /* with its items: no Python code has run since they were set */
        Py_XDECREF(old);
    }
    r = 0;
out:
    if (r < 0) Py_CLEAR(*entry);  /* an error: no entry (the key stays, where it was made) */
    Py_XDECREF(last);
    if (items != istack) PyMem_Free(items);
    return r;
}

/* The hit of a call without launch options, every parameter's argument bound (arguments):
 * hit()'s answer (the kernel launched; key()'s answer for a miss; NotImplemented), NULL with an
 * error. */
static PyObject *gk_hit_in(GuardKey *self, PyObject *grid, PyObject *const *arguments, PyObject *jd) {
    int r;  /* what sends the call to the general path, before anything of the call's own runs */
    if ((r = attr_set(self->jit, jd, s_pre_run_hooks, 1)) != 0 || (r = attr_set(self->runtime, NULL, s_stages, 0)) != 0
            || (r = hook_set(self->runtime, self->hook_chain, s_enter)) != 0
            || (r = hook_set(self->runtime, self->hook_chain, s_exit)) != 0)
        goto decline;
    PyObject *heads[GK_HEADS], *stack[GK_STACK];
    PyObject **values = gk_nulls(stack, self->n);
    PyObject *result = NULL, *entry = NULL, *key = NULL;
    if (!values) return PyErr_NoMemory();
    if (gk_heads(self, NULL, heads, jd) < 0) {
        if (values != stack) PyMem_Free(values);
        r = -1;
        goto decline;  /* the general path reads them again, and raises */
    }
    if (gk_lookup(self, heads, arguments, values, &key, &entry, jd) < 0) goto general;
    if (!entry) goto keyed;  /* a miss (or a NoKey) */
    if (gk_launch(self, entry, heads[0], grid, arguments, values, jd) == 0)
        result = Py_NewRef(field(self, entry, F_KERNEL));
    goto out;
keyed:  /* a miss (or a NoKey): the general path takes the key made here */
    result = gk_answer(self, key, arguments, values, 0, NULL);
    key = NULL;  /* stolen */
    goto out;
general:  /* the general path makes the key again, and explains */
    if (!PyErr_ExceptionMatches(PyExc_Exception)) goto out;  /* KeyboardInterrupt and the like propagate */
    PyErr_Clear();
    if (key) goto keyed;  /* keyed, but no entry could be read: the general path looks again */
    result = Py_NewRef(Py_NotImplemented);
out:
    Py_XDECREF(key); Py_XDECREF(entry);
    release(heads, self->heads);
    release(values, self->n);
    if (values != stack) PyMem_Free(values);
    return result;
decline:
    if (r < 0) {
        if (!PyErr_ExceptionMatches(PyExc_Exception)) return NULL;
        PyErr_Clear();
    }
    Py_RETURN_NOTIMPLEMENTED;
}

static PyObject *gk_hit_bound(GuardKey *self, PyObject *grid, PyObject *const *arguments) {
    if (!self->jit) Py_RETURN_NOTIMPLEMENTED;
    int charge = gk_in_charge(self);
    if (charge != 0) {  /* the general path asks again, and sends the call where it belongs */
        if (charge < 0) {
            if (!PyErr_ExceptionMatches(PyExc_Exception)) return NULL;
            PyErr_Clear();
        }
        Py_RETURN_NOTIMPLEMENTED;
    }
    PyObject *jd = plain_dict(self->jit, self->plain), *result;  /* the kernel's attributes, read once for the hit */
    if (!jd && PyErr_Occurred()) {  /* the general path reads them again, and raises */
        if (!PyErr_ExceptionMatches(PyExc_Exception)) return NULL;
        PyErr_Clear();
        Py_RETURN_NOTIMPLEMENTED;
    }
    result = gk_hit_in(self, grid, arguments, jd);
    Py_XDECREF(jd);
    return result;
}

static PyObject *gk_hit(PyObject *op, PyObject *const *args, Py_ssize_t nargs) {
    GuardKey *self = (GuardKey *)op;
    if (nargs != 1 + self->n) {
        PyErr_Format(PyExc_TypeError, "GuardKey.hit takes %zd arguments (%zd given)", 1 + self->n, nargs);
        return NULL;
    }
    return gk_hit_bound(self, args[0], args + 1);
}

static PyObject *gk_find(PyObject *op, PyObject *const *args, Py_ssize_t nargs) {
    GuardKey *self = (GuardKey *)op;
    if (nargs != self->given + self->n) {
        PyErr_Format(PyExc_TypeError, "GuardKey.find takes %zd arguments (%zd given)", self->given + self->n, nargs);
        return NULL;
    }
    if (!self->entries) { PyErr_SetString(PyExc_TypeError, "GuardKey.find: no entries were given"); return NULL; }
    PyObject *heads[GK_HEADS], *stack[GK_STACK];
    PyObject **values = gk_nulls(stack, self->n);
    PyObject *result = NULL, *entry = NULL, *key = NULL;
    if (!values) return PyErr_NoMemory();
    if (gk_heads(self, args, heads, NULL) == 0) {
        if (gk_lookup(self, heads, args + self->given, values, &key, &entry, NULL) == 0)
            result = gk_answer(self, key, args + self->given, values, 1, entry);  /* steals both */
        else
            Py_XDECREF(key);
        release(heads, self->heads);
    }
    release(values, self->n);
    if (values != stack) PyMem_Free(values);
    return result;
}

/* ---- the call: kernel[grid](*args, **kwargs) of a guarded kernel ----
 *
 * The arguments are bound to the kernel's parameters as Python binds a call of the kernel's
 * function (by position, then by name, the left-out ones their defaults), in C: a call binds
 * no Python frame.  Keywords that name no parameter are launch options.  A call without
 * launch options, while the guard is in front of its kernel (live), whose argument for the
 * parameter `never` is not of never_class, is a hit (gk_hit_bound); anything else, and what the
 * hit leaves (a miss, keyed; or NotImplemented), goes to the guard's generated general path:
 * general(grid, keyed or None, options, *every parameter's argument).  A call Python would
 * refuse to bind raises TypeError here, naming the parameter. */
static PyObject *gk_bundle_call(GuardKey *self, PyObject *grid, PyObject *const *args, Py_ssize_t nargs,
                                PyObject *kwnames);

static PyObject *gk_call_bound(GuardKey *self, PyObject *grid, PyObject *const *args, Py_ssize_t nargs,
                               PyObject *kwnames) {
    if (!self->general) { PyErr_SetString(PyExc_TypeError, "GuardKey: no call was set (set_call)"); return NULL; }
    if (self->bundle) return gk_bundle_call(self, grid, args, nargs, kwnames);
    const Py_ssize_t n = self->n, nkw = kwnames ? PyTuple_Size(kwnames) : 0;
    PyObject *stack[GK_STACK], **bound = gk_nulls(stack, n);
    PyObject *options = NULL, *keyed = NULL, *result = NULL, *argv = NULL;
    if (!bound) return PyErr_NoMemory();
    /* held for the call: the Python code it runs may replace them (set_call), and bound[] borrows defaults' items */
    PyObject *keywords = Py_NewRef(self->keywords), *defaults = Py_NewRef(self->defaults), *kname = Py_NewRef(self->kname);
    if (nargs > n) {
        PyErr_Format(PyExc_TypeError, "%U[grid](): takes %zd positional arguments (the kernel's parameters) but %zd were given",
                     kname, n, nargs);
        goto done;
    }
    for (Py_ssize_t i = 0; i < nargs; i++) bound[i] = args[i];  /* borrowed: the caller holds them */
    Py_ssize_t at = 0;
    int r = bind_args(bound, nargs, n, nkw ? kwnames : NULL, args + nargs, NULL, keywords, defaults,
                      &options, &at);
    if (r != BIND_OK) {
        if (r == BIND_TWICE)
            PyErr_Format(PyExc_TypeError, "%U[grid](): got multiple values for parameter '%U'", kname,
                         PyTuple_GetItem(self->names, at));
        else if (r == BIND_MISSING)
            PyErr_Format(PyExc_TypeError, "%U[grid](): missing the required argument for parameter '%U'",
                         kname, PyTuple_GetItem(self->names, at));
        else if (r == BIND_UNKNOWN)
            PyErr_Format(PyExc_TypeError, "%U[grid](): keywords must be strings", kname);
        goto done;
    }
    if (!options && self->live && !(self->never >= 0 && (PyObject *)Py_TYPE(bound[self->never]) == self->never_class)) {
        PyObject *r = gk_hit_bound(self, grid, bound);
        if (!r || (r != Py_NotImplemented && !PyTuple_CheckExact(r))) { result = r; goto done; }  /* launched, or raised */
        if (r == Py_NotImplemented) Py_DECREF(r);
        else keyed = r;
    }
    if (!options && !(options = PyDict_New())) goto done;
    if (!(argv = PyTuple_New(3 + n))) goto done;
    PyTuple_SetItem(argv, 0, Py_NewRef(grid));
    PyTuple_SetItem(argv, 1, keyed ? keyed : Py_NewRef(Py_None));
    keyed = NULL;  /* stolen */
    PyTuple_SetItem(argv, 2, Py_NewRef(options));
    for (Py_ssize_t i = 0; i < n; i++) PyTuple_SetItem(argv, 3 + i, Py_NewRef(bound[i]));
    {
        PyObject *general = Py_NewRef(self->general);  /* set_call may replace it meanwhile */
        result = PyObject_Call(general, argv, NULL);
        Py_DECREF(general);
    }
done:
    Py_XDECREF(options); Py_XDECREF(keyed); Py_XDECREF(argv);
    Py_DECREF(keywords); Py_DECREF(defaults); Py_DECREF(kname);
    if (bound != stack) PyMem_Free(bound);
    return result;
}

/* ---- a bundled kernel's call (launcher.bundle_kernel: bundle.k[grid](*args, **kwargs)) ----
 *
 * set_bundle_call(general, keywords, defaults, positional, device, name) makes call() and the
 * GuardCalls of bind(grid) a bundled kernel's: the arguments bound as its generated call binds
 * them (bind_args, at most `positional` by position; its defaults stand for what the caller left
 * out), the entry found for the key (find's lookup, the device from `device`), and, where the
 * call passes no keyword that names no parameter, the entry does not adjust the arguments (its
 * parts, (flat, function, stream getter), are not None), the grid is a tuple of 1 to 3 and the
 * flat launch takes it: flat(function, stream(), grid, *the launch values), entry.not_flat(...)
 * where it did not launch.  Every
 * other call, as it came, is general(grid, *args, **kwargs): the bundle's generated call, which
 * binds, explains and chooses (a new key, options, a stream, a grid to evaluate). */
static PyObject *s_parts, *s_not_flat;
static PyObject *gcl_new(PyObject *gk, PyObject *grid);

static PyObject *gk_bundle_general(GuardKey *self, PyObject *grid, PyObject *const *args, Py_ssize_t nargs,
                                   PyObject *kwnames) {
    PyObject *general = Py_NewRef(self->general);  /* set_bundle_call may replace it meanwhile */
    PyObject *result = call_with(general, grid, args, nargs, kwnames);
    Py_DECREF(general);
    return result;
}

/* The hit of a bundled kernel's call, its arguments bound: None launched, NotImplemented where
 * the general path is to take the call, NULL with an error (of what it called after deciding). */
static PyObject *gk_bundle_hit(GuardKey *self, PyObject *grid, PyObject *const *bound) {
    Py_ssize_t g = PyTuple_CheckExact(grid) ? PyTuple_Size(grid) : 0;
    if (g < 1 || g > 3) Py_RETURN_NOTIMPLEMENTED;  /* a grid to evaluate (of the chosen variant's meta-parameters) */
    if (!PyDict_Size(self->entries)) Py_RETURN_NOTIMPLEMENTED;  /* nothing to find: the device is asked after the checks */
    PyObject *heads[GK_HEADS], *stack[GK_STACK];
    PyObject **values = gk_nulls(stack, self->n);
    PyObject *result = NULL, *entry = NULL, *key = NULL, *stream = NULL, *parts = NULL, *st = NULL;
    if (!values) return PyErr_NoMemory();
    int r = gk_heads(self, NULL, heads, NULL);
    if (r == 0) {
        r = gk_lookup(self, heads, bound, values, &key, &entry, NULL);
        release(heads, self->heads);
    }
    /* entry.parts: (flat, function, stream getter), None where the call's arguments need adjusting */
    if (r == 0 && entry && !(parts = PyObject_GetAttr(entry, s_parts))) r = -1;
    if (r < 0 || !entry || !parts || !PyTuple_Check(parts) || PyTuple_Size(parts) != 3) {  /* the general path looks again, and explains */
        if (r < 0 && !PyErr_ExceptionMatches(PyExc_Exception)) goto out;  /* KeyboardInterrupt and the like propagate */
        PyErr_Clear();
        result = Py_NewRef(Py_NotImplemented);
        goto out;
    }
    PyObject *flat = PyTuple_GetItem(parts, 0), *function = PyTuple_GetItem(parts, 1);  /* held by parts */
    if (!(stream = PyObject_CallObject(PyTuple_GetItem(parts, 2), NULL))) goto out;
    if (!(st = flat_call(flat, function, stream, grid, self->n, bound, values))) goto out;
    if (st != Py_None) {  /* declined (False) or refused ((status, packed bytes)): the entry's direct launch explains */
        PyObject *not_flat = PyObject_GetAttr(entry, s_not_flat), *one = PyLong_FromLong(1);
        PyObject *argv = not_flat && one ? PyTuple_New(5 + self->n) : NULL;
        if (argv) {
            PyTuple_SetItem(argv, 0, Py_NewRef(st));
            for (Py_ssize_t j = 0; j < 3; j++) PyTuple_SetItem(argv, 1 + j, Py_NewRef(j < g ? PyTuple_GetItem(grid, j) : one));
            PyTuple_SetItem(argv, 4, Py_NewRef(stream));
            for (Py_ssize_t i = 0; i < self->n; i++) PyTuple_SetItem(argv, 5 + i, Py_NewRef(values[i] ? values[i] : bound[i]));
            PyObject *done_ = PyObject_Call(not_flat, argv, NULL);
            if (done_) { Py_DECREF(done_); result = Py_NewRef(Py_None); }
        }
        Py_XDECREF(not_flat); Py_XDECREF(argv); Py_XDECREF(one);
        goto out;
    }
    result = Py_NewRef(Py_None);
out:
    Py_XDECREF(key); Py_XDECREF(entry); Py_XDECREF(stream); Py_XDECREF(parts); Py_XDECREF(st);
    release(values, self->n);
    if (values != stack) PyMem_Free(values);
    return result;
}

static PyObject *gk_bundle_call(GuardKey *self, PyObject *grid, PyObject *const *args, Py_ssize_t nargs,
                                PyObject *kwnames) {
    const Py_ssize_t n = self->n;
    if (nargs > self->positional) return gk_bundle_general(self, grid, args, nargs, kwnames);
    PyObject *stack[GK_STACK], **bound = gk_nulls(stack, n);
    PyObject *options = NULL, *result = NULL;
    if (!bound) return PyErr_NoMemory();
    /* held for the call: the Python code it runs may replace them, and bound[] borrows defaults' items */
    PyObject *keywords = Py_NewRef(self->keywords), *defaults = Py_NewRef(self->defaults);
    for (Py_ssize_t i = 0; i < nargs; i++) bound[i] = args[i];  /* borrowed: the caller holds them */
    Py_ssize_t at = 0;
    int r = bind_args(bound, nargs, n, kwnames && PyTuple_Size(kwnames) ? kwnames : NULL, args + nargs, NULL,
                      keywords, defaults, &options, &at);
    if (r < 0) goto done;
    if (r == BIND_OK && !options && (result = gk_bundle_hit(self, grid, bound)) != Py_NotImplemented) goto done;
    Py_CLEAR(result);
    result = gk_bundle_general(self, grid, args, nargs, kwnames);
done:
    Py_XDECREF(options);
    Py_DECREF(keywords); Py_DECREF(defaults);
    if (bound != stack) PyMem_Free(bound);
    return result;
}

/* set_bundle_call(general, keywords, defaults, positional, device, name): see above. */
static PyObject *gk_set_bundle_call(PyObject *op, PyObject *args) {
    GuardKey *self = (GuardKey *)op;
    PyObject *general, *keywords, *defaults, *device, *kname;
    Py_ssize_t positional;
    if (!PyArg_ParseTuple(args, "OO!O!nOU", &general, &PyDict_Type, &keywords, &PyTuple_Type, &defaults, &positional,
                          &device, &kname))
        return NULL;
    if (self->jit || !self->entries || self->given != 1 || !PyCallable_Check(general) || !PyCallable_Check(device)
            || !PyDict_CheckExact(keywords) || !PyTuple_CheckExact(defaults) || positional < 0 || positional > self->n) {
        PyErr_SetString(PyExc_TypeError, "GuardKey.set_bundle_call: a keyer with entries, no hit and the device its only "
                                         "given head; callables general and device, a dict, a tuple, 0 <= positional <= n");
        return NULL;
    }
    if (fits_binding(keywords, defaults, self->n) < 0) return NULL;
    PyObject *own = PyDict_Copy(keywords);  /* checked above: a copy the caller cannot change */
    if (!own) return NULL;
    replace_ref(&self->general, Py_NewRef(general));
    replace_ref(&self->keywords, own);
    replace_ref(&self->defaults, Py_NewRef(defaults));
    replace_ref(&self->device, Py_NewRef(device));
    replace_ref(&self->kname, Py_NewRef(kname));
    self->positional = positional;
    self->bundle = 1;
    Py_RETURN_NONE;
}

/* bind(grid): kernel[grid], a GuardCall (as GuardItem makes them for a guarded kernel). */
static PyObject *gk_bind(PyObject *op, PyObject *grid) {
    if (!((GuardKey *)op)->general) { PyErr_SetString(PyExc_TypeError, "GuardKey.bind: no call was set"); return NULL; }
    return gcl_new(op, grid);
}

/* kernel.run's call: call(grid, *args, **kwargs). */
static PyObject *gk_call(PyObject *op, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
    if (nargs < 1) { PyErr_SetString(PyExc_TypeError, "GuardKey.call(grid, *args, **kwargs): no grid"); return NULL; }
    return gk_call_bound((GuardKey *)op, args[0], args + 1, nargs - 1, kwnames);
}

/* set_call(general, keywords, defaults, never, name, run=None): what the call needs besides the
 * hit (above); keywords, defaults: bind_args' ({name: index}, one tuple of at most one item per
 * parameter); never: (parameter index, class) or None; name: the kernel's, for errors; run: the
 * guard's run, which kernel[grid] (a GuardCall) calls only while it is the kernel's run. */
static PyObject *gk_set_call(PyObject *op, PyObject *args) {
    GuardKey *self = (GuardKey *)op;
    PyObject *general, *keywords, *defaults, *never, *kname, *never_class = NULL, *run = Py_None;
    Py_ssize_t never_at = -1;
    if (!PyArg_ParseTuple(args, "OO!O!OU|O", &general, &PyDict_Type, &keywords, &PyTuple_Type, &defaults, &never, &kname,
                          &run))
        return NULL;
    if (!self->jit || !PyCallable_Check(general) || !PyDict_CheckExact(keywords) || !PyTuple_CheckExact(defaults)) {
        PyErr_SetString(PyExc_TypeError, "GuardKey.set_call: a hit, a callable, a dict and a tuple");
        return NULL;
    }
    if (fits_binding(keywords, defaults, self->n) < 0) return NULL;
    if (never != Py_None) {
        if (!PyArg_ParseTuple(never, "nO!", &never_at, &PyType_Type, &never_class)) return NULL;
        if (never_at < 0 || never_at >= self->n) {
            PyErr_SetString(PyExc_ValueError, "GuardKey.set_call: never's parameter is out of range");
            return NULL;
        }
    }
    PyObject *own = PyDict_Copy(keywords);  /* checked above: a copy the caller cannot change */
    if (!own) return NULL;
    replace_ref(&self->general, Py_NewRef(general));
    replace_ref(&self->keywords, own);
    replace_ref(&self->defaults, Py_NewRef(defaults));
    replace_ref(&self->never_class, never_class ? Py_NewRef(never_class) : NULL);
    replace_ref(&self->kname, Py_NewRef(kname));
    replace_ref(&self->run, run == Py_None ? NULL : Py_NewRef(run));
    self->never = never_at;
    Py_RETURN_NONE;
}

/* settle(device, tensor): the device getter a hit reads, and the class keyed by dtype and alignment. */
static PyObject *gk_settle(PyObject *op, PyObject *args) {
    GuardKey *self = (GuardKey *)op;
    PyObject *device, *tensor;
    if (!PyArg_ParseTuple(args, "OO", &device, &tensor)) return NULL;
    if (!self->jit || !PyCallable_Check(device)) {
        PyErr_SetString(PyExc_TypeError, "GuardKey.settle: a hit, and a callable device getter");
        return NULL;
    }
    replace_ref(&self->device, Py_NewRef(device));
    replace_ref(&self->tensor, Py_NewRef(tensor));
    Py_CLEAR(self->last);  /* keyed with the tensor class before */
    Py_RETURN_NONE;
}

/* kernel[grid] of a guarded kernel (GuardItem makes it): its call is gk_call_bound's. */
typedef struct {
    PyObject_HEAD
    vectorcall_fn vectorcall;
    PyObject *gk, *grid;
} GuardCall;

static PyTypeObject *guard_call_type, *guard_key_type;  /* held by the module */

/* The kernel's run where it is no longer the guard's (its user set one of its own since kernel[grid] was
 * taken, or the guard was taken away): 1 with *run (a new reference), 0 where the guard's run is still the
 * kernel's (or no run was set: a bundle's call), -1 with an error (reading it failed, as Triton's would). */
static int gcl_other_run(GuardKey *gk, PyObject **run) {
    *run = NULL;
    if (!gk->run || !gk->jit) return 0;
    PyObject *jd = plain_dict(gk->jit, gk->plain);
    if (!jd && PyErr_Occurred()) return -1;
    PyObject *r = attr_of(gk->jit, jd, s_run);
    Py_XDECREF(jd);
    if (!r) return -1;
    if (r == gk->run) { Py_DECREF(r); return 0; }
    *run = r;
    return 1;
}

/* kernel[grid](*args, **kwargs): the guard's call while its run is the kernel's; else, as Triton's kernel[grid]
 * calls it, run(*args, grid=grid, warmup=False, **kwargs) of the kernel's run now. */
static PyObject *gcl_dispatch(GuardCall *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
    PyObject *run;
    int r = gcl_other_run((GuardKey *)self->gk, &run);
    if (r < 0) return NULL;
    if (!r) return gk_call_bound((GuardKey *)self->gk, self->grid, args, nargs, kwnames);
    Py_ssize_t nkw = kwnames ? PyTuple_Size(kwnames) : 0;
    PyObject *argv = PyTuple_New(nargs), *kw = PyDict_New(), *result = NULL;
    for (Py_ssize_t i = 0; argv && i < nargs; i++) PyTuple_SetItem(argv, i, Py_NewRef(args[i]));
    for (Py_ssize_t k = 0; kw && k < nkw; k++) {
        PyObject *name = PyTuple_GetItem(kwnames, k);
        if (!PyUnicode_Check(name)) {
            PyErr_SetString(PyExc_TypeError, "keywords must be strings");
            Py_CLEAR(kw);
        } else if (PyUnicode_Compare(name, s_grid) == 0 || PyUnicode_Compare(name, s_warmup) == 0) {  /* as the lambda's call */
            PyErr_Format(PyExc_TypeError, "run() got multiple values for keyword argument '%U'", name);
            Py_CLEAR(kw);
        } else if (PyDict_SetItem(kw, name, args[nargs + k]) < 0) {
            Py_CLEAR(kw);
        }
    }
    if (argv && kw && PyDict_SetItem(kw, s_grid, self->grid) == 0 && PyDict_SetItem(kw, s_warmup, Py_False) == 0)
        result = PyObject_Call(run, argv, kw);
    Py_XDECREF(argv); Py_XDECREF(kw);
    Py_DECREF(run);
    return result;
}

static PyObject *gcl_vectorcall(PyObject *op, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    return gcl_dispatch((GuardCall *)op, args, vectorcall_nargs(nargsf), kwnames);
}

static PyObject *gcl_call(PyObject *op, PyObject *args, PyObject *kwargs) {  /* tp_call: the same, from a tuple and a dict */
    GuardCall *self = (GuardCall *)op;
    Py_ssize_t nargs = PyTuple_Size(args), nkw = kwargs ? PyDict_Size(kwargs) : 0, pos = 0, k = 0;
    PyObject **vec = PyMem_Calloc(nargs + nkw + 1, sizeof(PyObject *)), *kwnames = nkw ? PyTuple_New(nkw) : NULL;
    PyObject *key, *value, *result = NULL;
    if (!vec || (nkw && !kwnames)) { PyErr_NoMemory(); goto done; }
    for (Py_ssize_t i = 0; i < nargs; i++) vec[i] = PyTuple_GetItem(args, i);
    while (nkw && PyDict_Next(kwargs, &pos, &key, &value)) {
        PyTuple_SetItem(kwnames, k, Py_NewRef(key));
        vec[nargs + k++] = value;
    }
    result = gcl_dispatch(self, vec, nargs, kwnames);
done:
    PyMem_Free(vec);
    Py_XDECREF(kwnames);
    return result;
}

/* Whether grid is an exact tuple of exact ints: immutable, and holding nothing else alive. */
static int int_tuple(PyObject *grid) {
    if (!PyTuple_CheckExact(grid)) return 0;
    for (Py_ssize_t i = 0; i < PyTuple_Size(grid); i++)
        if (!PyLong_CheckExact(PyTuple_GetItem(grid, i))) return 0;
    return 1;
}

/* kernel[grid]: a GuardCall of gk and grid.  A GuardCall holds nothing a call changes, so the
 * last one made for gk of a grid that is a tuple of ints is handed out again for the same
 * grid object (kernel[grid] in a loop makes none); other grids (a callable may hold anything
 * alive) are not kept. */
static PyObject *gcl_new(PyObject *gk, PyObject *grid) {
    GuardKey *key = (GuardKey *)gk;
    if (key->last_call && ((GuardCall *)key->last_call)->grid == grid) return Py_NewRef(key->last_call);
    allocfunc alloc = (allocfunc)PyType_GetSlot(guard_call_type, Py_tp_alloc);
    GuardCall *self = (GuardCall *)alloc(guard_call_type, 0);
    if (!self) return NULL;
    self->vectorcall = gcl_vectorcall;
    self->gk = Py_NewRef(gk);
    self->grid = Py_NewRef(grid);
    if (int_tuple(grid)) replace_ref(&key->last_call, Py_NewRef((PyObject *)self));
    return (PyObject *)self;
}

static int gcl_traverse(PyObject *op, visitproc visit, void *arg) {
    GuardCall *self = (GuardCall *)op;
    Py_VISIT(Py_TYPE(op)); Py_VISIT(self->gk); Py_VISIT(self->grid);
    return 0;
}

static int gcl_clear(PyObject *op) {
    GuardCall *self = (GuardCall *)op;
    Py_CLEAR(self->gk); Py_CLEAR(self->grid);
    return 0;
}

static void gcl_dealloc(PyObject *op) { gc_dealloc(op, gcl_clear); }

static PyObject *gk_forget(PyObject *op, PyObject *unused) {
    Py_CLEAR(((GuardKey *)op)->last);
    Py_RETURN_NONE;
}

static PyObject *guard_hits(PyObject *module, PyObject *unused) {
    return PyLong_FromUnsignedLongLong(guard_hit_count);
}

static int gk_clear(PyObject *op) {
    GuardKey *self = (GuardKey *)op;
    if (self->params) {
        for (Py_ssize_t i = 0; i < self->n; i++) Py_CLEAR(self->params[i].table);
        PyMem_Free(self->params);
        self->params = NULL;
    }
    self->n = 0;
    Py_CLEAR(self->tensor); Py_CLEAR(self->int_key); Py_CLEAR(self->classify); Py_CLEAR(self->no_key);
    if (self->head) {
        for (Py_ssize_t i = 0; i < self->heads; i++) {
            Py_CLEAR(self->head[i].obj); Py_CLEAR(self->head[i].name); Py_CLEAR(self->head[i].extra);
            Py_CLEAR(self->head[i].value); Py_CLEAR(self->head[i].plain);
            env_forget(&self->head[i].seen);
        }
        PyMem_Free(self->head);
        self->head = NULL;
    }
    self->heads = 0;
    Py_CLEAR(self->jit); Py_CLEAR(self->runtime); Py_CLEAR(self->entries); Py_CLEAR(self->stream);
    Py_CLEAR(self->hook_chain); Py_CLEAR(self->check_globals); Py_CLEAR(self->grid3); Py_CLEAR(self->names);
    Py_CLEAR(self->last); Py_CLEAR(self->last_call); Py_CLEAR(self->device); Py_CLEAR(self->plain);
    Py_CLEAR(self->run); Py_CLEAR(self->class_run); Py_CLEAR(self->driver_config); Py_CLEAR(self->active);
    Py_CLEAR(self->driver_plain); Py_CLEAR(self->jit_callable); Py_CLEAR(self->left);
    PyMem_Free(self->last_items);  /* borrowed items: freed with the key, NULL from here on */
    self->last_items = NULL;
    Py_CLEAR(self->general); Py_CLEAR(self->keywords); Py_CLEAR(self->defaults); Py_CLEAR(self->never_class);
    Py_CLEAR(self->kname);
    return 0;
}

/* hit: {"jit", "runtime", "device", "stream", "hook_chain", "check_globals", "grid3", "names",
 * "fields": {GuardEntry field name: position}, optionally "plain": whether the kernel's
 * attributes a hit reads (launcher.fast_dispatch._HIT_READS, and the heads' ("attr", kernel,
 * name)) are read from its __dict__ where it holds them (its class has no data descriptor of
 * those names, no __getattr__ or __getattribute__ of its own)}, or None (entries must then be
 * given). */
static int gk_set_hit(GuardKey *self, PyObject *hit) {
    if (hit == Py_None) return 0;
    if (!PyDict_Check(hit)) { PyErr_SetString(PyExc_TypeError, "GuardKey: hit must be a dict or None"); return -1; }
    if (get_ref(hit, "jit", &self->jit, 0) < 0 || get_ref(hit, "runtime", &self->runtime, 0) < 0
            || get_ref(hit, "device", &self->device, 0) < 0 || get_ref(hit, "stream", &self->stream, 0) < 0
            || get_ref(hit, "hook_chain", &self->hook_chain, 1) < 0
            || get_ref(hit, "check_globals", &self->check_globals, 0) < 0 || get_ref(hit, "grid3", &self->grid3, 0) < 0
            || get_ref(hit, "names", &self->names, 0) < 0)
        return -1;
    const char *optional[] = {"class_run", "jit_callable", "left"};  /* absent or None: not checked, not keyed so, not looked at */
    PyObject **slots[] = {&self->class_run, &self->jit_callable, &self->left};
    for (int i = 0; i < 3; i++) {
        PyObject *v = PyDict_GetItemString(hit, optional[i]);
        replace_ref(slots[i], v && v != Py_None ? Py_NewRef(v) : NULL);
    }
    PyObject *driver = PyDict_GetItemString(hit, "driver");  /* optional: (config, active driver, config's class or None) */
    if (driver && driver != Py_None) {
        if (!PyTuple_Check(driver) || PyTuple_Size(driver) != 3) {
            PyErr_SetString(PyExc_TypeError, "GuardKey: hit's driver must be (config, active, plain class or None)");
            return -1;
        }
        replace_ref(&self->driver_config, Py_NewRef(PyTuple_GetItem(driver, 0)));
        replace_ref(&self->active, Py_NewRef(PyTuple_GetItem(driver, 1)));
        PyObject *dp = PyTuple_GetItem(driver, 2);
        if (dp != Py_None) replace_ref(&self->driver_plain, Py_NewRef(dp));
    }
    PyObject *plain = PyDict_GetItemString(hit, "plain");  /* optional: False by default */
    int is_plain = plain ? PyObject_IsTrue(plain) : 0;
    if (is_plain < 0) return -1;
    if (is_plain) replace_ref(&self->plain, Py_NewRef((PyObject *)Py_TYPE(self->jit)));
    int strs = PyTuple_Check(self->names);
    for (Py_ssize_t i = 0; strs && i < PyTuple_Size(self->names); i++) strs = PyUnicode_Check(PyTuple_GetItem(self->names, i));
    if (!self->entries || !strs || PyTuple_Size(self->names) != self->n || !PyCallable_Check(self->device)) {
        PyErr_SetString(PyExc_TypeError, "GuardKey: a hit needs entries, a device getter, and its names a tuple of "
                                         "every parameter's (strs)");
        return -1;
    }
    PyObject *fields = get(hit, "fields");
    if (!fields) return -1;
    for (int f = 0; f < F_COUNT; f++) {
        PyObject *at = PyDict_Check(fields) ? PyDict_GetItemString(fields, gk_field_names[f]) : NULL;
        if (!at || (self->fields[f] = PyLong_AsSsize_t(at)) < 0) {
            if (!PyErr_Occurred()) PyErr_Format(PyExc_TypeError, "GuardKey: hit's fields lack %s", gk_field_names[f]);
            return -1;
        }
    }
    return 0;
}

/* heads: per head, "device" (the first), "options", ("attr", obj, name), ("own", obj, name,
 * default) or ("env", fn, (variable name, ...)): see gk_head. */
static int gk_set_heads(GuardKey *self, PyObject *heads) {
    Py_ssize_t n = PyTuple_Size(heads);
    if (!(self->head = PyMem_Calloc(n, sizeof(gk_head)))) { PyErr_NoMemory(); return -1; }
    self->heads = n;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *t = PyTuple_GetItem(heads, i), *kind = PyTuple_Check(t) && PyTuple_Size(t) ? PyTuple_GetItem(t, 0) : t;
        gk_head *h = &self->head[i];
        int k = -1;
        for (int j = 0; j < 5 && PyUnicode_Check(kind); j++)
            if (PyUnicode_CompareWithASCIIString(kind, gk_head_kinds[j]) == 0) k = j;
        Py_ssize_t size = PyTuple_Check(t) ? PyTuple_Size(t) : 1;
        if (k < 0 || (i == 0) != (k == H_DEVICE) || (k == H_OWN ? size != 4 && size != 5 : size != (k >= H_ATTR ? 3 : 1))
                || (k == H_ATTR && !PyUnicode_Check(PyTuple_GetItem(t, 2)))
                || (k == H_OWN && !PyUnicode_Check(PyTuple_GetItem(t, 2)))
                || (k == H_ENV && (!PyCallable_Check(PyTuple_GetItem(t, 1)) || !PyTuple_Check(PyTuple_GetItem(t, 2))
                                   || !PyTuple_Size(PyTuple_GetItem(t, 2))
                                   || !PyUnicode_Check(PyTuple_GetItem(PyTuple_GetItem(t, 2), 0))))) {
            PyErr_Format(PyExc_TypeError, "GuardKey: head %zd is \"device\" (first, and only there), \"options\", "
                         "(\"attr\", obj, name), (\"own\", obj, name, default[, plain]) or (\"env\", fn, (variable name, ...))", i);
            return -1;
        }
        h->kind = (char)k;
        if (k == H_DEVICE || k == H_OPTIONS) {
            self->given++;
        } else {
            h->obj = Py_NewRef(PyTuple_GetItem(t, 1));
            if (k == H_ENV) {
                h->extra = Py_NewRef(PyTuple_GetItem(t, 2));
                PyObject *b = PyUnicode_AsEncodedString(PyTuple_GetItem(h->extra, 0), "utf-8", "surrogateescape");  /* as os.environ encodes it */
                if (b && (size_t)PyBytes_Size(b) != strlen(PyBytes_AsString(b))) {
                    PyErr_SetString(PyExc_ValueError, "GuardKey: an environment variable's name has a NUL");
                    Py_CLEAR(b);
                }
                h->name = b ? PyBytes_FromFormat("%s=", PyBytes_AsString(b)) : NULL;
                Py_XDECREF(b);
                if (!h->name) return -1;
            } else {
                h->name = Py_NewRef(PyTuple_GetItem(t, 2));
            }
            if (k == H_OWN) {
                h->extra = Py_NewRef(PyTuple_GetItem(t, 3));
                int plain = size == 5 ? PyObject_IsTrue(PyTuple_GetItem(t, 4)) : 0;
                if (plain < 0) return -1;
                if (plain) h->plain = Py_NewRef((PyObject *)Py_TYPE(h->obj));
            }
        }
    }
    return 0;
}

static PyObject *gk_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    PyObject *params, *heads, *tensor, *int_key, *classify, *no_key, *hit = Py_None, *entries = Py_None;
    unsigned long long mask;
    static char *names[] = {"params", "heads", "tensor", "int_key", "classify", "no_key", "mask", "hit", "entries", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O!O!OOOOK|OO", names, &PyTuple_Type, &params, &PyTuple_Type, &heads,
                                     &tensor, &int_key, &classify, &no_key, &mask, &hit, &entries))
        return NULL;
    if (entries != Py_None && !PyDict_Check(entries)) {
        PyErr_SetString(PyExc_TypeError, "GuardKey: entries must be a dict or None");
        return NULL;
    }
    Py_ssize_t nheads = PyTuple_Size(heads);
    if (nheads < 1 || nheads > GK_HEADS || !PyCallable_Check(int_key) || !PyCallable_Check(classify) || !PyType_Check(no_key)) {
        PyErr_SetString(PyExc_TypeError, "GuardKey: 1 to 16 heads (the device first), int_key and classify callables, "
                                         "no_key a class");
        return NULL;
    }
    allocfunc alloc = (allocfunc)PyType_GetSlot(type, Py_tp_alloc);
    GuardKey *self = (GuardKey *)alloc(type, 0);
    if (!self) return NULL;
    Py_ssize_t n = PyTuple_Size(params);
    self->tensor = Py_NewRef(tensor); self->int_key = Py_NewRef(int_key);
    self->classify = Py_NewRef(classify); self->no_key = Py_NewRef(no_key);
    self->mask = mask;
    self->never = -1;
    self->entries = entries == Py_None ? NULL : Py_NewRef(entries);
    if (gk_set_heads(self, heads) < 0) goto error;
    if (!(self->params = PyMem_Calloc(n ? n : 1, sizeof(gk_param)))
            || !(self->last_items = PyMem_Calloc(nheads + 2 * n, sizeof(PyObject *)))) {
        PyErr_NoMemory();
        goto error;
    }
    self->n = n;
    for (Py_ssize_t i = 0; i < n; i++) {  /* (mode, specialize, align, out, table) */
        PyObject *t = PyTuple_GetItem(params, i);
        gk_param *p = &self->params[i];
        int flags[3];
        if (!PyTuple_Check(t) || PyTuple_Size(t) != 5 || !PyLong_Check(PyTuple_GetItem(t, 0))) goto bad;
        long mode = PyLong_AsLong(PyTuple_GetItem(t, 0));  /* False/0, True/1 or 2 */
        if (mode < GK_ARGUMENT || mode > GK_BY_VALUE) goto bad;
        for (int j = 0; j < 3; j++)
            if ((flags[j] = PyObject_IsTrue(PyTuple_GetItem(t, 1 + j))) < 0) goto error;
        p->mode = (char)mode; p->specialize = (char)flags[0]; p->align = (char)flags[1]; p->out = (char)flags[2];
        PyObject *table = PyTuple_GetItem(t, 4);
        if (mode == GK_ARGUMENT ? !PyDict_Check(table) : mode == GK_BY_VALUE ? !PyCallable_Check(table)
                : p->out || (table != Py_None && !PyCallable_Check(table)))
            goto bad;
        p->table = table == Py_None ? NULL : Py_NewRef(table);
        self->outs += p->out;
    }
    if (gk_set_hit(self, hit) < 0) goto error;
    return (PyObject *)self;
bad:
    PyErr_SetString(PyExc_TypeError, "GuardKey: a parameter is (mode, specialize, align, out, table): mode 0 "
                                     "(an argument: table an int_key dict), 1 (a constexpr, not out: table None "
                                     "or what bounds a tuple) or 2 (by value: table a callable)");
error:
    Py_DECREF(self);
    return NULL;
}

static int gk_traverse(PyObject *op, visitproc visit, void *arg) {
    GuardKey *self = (GuardKey *)op;
    Py_VISIT(Py_TYPE(op));
    for (Py_ssize_t i = 0; self->params && i < self->n; i++) Py_VISIT(self->params[i].table);
    Py_VISIT(self->tensor); Py_VISIT(self->int_key); Py_VISIT(self->classify); Py_VISIT(self->no_key);
    Py_VISIT(self->jit); Py_VISIT(self->runtime); Py_VISIT(self->entries); Py_VISIT(self->stream);
    Py_VISIT(self->hook_chain); Py_VISIT(self->check_globals); Py_VISIT(self->grid3); Py_VISIT(self->names);
    Py_VISIT(self->last); Py_VISIT(self->last_call); Py_VISIT(self->device); Py_VISIT(self->plain);
    Py_VISIT(self->run); Py_VISIT(self->class_run); Py_VISIT(self->driver_config); Py_VISIT(self->active);
    Py_VISIT(self->driver_plain); Py_VISIT(self->jit_callable); Py_VISIT(self->left);
    for (Py_ssize_t i = 0; self->head && i < self->heads; i++) {
        Py_VISIT(self->head[i].obj); Py_VISIT(self->head[i].name); Py_VISIT(self->head[i].extra);
        Py_VISIT(self->head[i].value); Py_VISIT(self->head[i].plain);
    }
    Py_VISIT(self->general); Py_VISIT(self->keywords); Py_VISIT(self->defaults); Py_VISIT(self->never_class);
    Py_VISIT(self->kname);
    return 0;
}

static void gk_dealloc(PyObject *op) { gc_dealloc(op, gk_clear); }

static PyObject *gk_get_tensor(PyObject *op, void *unused) {
    GuardKey *self = (GuardKey *)op;
    return Py_NewRef(self->tensor ? self->tensor : Py_None);
}

static PyObject *gk_get_live(PyObject *op, void *unused) { return PyBool_FromLong(((GuardKey *)op)->live); }

static int gk_set_live(PyObject *op, PyObject *value, void *unused) {
    int t = value ? PyObject_IsTrue(value) : -1;
    if (t < 0) { if (!value) PyErr_SetString(PyExc_TypeError, "live cannot be deleted"); return -1; }
    ((GuardKey *)op)->live = t;
    return 0;
}

static PyObject *gk_get_device(PyObject *op, void *unused) {
    GuardKey *self = (GuardKey *)op;
    return Py_NewRef(self->device ? self->device : Py_None);
}

static PyGetSetDef gk_getset[] = {
    {"tensor", gk_get_tensor, NULL, "the class whose instances are keyed by dtype and alignment", NULL},
    {"device", gk_get_device, NULL, "the current-device getter a hit calls (settle() sets it)", NULL},
    {"live", gk_get_live, gk_set_live, "whether the guard is in front of its kernel: a call hits only then", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef gk_methods[] = {
    {"key", (PyCFunction)(void (*)(void))gk_key, METH_FASTCALL,
     "key(*given heads, *arguments): (key, *the launch values of the parameters marked out)."},
    {"hit", (PyCFunction)(void (*)(void))gk_hit, METH_FASTCALL,
     "hit(grid, *arguments): the kernel launched; else key()'s answer, or NotImplemented (the general path's call)."},
    {"find", (PyCFunction)(void (*)(void))gk_find, METH_FASTCALL,
     "find(*given heads, *arguments): (the entry recorded for the key or None, key, *the launch values of the parameters marked out)."},
    {"call", (PyCFunction)(void (*)(void))gk_call, METH_FASTCALL | METH_KEYWORDS,
     "call(grid, *args, **kwargs): kernel[grid](*args, **kwargs) through the guard (bound, then hit or the general path)."},
    {"set_call", gk_set_call, METH_VARARGS,
     "set_call(general, keywords, defaults, never, name, run=None): what call() needs besides the hit."},
    {"settle", gk_settle, METH_VARARGS, "settle(device, tensor): the device getter a hit calls, the class keyed as a tensor."},
    {"set_bundle_call", gk_set_bundle_call, METH_VARARGS,
     "set_bundle_call(general, keywords, defaults, positional, device, name): call() is a bundled kernel's."},
    {"bind", gk_bind, METH_O, "bind(grid): kernel[grid], a GuardCall whose call is call(grid, ...)."},
    {"forget", gk_forget, METH_NOARGS, "forget(): let go of the last key found and its entry."},
    {"in_charge", gk_in_charge_py, METH_NOARGS,
     "in_charge(): 0 where the guard is in charge of its kernel's call; 1 where the kernel's class's run is another's "
     "since; 2 where Triton's active driver changed since the guard was made."},
    {NULL, NULL, 0, NULL},
};

GC_TYPE(gk, GuardKey, 0,
        "GuardKey(params, heads, tensor, int_key, classify, no_key, mask, hit=None, entries=None): the key, the lookup and the hit "
        "of a guarded or bundled kernel[grid] call, in C (launcher.fast_dispatch, launcher.bundle_kernel).",
        {Py_tp_new, gk_new}, {Py_tp_methods, gk_methods}, {Py_tp_getset, gk_getset});

static PyMemberDef gcl_members[] = {
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(GuardCall, vectorcall), READONLY, NULL},
    {"keyer", T_OBJECT_EX, offsetof(GuardCall, gk), READONLY, "the guard's GuardKey, whose call this is"},
    {"grid", T_OBJECT_EX, offsetof(GuardCall, grid), READONLY, "the grid of kernel[grid]"},
    {NULL, 0, 0, 0, NULL},
};

GC_TYPE(gcl, GuardCall, VECTORCALL_FLAG | Py_TPFLAGS_DISALLOW_INSTANTIATION,  /* made only by gcl_new */
        "kernel[grid] of a guarded kernel: calling it is GuardKey.call(grid, ...) (made by GuardItem).",
        {Py_tp_call, gcl_call}, {Py_tp_members, gcl_members});

/* ---- kernel[grid] while the fast-dispatch guard is on ----
 *
 * GuardItem(triton_getitem, call_attribute, plain=None) is JITFunction.__getitem__ while the
 * guard is on (launcher.fast_dispatch.enable): kernel[grid] is a GuardCall of the guard's
 * GuardKey and the grid where the kernel's attribute `call_attribute` (fast_dispatch._CALL) is
 * (run, GuardKey); anything else (no guard attached, grid None) is triton_getitem(kernel, grid).
 * The GuardCall launches through the guard only while the guard's run is still the kernel's when
 * it is called; else it calls the kernel's run, as Triton's kernel[grid] does (gcl_dispatch).
 * plain: a kernel class whose instances' `call_attribute` and `run` are what their __dict__
 * holds (no __getattr__, __getattribute__ or data descriptor of those names:
 * launcher.fast_dispatch decides); its kernels' are read from the __dict__ directly.  In C,
 * called by vectorcall, so that kernel[grid] costs no Python frame and no argument tuple. */
typedef struct {
    PyObject_HEAD
    vectorcall_fn vectorcall;
    PyObject *fallback, *call_attr;
    PyObject *plain;  /* the kernel class whose attributes here are its instances' __dict__ entries, or None */
} GuardItem;

static PyObject *s_method_type;

static PyObject *gi_fallback(GuardItem *self, PyObject *jit, PyObject *grid) {
    return PyObject_CallFunctionObjArgs(self->fallback, jit, grid, NULL);
}

/* kernel.name (attr_of: from the kernel's __dict__ where its class is `plain`); NULL with no
 * error set where it has none. */
static PyObject *gi_attr(PyObject *jit, PyObject *dict, PyObject *name) {
    PyObject *v = attr_of(jit, dict, name);
    if (!v && PyErr_ExceptionMatches(PyExc_AttributeError)) PyErr_Clear();
    return v;
}

static PyObject *gi_item(GuardItem *self, PyObject *jit, PyObject *grid) {
    PyObject *dict = plain_dict(jit, self->plain);
    if (!dict && PyErr_Occurred()) return NULL;
    PyObject *pair = gi_attr(jit, dict, self->call_attr);
    if (!pair) {  /* none attached (or reading it failed): Triton's */
        Py_XDECREF(dict);
        if (PyErr_Occurred()) {
            if (!PyErr_ExceptionMatches(PyExc_Exception)) return NULL;
            PyErr_Clear();
        }
        return gi_fallback(self, jit, grid);
    }
    PyObject *result = NULL;
    if (!PyTuple_CheckExact(pair) || PyTuple_Size(pair) != 2 || grid == Py_None
            || Py_TYPE(PyTuple_GetItem(pair, 1)) != guard_key_type) {
        result = gi_fallback(self, jit, grid);
        goto done;
    }
    /* a run set on the kernel since (before or after kernel[grid] is taken) stays in charge: the call asks
     * (gcl_dispatch), as Triton's kernel[grid] reads run when it is called */
    result = gcl_new(PyTuple_GetItem(pair, 1), grid);
done:
    Py_DECREF(pair);
    Py_XDECREF(dict);
    return result;
}

static PyObject *gi_call(PyObject *op, PyObject *args, PyObject *kwargs) {
    GuardItem *self = (GuardItem *)op;
    if ((kwargs && PyDict_Size(kwargs)) || PyTuple_Size(args) != 2)
        return PyObject_Call(self->fallback, args, kwargs);  /* not kernel[grid]: Triton's says why */
    return gi_item(self, PyTuple_GetItem(args, 0), PyTuple_GetItem(args, 1));
}

static PyObject *gi_vectorcall(PyObject *op, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    if (vectorcall_nargs(nargsf) == 2 && (!kwnames || !PyTuple_Size(kwnames)))
        return gi_item((GuardItem *)op, args[0], args[1]);
    /* not kernel[grid]: Triton's says why */
    return call_with(((GuardItem *)op)->fallback, NULL, args, vectorcall_nargs(nargsf), kwnames);
}

static PyObject *gi_descr_get(PyObject *op, PyObject *obj, PyObject *type) {  /* kernel.__getitem__ */
    if (!obj || obj == Py_None) return Py_NewRef(op);
    return PyObject_CallFunctionObjArgs(s_method_type, op, obj, NULL);
}

static PyObject *gi_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    PyObject *fallback, *call_attr, *plain = Py_None;
    static char *names[] = {"triton_getitem", "call_attribute", "plain", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OU|O", names, &fallback, &call_attr, &plain))
        return NULL;
    if (!PyCallable_Check(fallback)) {
        PyErr_SetString(PyExc_TypeError, "GuardItem(triton_getitem, call_attribute, plain=None): a callable and a str");
        return NULL;
    }
    allocfunc alloc = (allocfunc)PyType_GetSlot(type, Py_tp_alloc);
    GuardItem *self = (GuardItem *)alloc(type, 0);
    if (!self) return NULL;
    self->vectorcall = gi_vectorcall;
    self->fallback = Py_NewRef(fallback);
    self->call_attr = Py_NewRef(call_attr);
    self->plain = Py_NewRef(plain);
    return (PyObject *)self;
}

static int gi_traverse(PyObject *op, visitproc visit, void *arg) {
    GuardItem *self = (GuardItem *)op;
    Py_VISIT(Py_TYPE(op));
    Py_VISIT(self->fallback); Py_VISIT(self->call_attr); Py_VISIT(self->plain);
    return 0;
}

static int gi_clear(PyObject *op) {
    GuardItem *self = (GuardItem *)op;
    Py_CLEAR(self->fallback); Py_CLEAR(self->call_attr); Py_CLEAR(self->plain);
    return 0;
}

static PyObject *gi_get_fallback(PyObject *op, void *unused) {
    GuardItem *self = (GuardItem *)op;
    return Py_NewRef(self->fallback ? self->fallback : Py_None);
}

static void gi_dealloc(PyObject *op) { gc_dealloc(op, gi_clear); }

static PyGetSetDef gi_getset[] = {
    {"triton_getitem", gi_get_fallback, NULL, "Triton's own JITFunction.__getitem__", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMemberDef gi_members[] = {
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(GuardItem, vectorcall), READONLY, NULL},
    {NULL, 0, 0, 0, NULL},
};

GC_TYPE(gi, GuardItem, Py_TPFLAGS_METHOD_DESCRIPTOR | VECTORCALL_FLAG,
        "GuardItem(triton_getitem, call_attribute, plain=None): "
        "JITFunction.__getitem__ while the fast-dispatch guard is on (launcher.fast_dispatch).",
        {Py_tp_new, gi_new}, {Py_tp_call, gi_call}, {Py_tp_descr_get, gi_descr_get},
        {Py_tp_getset, gi_getset}, {Py_tp_members, gi_members});  /* a method descriptor: kernel[grid] calls it with (kernel, grid), unbound */

static int exec_module(PyObject *m) {
    PyObject *d = PyDict_New(), *get = d ? PyObject_GetAttrString(d, "get") : NULL;
    int made = get != NULL;
    if (made && PyCFunction_Check(get)) dict_get = PyCFunction_GetFunction(get);
    Py_XDECREF(get); Py_XDECREF(d);
    if (!made) return -1;
    if (!(s_calls = PyUnicode_InternFromString("calls")) || !(s_dtype = PyUnicode_InternFromString("dtype"))
            || !(s_data_ptr = PyUnicode_InternFromString("data_ptr"))
            || !(s_enter = PyUnicode_InternFromString("launch_enter_hook"))
            || !(s_exit = PyUnicode_InternFromString("launch_exit_hook"))
            || !(s_launch = PyUnicode_InternFromString("launch")) || !(s_failed = PyUnicode_InternFromString("_failed"))
            || !(s_base = PyUnicode_InternFromString("base")) || !(s_shape = PyUnicode_InternFromString("shape"))
            || !(s_strides = PyUnicode_InternFromString("strides"))
            || !(s_padding = PyUnicode_InternFromString("padding"))
            || !(s_tf32 = PyUnicode_InternFromString("round_f32_to_tf32"))
            || !(s_run = PyUnicode_InternFromString("run")) || !(s_hash = PyUnicode_InternFromString("hash"))
            || !(s_device_caches = PyUnicode_InternFromString("device_caches"))
            || !(s_pre_run_hooks = PyUnicode_InternFromString("pre_run_hooks"))
            || !(s_stages = PyUnicode_InternFromString("add_stages_inspection_hook"))
            || !(s_used_globals = PyUnicode_InternFromString("used_global_vals"))
            || !(s_launch_failed = PyUnicode_InternFromString("_launch_failed"))
            || !(s_parts = PyUnicode_InternFromString("parts"))
            || !(s_not_flat = PyUnicode_InternFromString("not_flat"))
            || !(s_active = PyUnicode_InternFromString("_active"))
            || !(s_cache_key = PyUnicode_InternFromString("cache_key"))
            || !(s_grid = PyUnicode_InternFromString("grid")) || !(s_warmup = PyUnicode_InternFromString("warmup")))
        return -1;
    if (!(s_dict = PyUnicode_InternFromString("__dict__")) || !(s_mro = PyUnicode_InternFromString("__mro__"))
            || !(s_objclass = PyUnicode_InternFromString("__objclass__")))
        return -1;
    PyObject *join = PyObject_GetAttrString((PyObject *)&PyUnicode_Type, "join");
    PyObject *real = PyObject_GetAttrString((PyObject *)&PyLong_Type, "real");
    method_descr_type = join ? Py_TYPE(join) : NULL;  /* static types: never freed */
    getset_descr_type = real ? Py_TYPE(real) : NULL;
    Py_XDECREF(join); Py_XDECREF(real);
    if (!join || !real) return -1;
    PyObject *types = PyImport_ImportModule("types");
    s_method_type = types ? PyObject_GetAttrString(types, "MethodType") : NULL;
    Py_XDECREF(types);
    if (!s_method_type) return -1;
    PyType_Spec *specs[6] = {&fc_spec, &de_spec, &fl_spec, &gi_spec, &gk_spec, &gcl_spec};
    const char *names[6] = {"FastCall", "DescEncoder", "FlatLaunch", "GuardItem", "GuardKey", "GuardCall"};
    for (int i = 0; i < 6; i++) {
        PyObject *t = PyType_FromSpec(specs[i]);
        if (!t) return -1;
        /* held by the module */
        if (specs[i] == &fl_spec) flat_type = (PyTypeObject *)t;
        if (specs[i] == &gk_spec) guard_key_type = (PyTypeObject *)t;
        if (specs[i] == &gcl_spec) guard_call_type = (PyTypeObject *)t;
        if (PyModule_AddObject(m, names[i], t) < 0) { Py_DECREF(t); return -1; }
    }
    return 0;
}

static PyModuleDef_Slot module_slots[] = {{Py_mod_exec, exec_module}, {0, NULL}};

static PyMethodDef module_methods[] = {
    {"guard_hits", guard_hits, METH_NOARGS, "Launches made by GuardKey.hit since the module was loaded."},
    {"grid_wrote", (PyCFunction)(void (*)(void))grid_wrote, METH_FASTCALL,
     "grid_wrote(bound, names, values): whether a grid callable wrote into the arguments by name it was given."},
    {"jit_key", mod_jit_key, METH_O, "jit_key(fn): the key of a JIT function passed as an argument (its cache_key)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "launcher._call",
    "The C calls of prepared launches (launcher.prepared), guarded kernel[grid] calls (launcher.fast_dispatch) "
    "and host descriptor encoding (launcher.tensormap); see cdefs/call.c.", 0, module_methods, module_slots, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__call(void) { return PyModuleDef_Init(&module); }
