/* launcher's native library: the one header shared by cdefs/launcher.c and Python.
 *
 * launcher.c includes it; cdefs/build.py hands the same text to cffi's ffi.cdef() with the
 * preprocessor lines removed, so every constant, struct and prototype is written once.
 * Python reads the numbers below as lib.NAME and the layout of launcher_header with
 * ffi.sizeof / ffi.typeof; it repeats none of them.
 *
 * What this library does: open libcuda.so.1 (dlopen, on first use), find the current context,
 * check pointer arguments (with a per-thread cache of device memory ranges), call
 * cuLaunchKernelEx with launch attributes Python computed, write the parameter bytes instead
 * (the dry run), and launch in a C loop (the benchmarks' floor).  Policy (argument checks,
 * planning, launch attributes, shared-memory opt-in, tensor-map conventions) lives in Python. */
#ifndef LAUNCHER_H
#define LAUNCHER_H
#include <stddef.h>
#include <stdint.h>

/* Kinds of kernel parameter. */
enum {
    LAUNCHER_PARAM_VALUE = 0,     /* bytes passed as they are */
    LAUNCHER_PARAM_POINTER = 1,   /* 8 bytes: checked to be reachable from the device, translated */
    LAUNCHER_PARAM_TENSORMAP = 2  /* a 128-byte CUtensorMap, passed by value (64-byte aligned) */
};

/* Limits. */
enum {
    LAUNCHER_MAX_PARAM_BYTES = 32764, /* kernel parameter space (CUDA 12.1+) */
    LAUNCHER_MAX_ATTRS = 8            /* launch attributes per plan */
};

/* Status codes: 0 is success, positive values are CUresults, negative ones are ours. */
enum {
    LAUNCHER_ERROR_NO_DRIVER = -1,   /* libcuda.so.1 could not be opened */
    LAUNCHER_ERROR_NO_SYMBOL = -2,   /* libcuda.so.1 lacks a function we need */
    LAUNCHER_ERROR_BAD_POINTER = -3, /* a pointer argument is not reachable from the device */
    LAUNCHER_ERROR_BAD_PLAN = -4,    /* a plan that is malformed (launcher_plan_new says how) */
    LAUNCHER_ERROR_BAD_BUFFER = -5,  /* a buffer that does not have the plan's size */
    LAUNCHER_ERROR_BAD_GRID = -6,    /* a grid that does not fit the driver's unsigned ints */
    LAUNCHER_ERROR_NO_MEMORY = -7,   /* malloc failed */
    LAUNCHER_ERROR_BAD_GEOMETRY = -8 /* a tensor map's rank, sizes or strides are out of range */
};

/* Why launcher_plan_new refused a plan (in *detail; the index of the culprit in *where). */
enum {
    LAUNCHER_PLAN_OK = 0,
    LAUNCHER_PLAN_TOO_MANY_PARAMS = 1, /* n_params < 0 or > LAUNCHER_MAX_PARAM_BYTES */
    LAUNCHER_PLAN_BAD_SIZE = 2,        /* args_size below the header or above the limit */
    LAUNCHER_PLAN_BAD_KIND = 3,        /* kinds[where] is not a LAUNCHER_PARAM_* */
    LAUNCHER_PLAN_BAD_PARAM_SIZE = 4,  /* sizes[where] is not positive, or wrong for its kind */
    LAUNCHER_PLAN_BAD_OFFSET = 5,      /* offsets[where] + sizes[where] leaves the buffer, overlaps
                                          the header, or is misaligned for its kind */
    LAUNCHER_PLAN_TOO_LARGE = 6,       /* the parameters take more than LAUNCHER_MAX_PARAM_BYTES */
    LAUNCHER_PLAN_BAD_ATTRS = 7,       /* n_attrs out of range or attribute ids[where] unknown */
    LAUNCHER_PLAN_BAD_BLOCK = 8        /* block_x or cluster_x is zero */
};

/* The CUDA driver's numbers launcher uses (cuda.h's enums, CUDA 12/13), written here only:
 * launcher.c uses some, Python reads the others as lib.NAME (tests/test_header_codes.py holds
 * them to cuda.bindings' own).  Python asks cuda.bindings only for numbers not named here. */
/* CUresult (the last three: a module unloaded at process teardown) */
enum { CUDA_SUCCESS = 0, CUDA_ERROR_INVALID_VALUE = 1,
       CUDA_ERROR_DEINITIALIZED = 4, CUDA_ERROR_INVALID_CONTEXT = 201, CUDA_ERROR_CONTEXT_IS_DESTROYED = 709 };
/* CUpointer_attribute and CUmemorytype (the pointer checks) */
enum { CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2, CU_POINTER_ATTRIBUTE_DEVICE_POINTER = 3,
       CU_POINTER_ATTRIBUTE_RANGE_START_ADDR = 11, CU_POINTER_ATTRIBUTE_RANGE_SIZE = 12, CU_MEMORYTYPE_DEVICE = 2 };
/* CUfunction_attribute (a kernel's load; SHARED_MEMORY_MODE: CUDA 13.1+) */
enum { CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1,
       CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES = 3, CU_FUNC_ATTRIBUTE_NUM_REGS = 4,
       CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED = 14,
       CU_FUNC_ATTRIBUTE_SHARED_MEMORY_MODE = 17 };
/* CUdevice_attribute (MAX_OVERSIZED_SHARED_MEMORY_PER_BLOCK: CUDA 13.1+) */
enum { CU_DEVICE_ATTRIBUTE_WARP_SIZE = 10, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
       CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
       CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97,
       CU_DEVICE_ATTRIBUTE_MAX_OVERSIZED_SHARED_MEMORY_PER_BLOCK = 150 };
/* CUfunc_cache; launch attribute values: CUclusterSchedulingPolicy, CUsharedMemoryMode (13.1+) */
enum { CU_FUNC_CACHE_PREFER_SHARED = 1, CU_CLUSTER_SCHEDULING_POLICY_SPREAD = 1,
       CU_SHARED_MEMORY_MODE_ALLOW_OVERSIZED_SHARED_MEMORY = 3 };
/* cuTensorMapEncodeTiled's enums: the data types Triton's device numbering maps to other
 * numbers on the host, and the options Triton encodes with */
enum { CU_TENSOR_MAP_DATA_TYPE_FLOAT64 = 8, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 = 9,
       CU_TENSOR_MAP_DATA_TYPE_FLOAT32_FTZ = 10, CU_TENSOR_MAP_DATA_TYPE_TFLOAT32 = 11,
       CU_TENSOR_MAP_INTERLEAVE_NONE = 0, CU_TENSOR_MAP_L2_PROMOTION_L2_128B = 2,
       CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE = 0, CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA = 1 };

/* Launch attributes the plan may carry (CUlaunchAttributeID values, CUDA 12/13). */
enum {
    LAUNCHER_ATTR_COOPERATIVE = 2,
    LAUNCHER_ATTR_CLUSTER_DIMENSION = 4,
    LAUNCHER_ATTR_CLUSTER_SCHEDULING_POLICY_PREFERENCE = 5,
    LAUNCHER_ATTR_PROGRAMMATIC_STREAM_SERIALIZATION = 6,
    LAUNCHER_ATTR_SHARED_MEMORY_MODE = 18 /* CUDA 13.1+ */
};

/* The packed argument buffer starts with this header; the kernel parameters follow at the
 * plan's offsets. */
typedef struct {
    uint64_t function; /* CUfunction */
    uint64_t stream;   /* CUstream */
    int32_t grid_x, grid_y, grid_z;
    int32_t reserved;
} launcher_header;

/* How one kernel is launched: its parameter layout and launch configuration.  Opaque: made
 * (and validated, once) by launcher_plan_new, freed by launcher_plan_free. */
typedef struct launcher_plan launcher_plan;

/* What launcher._call (cdefs/call.c) checks an argument for and how it packs it.  Python builds
 * the checks once per shape (launcher/checks.py) as tuples whose first item is one of these;
 * the C carries them out and declines, never explains, what does not pass. */
enum {
    LAUNCHER_CHECK_CONSTEXPR = 0, /* (kind, value, eq): that object, or with eq one of its class
                                     that compares equal */
    LAUNCHER_CHECK_POINTER = 1,   /* (kind, class, dtype, aligned, offset): a tensor of that class
                                     and dtype (by identity), or an exact int address */
    LAUNCHER_CHECK_INT = 2,       /* (kind, lo, hi, aligned, offset, code): an exact int in [lo, hi] */
    LAUNCHER_CHECK_FLOAT = 3,     /* (kind, offset, code): an exact float; code F32 or F64 */
    LAUNCHER_CHECK_BOOL = 4,      /* (kind, offset): True or False */
    LAUNCHER_CHECK_TUPLE = 5,     /* (kind, (checks...)): an exact tuple of that length */
    LAUNCHER_CHECK_CALL = 6,      /* (kind, fn, ((offset, code), ...)): fn(argument) -> the values */
    LAUNCHER_CHECK_SKIP = 7,      /* (kind,): a constexpr the caller's key has decided */
    LAUNCHER_CHECK_ADDRESS = 8    /* (kind, offset): an exact int address, or what data_ptr() gives */
};

/* The codes of the values those checks pack: Python's struct codes (the character), so that a
 * parameter's struct code is its pack code; the float codes are the only floats the C packs
 * (fp16 keeps struct's rounding, in Python). */
enum {
    LAUNCHER_PACK_BOOL = '?', /* one byte: a bool, or the int 0 or 1 */
    LAUNCHER_PACK_I8 = 'b',
    LAUNCHER_PACK_U8 = 'B',
    LAUNCHER_PACK_I16 = 'h',
    LAUNCHER_PACK_U16 = 'H',
    LAUNCHER_PACK_I32 = 'i',
    LAUNCHER_PACK_U32 = 'I',
    LAUNCHER_PACK_I64 = 'q',
    LAUNCHER_PACK_U64 = 'Q',
    LAUNCHER_PACK_F32 = 'f',
    LAUNCHER_PACK_F64 = 'd',
    LAUNCHER_PACK_TENSORMAP = 'T' /* 128 bytes of a CUtensorMap (struct's "128s") */
};

/* Make a plan.  offsets/sizes/kinds: n_params entries each (the two scratch pointers
 * included); args_size: bytes of the packed buffer (header included); block_x: threads per
 * block; shared: dynamic shared memory bytes; cluster_x: CTAs per cluster (the grid's x is
 * multiplied by it); attr_ids/attr_values: n_attrs launch attributes, three uint32 values each
 * (x, y, z for a cluster dimension; the value in x otherwise).  The arrays are copied.
 * Returns NULL with *detail = LAUNCHER_PLAN_* and *where = the offending index when the plan
 * is malformed, or with *detail = -1 when memory ran out. */
launcher_plan *launcher_plan_new(int n_params, const int *offsets, const int *sizes,
                                 const unsigned char *kinds, int args_size, uint32_t block_x,
                                 uint32_t shared, uint32_t cluster_x, int n_attrs,
                                 const int *attr_ids, const uint32_t *attr_values, int *detail,
                                 int *where);
void launcher_plan_free(launcher_plan *plan);

/* Bytes launcher_dry_run writes: the sum of the parameter sizes. */
int launcher_plan_dry_run_size(const launcher_plan *plan);

/* Launch one kernel with the packed buffer `args` (args_len bytes: exactly the plan's
 * args_size).  Pointers are checked and translated, then cuLaunchKernelEx is called.  A grid
 * with a zero or negative dimension launches nothing.  Returns 0, a CUresult, or
 * LAUNCHER_ERROR_*. */
int launcher_launch(const launcher_plan *plan, const char *args, size_t args_len);

/* Everything launcher_launch does but touching the driver: the bytes each kernel parameter
 * would receive are written to out, one after another (out_len must be at least
 * launcher_plan_dry_run_size). */
int launcher_dry_run(const launcher_plan *plan, const char *args, size_t args_len, char *out,
                     size_t out_len);

/* The benchmarks' floor: the same launch `count` times in one C loop. */
int launcher_launch_repeat(const launcher_plan *plan, const char *args, size_t args_len, int count);

/* A launch packed once and launched again and again (CudaLauncher.bind, prepared launches):
 * the buffer is copied into aligned storage and the parameter array is built once; pointers
 * are checked again only when the current context or the pointer cache changed.  Each launch
 * names its stream (the current one, which may have changed since the launch was packed).
 * The plan must outlive it.  Returns NULL with *status set on a wrong buffer size or no
 * memory. */
typedef struct launcher_bound launcher_bound;
launcher_bound *launcher_bound_new(const launcher_plan *plan, const char *args, size_t args_len,
                                   int *status);
void launcher_bound_free(launcher_bound *bound);
int launcher_bound_launch(launcher_bound *bound, uint64_t stream);
int launcher_bound_repeat(launcher_bound *bound, uint64_t stream, int count);

/* The benchmarks' floor of a sequence (the decode step): the n bound launches one after another,
 * `count` times, in one C loop on `stream` (every check made once, first). n is 1 to
 * LAUNCHER_SEQUENCE_MAX; *failed gets the index of the launch a failure is about, -1 for a
 * failure that is no launch's (the count, the driver, the context). */
enum { LAUNCHER_SEQUENCE_MAX = 64 };
int launcher_bound_sequence(launcher_bound *const *bounds, int n, uint64_t stream, int count, int *failed);

/* The parameter index of the last LAUNCHER_ERROR_BAD_POINTER in this thread. */
int launcher_last_bad_param(void);

/* Open and initialise libcuda.so.1 once; 0 or a status code. */
int launcher_driver_init(void);

/* The current CUDA context, or `device`'s primary context made current when there is none (as
 * Triton does); *status gets 0 or a status code. */
uint64_t launcher_current_context(int device, int *status);

/* The device of the current context (device 0's primary context is made current when there is
 * none); *status gets 0 or a status code. */
int launcher_current_device(int *status);

/* A kernel's first load, without cuda.bindings (whose import costs a fresh process tens of
 * milliseconds): the driver calls as they are, each returning 0 or a status code.  Python
 * decides what to ask (which attributes, the shared-memory opt-in); these only ask.
 * launcher_module_load takes a cubin (an ELF image, whose headers give its size). */
int launcher_module_load(const char *image, uint64_t *module);
int launcher_module_unload(uint64_t module);
int launcher_module_function(uint64_t module, const char *name, uint64_t *function);
int launcher_function_get_attribute(uint64_t function, int attribute, int *value);
int launcher_function_set_attribute(uint64_t function, int attribute, int value);
int launcher_function_set_cache_config(uint64_t function, int config);
int launcher_device_get_attribute(int device, int attribute, int *value);

/* What the tensor maps of one descriptor parameter share: everything but the tensor's address,
 * shape and strides (made once per encoder; launcher_encode_tensor_map takes it). box: rank
 * entries, innermost first; clear_bit21_below: see launcher_encode_tensor_map. */
typedef struct {
    int32_t elem_type;
    uint32_t rank;
    uint32_t box[5];
    uint32_t elem_size;
    int32_t interleave, swizzle, l2_promotion, oob_fill;
    uint64_t clear_bit21_below;
} launcher_tensor_map_format;

/* A tiled CUtensorMap into out_128_bytes for a tensor at global_address with the format's
 * element type, box and options; `dims` holds the rank sizes and then the rank strides (in
 * elements), outermost first, as Python describes a tensor.  This only turns them into
 * cuTensorMapEncodeTiled's order (dimensions innermost first, byte strides of the rank-1 outer
 * dimensions, element strides 1) and passes the rest through; Python decides the conventions.
 * clear_bit21_below: where non-zero, bit 21 of the map's second 64-bit word is cleared when the
 * tensor's last byte lies below that many bytes (the CUTLASS workaround, applied where Python
 * says the kernel's release and the driver call for it).  LAUNCHER_ERROR_BAD_GEOMETRY for a rank,
 * a size or a stride out of range (checked before the driver is opened); a non-zero
 * global_address is checked as pointer arguments are: LAUNCHER_ERROR_BAD_POINTER when the current
 * context cannot reach it. */
int launcher_encode_tensor_map(char *out_128_bytes, const launcher_tensor_map_format *format,
                               uint64_t global_address, const int64_t *dims);

/* The same with every field passed on its own: `shape` and `strides` (rank entries each,
 * outermost first), `box` (rank entries, innermost first). */
int launcher_encode_tensor(char *out_128_bytes, int elem_type, uint32_t rank, uint64_t global_address,
                           const int64_t *shape, const int64_t *strides, const uint32_t *box,
                           uint32_t elem_size, int interleave, int swizzle, int l2_promotion,
                           int oob_fill, uint64_t clear_bit21_below);

/* cuDriverGetVersion (e.g. 13000 for 13.0) into *version. */
int launcher_driver_version(int *version);

/* Pointer-range cache: hits (this thread) and driver queries (all threads); clear forgets
 * every remembered range in every thread. */
void launcher_pointer_cache_stats(uint64_t *hits, uint64_t *misses);
void launcher_pointer_cache_clear(void);

#endif /* LAUNCHER_H */
