/* launcher's native library: one variadic kernel launch over cuLaunchKernelEx.
 *
 * Built once by cffi when the package is installed (cdefs/build.py).  It needs no CUDA headers:
 * the few driver types and functions it uses are declared here, and libcuda.so.1 is opened with
 * dlopen on first use, so importing the package never needs a GPU.  Policy (argument checks,
 * planning, hooks, scratch allocation) lives in Python; this file only does what must be fast. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define LAUNCHER_PARAM_VALUE 0
#define LAUNCHER_PARAM_POINTER 1
#define LAUNCHER_PARAM_TENSORMAP 2

#define LAUNCHER_ERROR_NO_DRIVER (-1)
#define LAUNCHER_ERROR_NO_SYMBOL (-2)
#define LAUNCHER_ERROR_BAD_POINTER (-3)
#define LAUNCHER_ERROR_TOO_LARGE (-4)

typedef struct {
    int n_params;
    int args_size;
    const int *offsets;
    const int *sizes;
    const unsigned char *kinds;
    int launch_cooperative_grid;
    int launch_pdl;
} launcher_plan;

/* ---- the driver types we use (layouts as in cuda.h, CUDA 12/13) ---- */
typedef int CUresult;
typedef int CUdevice;
typedef struct CUctx_st *CUcontext;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef uint64_t CUdeviceptr;

enum {
    CUDA_SUCCESS = 0,
    CUDA_ERROR_INVALID_VALUE = 1,
    CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2,
    CU_POINTER_ATTRIBUTE_DEVICE_POINTER = 3,
    CU_POINTER_ATTRIBUTE_RANGE_START_ADDR = 11,
    CU_POINTER_ATTRIBUTE_RANGE_SIZE = 12,
    CU_MEMORYTYPE_DEVICE = 2,
    CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED = 14,
    CU_LAUNCH_ATTRIBUTE_COOPERATIVE = 2,
    CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION = 4,
    CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE = 5,
    CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION = 6,
    CU_LAUNCH_ATTRIBUTE_SHARED_MEMORY_MODE = 18, /* CUDA 13.1+; as Triton 3.8+ uses it */
    CU_SHARED_MEMORY_MODE_ALLOW_OVERSIZED = 3,
    CU_CLUSTER_SCHEDULING_POLICY_SPREAD = 1,
    CU_TENSOR_MAP_INTERLEAVE_NONE = 0,
    CU_TENSOR_MAP_L2_PROMOTION_L2_128B = 2,
    CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE = 0,
    CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA = 1,
};

typedef union {
    char pad[64];
    int cooperative;
    int programmaticStreamSerializationAllowed;
    int clusterSchedulingPolicyPreference;
    int sharedMemoryMode;
    struct { unsigned int x, y, z; } clusterDim;
} CUlaunchAttributeValue;

typedef struct {
    int id;
    char pad[8 - sizeof(int)];
    CUlaunchAttributeValue value;
} CUlaunchAttribute;

typedef struct {
    unsigned int gridDimX, gridDimY, gridDimZ;
    unsigned int blockDimX, blockDimY, blockDimZ;
    unsigned int sharedMemBytes;
    CUstream hStream;
    CUlaunchAttribute *attrs;
    unsigned int numAttrs;
} CUlaunchConfig;

/* ---- libcuda.so.1, opened once ---- */
static struct {
    int status; /* 0 ok, else LAUNCHER_ERROR_* or the CUresult of cuInit */
    CUresult (*cuInit)(unsigned int);
    CUresult (*cuLaunchKernelEx)(const CUlaunchConfig *, CUfunction, void **, void **);
    CUresult (*cuCtxGetCurrent)(CUcontext *);
    CUresult (*cuCtxSetCurrent)(CUcontext);
    CUresult (*cuDeviceGet)(CUdevice *, int);
    CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*cuPointerGetAttribute)(void *, int, CUdeviceptr);
    CUresult (*cuFuncSetAttribute)(CUfunction, int, int);
    CUresult (*cuGetErrorName)(CUresult, const char **);
    CUresult (*cuGetErrorString)(CUresult, const char **);
    CUresult (*cuDriverGetVersion)(int *);
    CUresult (*cuTensorMapEncodeTiled)(void *, int, uint32_t, void *, const uint64_t *,
                                       const uint64_t *, const uint32_t *, const uint32_t *,
                                       int, int, int, int);
} cu;
static pthread_once_t cu_once = PTHREAD_ONCE_INIT;

static void cu_open(void) {
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        cu.status = LAUNCHER_ERROR_NO_DRIVER;
        return;
    }
#define LOAD(name)                                  \
    do {                                            \
        *(void **)&cu.name = dlsym(h, #name);       \
        if (!cu.name) {                             \
            cu.status = LAUNCHER_ERROR_NO_SYMBOL;   \
            return;                                 \
        }                                           \
    } while (0)
    LOAD(cuInit);
    LOAD(cuLaunchKernelEx);
    LOAD(cuCtxGetCurrent);
    LOAD(cuCtxSetCurrent);
    LOAD(cuDeviceGet);
    LOAD(cuDevicePrimaryCtxRetain);
    LOAD(cuPointerGetAttribute);
    LOAD(cuFuncSetAttribute);
    LOAD(cuGetErrorName);
    LOAD(cuGetErrorString);
    LOAD(cuDriverGetVersion);
    LOAD(cuTensorMapEncodeTiled);
#undef LOAD
    cu.status = cu.cuInit(0);
}

int launcher_driver_init(void) {
    pthread_once(&cu_once, cu_open);
    return cu.status;
}

/* These work once libcuda.so.1 is open, even when cuInit itself failed (to say why). */
const char *launcher_error_name(int code) {
    const char *s = NULL;
    launcher_driver_init();
    if (cu.cuGetErrorName && cu.cuGetErrorName(code, &s) == CUDA_SUCCESS)
        return s;
    return NULL;
}

const char *launcher_error_string(int code) {
    const char *s = NULL;
    launcher_driver_init();
    if (cu.cuGetErrorString && cu.cuGetErrorString(code, &s) == CUDA_SUCCESS)
        return s;
    return NULL;
}

/* The current context; with none, `device`'s primary context is made current (as Triton does:
 * device 0 for a launch from a thread that never touched CUDA, the kernel's device for a load). */
static CUresult current_context(CUcontext *ctx, int device) {
    CUresult rc = cu.cuCtxGetCurrent(ctx);
    if (rc != CUDA_SUCCESS || *ctx)
        return rc;
    CUdevice dev;
    if ((rc = cu.cuDeviceGet(&dev, device)) != CUDA_SUCCESS)
        return rc;
    if ((rc = cu.cuDevicePrimaryCtxRetain(ctx, dev)) != CUDA_SUCCESS)
        return rc;
    return cu.cuCtxSetCurrent(*ctx);
}

uint64_t launcher_current_context(int device, int *status) {
    CUcontext ctx = NULL;
    int rc = launcher_driver_init();
    if (rc == 0)
        rc = current_context(&ctx, device);
    *status = rc;
    return rc == 0 ? (uint64_t)(uintptr_t)ctx : 0;
}

/* ---- pointer checks ----
 * Like Triton, every pointer argument is asked of the driver (cuPointerGetAttribute) before the
 * launch, so that host memory the device cannot reach is an error, not a fault.  Device memory
 * ranges that passed are remembered per thread and context: torch's allocator hands out pieces
 * of a few large ranges, so a launch rarely asks the driver at all.  Only device memory is
 * remembered (its addresses lie in the driver's own reserved address space); pinned host memory
 * is asked about every time. */
#define RANGE_CACHE_SIZE 16
typedef struct {
    CUcontext ctx;
    uint64_t start, end, generation;
} range_entry;
static __thread range_entry range_cache[RANGE_CACHE_SIZE];
static __thread unsigned range_next, range_last_hit;
static __thread int last_bad_param = -1;
static uint64_t range_generation = 1;
static uint64_t range_queries; /* pointers the driver was asked about (cache misses) */
static __thread uint64_t range_hits; /* per thread: counting hits must not cost an atomic */

int launcher_last_bad_param(void) { return last_bad_param; }

void launcher_pointer_cache_stats(uint64_t *hits, uint64_t *misses) {
    *hits = range_hits;
    *misses = __atomic_load_n(&range_queries, __ATOMIC_RELAXED);
}

void launcher_pointer_cache_clear(void) {
    __atomic_fetch_add(&range_generation, 1, __ATOMIC_RELAXED);
}

static inline int range_cached(const range_entry *e, CUcontext ctx, uint64_t p, uint64_t gen) {
    return e->ctx == ctx && e->generation == gen && p >= e->start && p < e->end;
}

static CUresult check_pointer(CUcontext ctx, uint64_t *ptr) {
    uint64_t p = *ptr, gen = __atomic_load_n(&range_generation, __ATOMIC_RELAXED);
    if (range_cached(&range_cache[range_last_hit], ctx, p, gen)) {
        range_hits++;
        return CUDA_SUCCESS;
    }
    for (unsigned i = 0; i < RANGE_CACHE_SIZE; i++) {
        if (range_cached(&range_cache[i], ctx, p, gen)) {
            range_last_hit = i;
            range_hits++;
            return CUDA_SUCCESS;
        }
    }
    __atomic_fetch_add(&range_queries, 1, __ATOMIC_RELAXED);
    uint64_t dev_ptr = 0;
    CUresult rc = cu.cuPointerGetAttribute(&dev_ptr, CU_POINTER_ATTRIBUTE_DEVICE_POINTER, p);
    if (rc != CUDA_SUCCESS)
        return rc;
    *ptr = dev_ptr;
    unsigned int mem_type = 0;
    uint64_t start = 0, size = 0;
    if (cu.cuPointerGetAttribute(&mem_type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p) == CUDA_SUCCESS &&
        mem_type == CU_MEMORYTYPE_DEVICE && dev_ptr == p &&
        cu.cuPointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, p) == CUDA_SUCCESS &&
        cu.cuPointerGetAttribute(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, p) == CUDA_SUCCESS &&
        size > 0) {
        range_last_hit = range_next++ % RANGE_CACHE_SIZE;
        range_entry *e = &range_cache[range_last_hit];
        e->ctx = ctx;
        e->start = start;
        e->end = start + size;
        e->generation = gen;
    }
    return CUDA_SUCCESS;
}

/* ---- the launch ---- */
#define INLINE_PARAMS 256
#define INLINE_BYTES 4096
#define MAX_PARAM_BYTES 32764 /* CUDA 12.1+ allows 32764 bytes of kernel parameters */

typedef struct {
    _Alignas(128) unsigned char bytes[INLINE_BYTES];
    void *params[INLINE_PARAMS];
} inline_storage;

/* The packed buffer starts with this header (HEADER_FORMAT in launcher/signature.py). */
typedef struct {
    uint64_t function, stream;
    int32_t grid_x, grid_y, grid_z;
    uint16_t num_warps, num_ctas;
    uint32_t shared_memory, reserved;
} launch_header;

static int launch_impl(const launcher_plan *plan, const char *args, char *dry_run_out, int count) {
    launch_header h;
    memcpy(&h, args, sizeof h);
    uint64_t function = h.function, stream = h.stream;
    int grid_x = h.grid_x, grid_y = h.grid_y, grid_z = h.grid_z;
    unsigned int num_warps = h.num_warps, num_ctas = h.num_ctas, shared_memory = h.shared_memory;
    int n = plan->n_params, size = plan->args_size;
    if (size - (int)sizeof(launch_header) > MAX_PARAM_BYTES)
        return LAUNCHER_ERROR_TOO_LARGE;
    if (!dry_run_out) {
        int rc = launcher_driver_init();
        if (rc != 0)
            return rc;
    }

    inline_storage local;
    unsigned char *bytes = local.bytes;
    void **params = local.params;
    void *heap = NULL;
    if (n > INLINE_PARAMS || size > INLINE_BYTES) {
        size_t params_at = ((size_t)size + 127) & ~(size_t)127;
        if (posix_memalign(&heap, 128, params_at + sizeof(void *) * (size_t)n) != 0)
            return LAUNCHER_ERROR_TOO_LARGE;
        bytes = heap;
        params = (void **)((char *)heap + params_at);
    }
    memcpy(bytes, args, (size_t)size);
    for (int i = 0; i < n; i++)
        params[i] = bytes + plan->offsets[i];

    int rc = CUDA_SUCCESS;
    if (dry_run_out) {
        for (int i = 0; i < n; i++) {
            memcpy(dry_run_out, params[i], (size_t)plan->sizes[i]);
            dry_run_out += plan->sizes[i];
        }
        goto done;
    }

    CUcontext ctx = NULL;
    if ((rc = current_context(&ctx, 0)) != CUDA_SUCCESS)
        goto done;
    for (int i = 0; i < n; i++) {
        if (plan->kinds[i] != LAUNCHER_PARAM_POINTER)
            continue;
        uint64_t *p = (uint64_t *)params[i];
        if (*p == 0)
            continue;
        rc = check_pointer(ctx, p);
        if (rc != CUDA_SUCCESS) {
            if (rc == CUDA_ERROR_INVALID_VALUE) {
                last_bad_param = i;
                rc = LAUNCHER_ERROR_BAD_POINTER;
            }
            goto done;
        }
    }
    if (grid_x <= 0 || grid_y <= 0 || grid_z <= 0)
        goto done; /* nothing to launch, as in Triton (decided per axis: no overflowing product) */

    CUlaunchAttribute attrs[5]; /* at most all five at once; only the used ones are set */
    unsigned int n_attrs = 0;
    if (shared_memory > 228 * 1024 || plan->launch_pdl || plan->launch_cooperative_grid || num_ctas != 1)
        memset(attrs, 0, sizeof attrs);
    if (shared_memory > 228 * 1024) {
        attrs[n_attrs].id = CU_LAUNCH_ATTRIBUTE_SHARED_MEMORY_MODE;
        attrs[n_attrs++].value.sharedMemoryMode = CU_SHARED_MEMORY_MODE_ALLOW_OVERSIZED;
    }
    if (plan->launch_pdl) {
        attrs[n_attrs].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
        attrs[n_attrs++].value.programmaticStreamSerializationAllowed = 1;
    }
    if (plan->launch_cooperative_grid) {
        attrs[n_attrs].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
        attrs[n_attrs++].value.cooperative = 1;
    }
    if (num_ctas != 1) {
        attrs[n_attrs].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
        attrs[n_attrs].value.clusterDim.x = num_ctas;
        attrs[n_attrs].value.clusterDim.y = 1;
        attrs[n_attrs++].value.clusterDim.z = 1;
        attrs[n_attrs].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE;
        attrs[n_attrs++].value.clusterSchedulingPolicyPreference = CU_CLUSTER_SCHEDULING_POLICY_SPREAD;
    }
    if (num_ctas == 16) { /* a non-portable cluster size, allowed on H100/B200 */
        rc = cu.cuFuncSetAttribute((CUfunction)(uintptr_t)function,
                                   CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1);
        if (rc != CUDA_SUCCESS)
            goto done;
    }

    if ((uint64_t)grid_x * num_ctas > 0xFFFFFFFFull) {
        rc = CUDA_ERROR_INVALID_VALUE; /* the grid in blocks would not fit the driver's uint */
        goto done;
    }
    CUlaunchConfig config;
    config.gridDimX = (unsigned int)grid_x * num_ctas;
    config.gridDimY = (unsigned int)grid_y;
    config.gridDimZ = (unsigned int)grid_z;
    config.blockDimX = 32u * num_warps;
    config.blockDimY = 1;
    config.blockDimZ = 1;
    config.sharedMemBytes = shared_memory;
    config.hStream = (CUstream)(uintptr_t)stream;
    config.attrs = attrs;
    config.numAttrs = n_attrs;
    for (int i = 0; i < count && rc == CUDA_SUCCESS; i++)
        rc = cu.cuLaunchKernelEx(&config, (CUfunction)(uintptr_t)function, params, NULL);

done:
    free(heap);
    return rc;
}

int launcher_launch(const launcher_plan *plan, const char *args, char *dry_run_out) {
    return launch_impl(plan, args, dry_run_out, 1);
}

int launcher_launch_repeat(const launcher_plan *plan, const char *args, int count) {
    return launch_impl(plan, args, NULL, count);
}

/* ---- tensor maps ---- */
int launcher_encode_tiled(char *out, int elem_type, int rank, uint64_t global_address,
                          const uint64_t *shape, const uint64_t *strides, const uint32_t *box,
                          int elem_size, int swizzle, int nan_padding, int clear_bit21) {
    int rc = launcher_driver_init();
    if (rc != 0)
        return rc;
    if (rank < 1 || rank > 5)
        return CUDA_ERROR_INVALID_VALUE;
    /* The driver takes dimensions innermost first, byte strides of the rank-1 outer dims. */
    uint64_t dims[5], byte_strides[5];
    uint32_t boxes[5], elem_strides[5] = {1, 1, 1, 1, 1};
    for (int i = 0; i < rank; i++) {
        dims[i] = shape[rank - 1 - i];
        boxes[i] = box[rank - 1 - i];
    }
    for (int i = 0; i + 1 < rank; i++)
        byte_strides[i] = strides[rank - 2 - i] * (uint64_t)elem_size;
    _Alignas(128) unsigned char map[128];
    rc = cu.cuTensorMapEncodeTiled(map, elem_type, (uint32_t)rank, (void *)(uintptr_t)global_address,
                                   dims, byte_strides, boxes, elem_strides,
                                   CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle,
                                   CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                                   nan_padding ? CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA
                                               : CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (clear_bit21) {
        int version = 0;
        if (cu.cuDriverGetVersion(&version) == CUDA_SUCCESS && version <= 13010) {
            uint64_t max_byte_index = 0;
            for (int i = 0; i < rank; i++)
                max_byte_index += (dims[i] - 1) * (i == 0 ? (uint64_t)elem_size : byte_strides[i - 1]);
            if (max_byte_index + 1 < 128 * 1024) {
                uint64_t word;
                memcpy(&word, map + 8, 8);
                word &= ~(1ull << 21);
                memcpy(map + 8, &word, 8);
            }
        }
    }
    memcpy(out, map, 128);
    return CUDA_SUCCESS;
}
