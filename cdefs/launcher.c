/* launcher's native library: one variadic kernel launch over cuLaunchKernelEx.
 *
 * Built once by cffi when the package is installed (cdefs/build.py).  Its API is
 * cdefs/launcher.h, which cffi reads too.  It needs no CUDA headers: the few driver types it
 * uses are declared below, and libcuda.so.1 is opened with dlopen on first use, so importing
 * the package never needs a GPU.
 *
 * It trusts nothing it is handed: a plan is validated once, when it is made (its parameters
 * lie inside the buffer, their kinds are known, the total fits the parameter space), and every
 * launch checks that its buffer has exactly the plan's size. */
#include "launcher.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* ---- the driver types we use (layouts as in cuda.h, CUDA 12/13; the enum values are in launcher.h) ---- */
typedef int CUresult;
typedef int CUdevice;
typedef struct CUctx_st *CUcontext;
typedef struct CUfunc_st *CUfunction;
typedef struct CUmod_st *CUmodule;
typedef struct CUstream_st *CUstream;
typedef uint64_t CUdeviceptr;

typedef union {
    char pad[64];
    unsigned int values[3];
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
    CUresult (*cuCtxGetDevice)(CUdevice *);
    CUresult (*cuDeviceGet)(CUdevice *, int);
    CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*cuPointerGetAttribute)(void *, int, CUdeviceptr);
    CUresult (*cuTensorMapEncodeTiled)(void *, int, uint32_t, void *, const uint64_t *,
                                       const uint64_t *, const uint32_t *, const uint32_t *,
                                       int, int, int, int);
    CUresult (*cuModuleLoadData)(CUmodule *, const void *);
    CUresult (*cuModuleUnload)(CUmodule);
    CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule, const char *);
    CUresult (*cuFuncGetAttribute)(int *, int, CUfunction);
    CUresult (*cuFuncSetAttribute)(CUfunction, int, int);
    CUresult (*cuFuncSetCacheConfig)(CUfunction, int);
    CUresult (*cuDeviceGetAttribute)(int *, int, CUdevice);
    CUresult (*cuDriverGetVersion)(int *);
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
    LOAD(cuCtxGetDevice);
    LOAD(cuDeviceGet);
    LOAD(cuDevicePrimaryCtxRetain);
    LOAD(cuPointerGetAttribute);
    LOAD(cuTensorMapEncodeTiled);
    LOAD(cuModuleLoadData);
    LOAD(cuModuleUnload);
    LOAD(cuModuleGetFunction);
    LOAD(cuFuncGetAttribute);
    LOAD(cuFuncSetAttribute);
    LOAD(cuFuncSetCacheConfig);
    LOAD(cuDeviceGetAttribute);
    LOAD(cuDriverGetVersion);
#undef LOAD
    cu.status = cu.cuInit(0);
}

int launcher_driver_init(void) {
    pthread_once(&cu_once, cu_open);
    return cu.status;
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

int launcher_current_device(int *status) {
    CUcontext ctx = NULL;
    CUdevice dev = 0;
    int rc = launcher_driver_init();
    if (rc == 0)
        rc = current_context(&ctx, 0);
    if (rc == 0)
        rc = cu.cuCtxGetDevice(&dev);
    *status = rc;
    return rc == 0 ? (int)dev : -1;
}

/* ---- a kernel's first load: the driver calls as they are ---- */
int launcher_module_load(const char *image, uint64_t *module) {
    int rc = launcher_driver_init();
    CUmodule mod = NULL;
    *module = 0;
    if (rc == 0 && (rc = cu.cuModuleLoadData(&mod, image)) == CUDA_SUCCESS)
        *module = (uint64_t)(uintptr_t)mod;
    return rc;
}

int launcher_module_unload(uint64_t module) {
    int rc = launcher_driver_init();
    return rc != 0 ? rc : cu.cuModuleUnload((CUmodule)(uintptr_t)module);
}

int launcher_module_function(uint64_t module, const char *name, uint64_t *function) {
    int rc = launcher_driver_init();
    CUfunction fn = NULL;
    *function = 0;
    if (rc == 0 && (rc = cu.cuModuleGetFunction(&fn, (CUmodule)(uintptr_t)module, name)) == CUDA_SUCCESS)
        *function = (uint64_t)(uintptr_t)fn;
    return rc;
}

int launcher_function_get_attribute(uint64_t function, int attribute, int *value) {
    int rc = launcher_driver_init();
    *value = 0;
    return rc != 0 ? rc : cu.cuFuncGetAttribute(value, attribute, (CUfunction)(uintptr_t)function);
}

int launcher_function_set_attribute(uint64_t function, int attribute, int value) {
    int rc = launcher_driver_init();
    return rc != 0 ? rc : cu.cuFuncSetAttribute((CUfunction)(uintptr_t)function, attribute, value);
}

int launcher_function_set_cache_config(uint64_t function, int config) {
    int rc = launcher_driver_init();
    return rc != 0 ? rc : cu.cuFuncSetCacheConfig((CUfunction)(uintptr_t)function, config);
}

int launcher_device_get_attribute(int device, int attribute, int *value) {
    int rc = launcher_driver_init();
    CUdevice dev;
    *value = 0;
    if (rc == 0 && (rc = cu.cuDeviceGet(&dev, device)) == CUDA_SUCCESS)
        rc = cu.cuDeviceGetAttribute(value, attribute, dev);
    return rc;
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

static inline uint64_t range_gen(void) {
    return __atomic_load_n(&range_generation, __ATOMIC_RELAXED);
}

static inline int range_cached(const range_entry *e, CUcontext ctx, uint64_t p, uint64_t gen) {
    return e->ctx == ctx && e->generation == gen && p >= e->start && p < e->end;
}

/* Check that `p` is reachable from `ctx`; *translated gets the address the kernel must use. */
static CUresult check_pointer(CUcontext ctx, uint64_t p, uint64_t gen, uint64_t *translated) {
    *translated = p;
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
    *translated = dev_ptr;
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

/* ---- plans ---- */
#define PLAN_MAGIC 0x4c504c4eu /* "LPLN" */
#define ATTR_VALUES 3

struct launcher_plan {
    uint32_t magic;
    int n_params, args_size, out_size, n_pointers;
    uint32_t block_x, shared, cluster_x;
    unsigned int n_attrs;
    CUlaunchAttribute attrs[LAUNCHER_MAX_ATTRS];
    int *offsets, *sizes;
    unsigned char *kinds;
};

static int plan_fail(int *detail, int *where, int why, int index) {
    *detail = why;
    *where = index;
    return 0;
}

static int known_attr(int id) {
    return id == LAUNCHER_ATTR_COOPERATIVE || id == LAUNCHER_ATTR_CLUSTER_DIMENSION ||
           id == LAUNCHER_ATTR_CLUSTER_SCHEDULING_POLICY_PREFERENCE ||
           id == LAUNCHER_ATTR_PROGRAMMATIC_STREAM_SERIALIZATION ||
           id == LAUNCHER_ATTR_SHARED_MEMORY_MODE;
}

/* Everything that makes a plan safe to launch: checked once, here. */
static int plan_valid(int n_params, const int *offsets, const int *sizes, const unsigned char *kinds,
                      int args_size, uint32_t block_x, uint32_t cluster_x, int n_attrs,
                      const int *attr_ids, int *detail, int *where) {
    const int header = (int)sizeof(launcher_header);
    if (n_params < 0 || n_params > LAUNCHER_MAX_PARAM_BYTES)
        return plan_fail(detail, where, LAUNCHER_PLAN_TOO_MANY_PARAMS, n_params);
    /* The buffer holds the header and the parameters with their alignment padding. */
    if (args_size < header || args_size > header + 2 * LAUNCHER_MAX_PARAM_BYTES)
        return plan_fail(detail, where, LAUNCHER_PLAN_BAD_SIZE, args_size);
    if (n_params > 0 && (!offsets || !sizes || !kinds))
        return plan_fail(detail, where, LAUNCHER_PLAN_BAD_OFFSET, 0);
    int end = header; /* where the last parameter ends: the parameter space, padding included */
    for (int i = 0; i < n_params; i++) {
        int kind = kinds[i], size = sizes[i], offset = offsets[i];
        if (kind != LAUNCHER_PARAM_VALUE && kind != LAUNCHER_PARAM_POINTER &&
            kind != LAUNCHER_PARAM_TENSORMAP)
            return plan_fail(detail, where, LAUNCHER_PLAN_BAD_KIND, i);
        if (size <= 0 || size > LAUNCHER_MAX_PARAM_BYTES ||
            (kind == LAUNCHER_PARAM_POINTER && size != 8) ||
            (kind == LAUNCHER_PARAM_TENSORMAP && size != 128))
            return plan_fail(detail, where, LAUNCHER_PLAN_BAD_PARAM_SIZE, i);
        int align = kind == LAUNCHER_PARAM_POINTER ? 8 : kind == LAUNCHER_PARAM_TENSORMAP ? 64 : 1;
        if (offset < header || offset > args_size - size || offset % align != 0)
            return plan_fail(detail, where, LAUNCHER_PLAN_BAD_OFFSET, i);
        if (offset + size > end)
            end = offset + size;
    }
    if (end - header > LAUNCHER_MAX_PARAM_BYTES)
        return plan_fail(detail, where, LAUNCHER_PLAN_TOO_LARGE, end - header);
    if (block_x == 0 || cluster_x == 0)
        return plan_fail(detail, where, LAUNCHER_PLAN_BAD_BLOCK, 0);
    if (n_attrs < 0 || n_attrs > LAUNCHER_MAX_ATTRS || (n_attrs > 0 && !attr_ids))
        return plan_fail(detail, where, LAUNCHER_PLAN_BAD_ATTRS, n_attrs);
    for (int i = 0; i < n_attrs; i++)
        if (!known_attr(attr_ids[i]))
            return plan_fail(detail, where, LAUNCHER_PLAN_BAD_ATTRS, i);
    return 1;
}

launcher_plan *launcher_plan_new(int n_params, const int *offsets, const int *sizes,
                                 const unsigned char *kinds, int args_size, uint32_t block_x,
                                 uint32_t shared, uint32_t cluster_x, int n_attrs,
                                 const int *attr_ids, const uint32_t *attr_values, int *detail,
                                 int *where) {
    *detail = LAUNCHER_PLAN_OK;
    *where = -1;
    if (!plan_valid(n_params, offsets, sizes, kinds, args_size, block_x, cluster_x, n_attrs,
                    attr_ids, detail, where))
        return NULL;
    size_t arrays = (size_t)n_params * (2 * sizeof(int) + 1);
    launcher_plan *plan = calloc(1, sizeof *plan + arrays);
    if (!plan) {
        *detail = -1;
        return NULL;
    }
    plan->offsets = (int *)(plan + 1);
    plan->sizes = plan->offsets + n_params;
    plan->kinds = (unsigned char *)(plan->sizes + n_params);
    if (n_params > 0) {
        memcpy(plan->offsets, offsets, (size_t)n_params * sizeof(int));
        memcpy(plan->sizes, sizes, (size_t)n_params * sizeof(int));
        memcpy(plan->kinds, kinds, (size_t)n_params);
    }
    plan->n_params = n_params;
    plan->args_size = args_size;
    for (int i = 0; i < n_params; i++) {
        plan->out_size += sizes[i];
        plan->n_pointers += kinds[i] == LAUNCHER_PARAM_POINTER;
    }
    plan->block_x = block_x;
    plan->shared = shared;
    plan->cluster_x = cluster_x;
    plan->n_attrs = (unsigned int)n_attrs;
    for (int i = 0; i < n_attrs; i++) {
        plan->attrs[i].id = attr_ids[i];
        for (int j = 0; j < ATTR_VALUES; j++)
            plan->attrs[i].value.values[j] = attr_values[i * ATTR_VALUES + j];
    }
    plan->magic = PLAN_MAGIC;
    return plan;
}

void launcher_plan_free(launcher_plan *plan) {
    if (plan) {
        plan->magic = 0;
        free(plan);
    }
}

int launcher_plan_dry_run_size(const launcher_plan *plan) {
    return plan && plan->magic == PLAN_MAGIC ? plan->out_size : -1;
}

static inline int plan_ok(const launcher_plan *plan, size_t args_len) {
    if (!plan || plan->magic != PLAN_MAGIC)
        return LAUNCHER_ERROR_BAD_PLAN;
    return args_len == (size_t)plan->args_size ? 0 : LAUNCHER_ERROR_BAD_BUFFER;
}

/* ---- the launch ---- */
#define INLINE_PARAMS 256
#define INLINE_BYTES 4096

/* Parameter storage: 128-byte aligned (CUtensorMap), inline for ordinary kernels. */
typedef struct {
    _Alignas(128) unsigned char inline_bytes[INLINE_BYTES];
    void *inline_params[INLINE_PARAMS];
    unsigned char *bytes;
    void **params;
    void *heap;
} param_storage;

static int storage_init(param_storage *s, const launcher_plan *plan) {
    s->bytes = s->inline_bytes;
    s->params = s->inline_params;
    s->heap = NULL;
    if (plan->n_params > INLINE_PARAMS || plan->args_size > INLINE_BYTES) {
        size_t params_at = ((size_t)plan->args_size + 127) & ~(size_t)127;
        if (posix_memalign(&s->heap, 128, params_at + sizeof(void *) * (size_t)plan->n_params) != 0)
            return LAUNCHER_ERROR_NO_MEMORY;
        s->bytes = s->heap;
        s->params = (void **)((char *)s->heap + params_at);
    }
    return 0;
}

/* Check every pointer parameter in `bytes` against `ctx`, storing the translated addresses. */
static CUresult check_pointers(const launcher_plan *plan, unsigned char *bytes, CUcontext ctx) {
    if (plan->n_pointers == 0)
        return CUDA_SUCCESS;
    uint64_t gen = range_gen();
    for (int i = 0; i < plan->n_params; i++) {
        if (plan->kinds[i] != LAUNCHER_PARAM_POINTER)
            continue;
        uint64_t *slot = (uint64_t *)(bytes + plan->offsets[i]); /* 8-aligned: validated */
        uint64_t p = *slot, translated;
        if (p == 0)
            continue;
        CUresult rc = check_pointer(ctx, p, gen, &translated);
        if (rc != CUDA_SUCCESS) {
            if (rc == CUDA_ERROR_INVALID_VALUE) {
                last_bad_param = i;
                return LAUNCHER_ERROR_BAD_POINTER;
            }
            return rc;
        }
        if (translated != p)
            __atomic_store_n(slot, translated, __ATOMIC_RELAXED);
    }
    return CUDA_SUCCESS;
}

/* 0 and *config filled, 1 for a grid with nothing to launch, or LAUNCHER_ERROR_BAD_GRID. */
static int make_config(const launcher_plan *plan, const launcher_header *h, CUlaunchConfig *config) {
    if (h->grid_x <= 0 || h->grid_y <= 0 || h->grid_z <= 0)
        return 1; /* nothing to launch, as in Triton (decided per axis: no overflowing product) */
    if ((uint64_t)(uint32_t)h->grid_x * plan->cluster_x > 0xFFFFFFFFull)
        return LAUNCHER_ERROR_BAD_GRID;
    config->gridDimX = (unsigned int)h->grid_x * plan->cluster_x;
    config->gridDimY = (unsigned int)h->grid_y;
    config->gridDimZ = (unsigned int)h->grid_z;
    config->blockDimX = plan->block_x;
    config->blockDimY = 1;
    config->blockDimZ = 1;
    config->sharedMemBytes = plan->shared;
    config->hStream = (CUstream)(uintptr_t)h->stream;
    config->attrs = (CUlaunchAttribute *)plan->attrs;
    config->numAttrs = plan->n_attrs;
    return 0;
}

static int launch_impl(const launcher_plan *plan, const char *args, size_t args_len,
                       char *dry_run_out, size_t out_len, int count) {
    int rc = plan_ok(plan, args_len);
    if (rc != 0)
        return rc;
    if (dry_run_out && out_len < (size_t)plan->out_size)
        return LAUNCHER_ERROR_BAD_BUFFER;
    if (!dry_run_out && (rc = launcher_driver_init()) != 0)
        return rc;
    launcher_header h;
    memcpy(&h, args, sizeof h);

    param_storage s;
    if ((rc = storage_init(&s, plan)) != 0)
        return rc;
    memcpy(s.bytes, args, (size_t)plan->args_size);
    for (int i = 0; i < plan->n_params; i++)
        s.params[i] = s.bytes + plan->offsets[i];

    if (dry_run_out) {
        for (int i = 0; i < plan->n_params; i++) {
            memcpy(dry_run_out, s.params[i], (size_t)plan->sizes[i]);
            dry_run_out += plan->sizes[i];
        }
        goto done;
    }
    CUcontext ctx = NULL;
    if ((rc = current_context(&ctx, 0)) != CUDA_SUCCESS)
        goto done;
    if ((rc = check_pointers(plan, s.bytes, ctx)) != CUDA_SUCCESS)
        goto done;
    CUlaunchConfig config;
    if ((rc = make_config(plan, &h, &config)) != 0) {
        rc = rc == 1 ? CUDA_SUCCESS : rc;
        goto done;
    }
    for (int i = 0; i < count && rc == CUDA_SUCCESS; i++)
        rc = cu.cuLaunchKernelEx(&config, (CUfunction)(uintptr_t)h.function, s.params, NULL);
done:
    free(s.heap);
    return rc;
}

int launcher_launch(const launcher_plan *plan, const char *args, size_t args_len) {
    return launch_impl(plan, args, args_len, NULL, 0, 1);
}

int launcher_dry_run(const launcher_plan *plan, const char *args, size_t args_len, char *out,
                     size_t out_len) {
    if (!out)
        return LAUNCHER_ERROR_BAD_BUFFER;
    return launch_impl(plan, args, args_len, out, out_len, 1);
}

int launcher_launch_repeat(const launcher_plan *plan, const char *args, size_t args_len, int count) {
    return launch_impl(plan, args, args_len, NULL, 0, count);
}

/* ---- launches packed once ---- */
struct launcher_bound {
    const launcher_plan *plan;
    launcher_header header;
    unsigned char *given;  /* the buffer as it was handed over (pointers untranslated) */
    unsigned char *bytes;  /* 128-byte-aligned copy the kernel parameters point into */
    void **params;
    pthread_mutex_t lock;  /* held while pointers are checked and translated */
    CUcontext checked_ctx; /* the context and cache generation the pointers were checked for */
    uint64_t checked_gen;
};

launcher_bound *launcher_bound_new(const launcher_plan *plan, const char *args, size_t args_len,
                                   int *status) {
    int rc = plan_ok(plan, args_len);
    if (rc != 0) {
        *status = rc;
        return NULL;
    }
    size_t size = (size_t)plan->args_size, bytes_at = (sizeof(launcher_bound) + 127) & ~(size_t)127;
    size_t given_at = bytes_at + ((size + 127) & ~(size_t)127);
    size_t params_at = (given_at + size + 7) & ~(size_t)7;
    void *mem = NULL;
    if (posix_memalign(&mem, 128, params_at + sizeof(void *) * (size_t)plan->n_params) != 0) {
        *status = LAUNCHER_ERROR_NO_MEMORY;
        return NULL;
    }
    launcher_bound *b = mem;
    memset(b, 0, sizeof *b);
    b->plan = plan;
    b->bytes = (unsigned char *)mem + bytes_at;
    b->given = (unsigned char *)mem + given_at;
    b->params = (void **)((char *)mem + params_at);
    memcpy(&b->header, args, sizeof b->header);
    memcpy(b->given, args, size);
    memcpy(b->bytes, args, size);
    for (int i = 0; i < plan->n_params; i++)
        b->params[i] = b->bytes + plan->offsets[i];
    pthread_mutex_init(&b->lock, NULL);
    *status = 0;
    return b;
}

void launcher_bound_free(launcher_bound *b) {
    if (b) {
        pthread_mutex_destroy(&b->lock);
        free(b);
    }
}

/* Check the pointers again unless they were checked for this context and cache generation. */
static CUresult bound_check(launcher_bound *b, CUcontext ctx) {
    if (b->plan->n_pointers == 0)
        return CUDA_SUCCESS;
    uint64_t gen = range_gen();
    if (__atomic_load_n(&b->checked_ctx, __ATOMIC_ACQUIRE) == ctx &&
        __atomic_load_n(&b->checked_gen, __ATOMIC_ACQUIRE) == gen)
        return CUDA_SUCCESS;
    pthread_mutex_lock(&b->lock);
    CUresult rc = CUDA_SUCCESS;
    const launcher_plan *plan = b->plan;
    for (int i = 0; i < plan->n_params && rc == CUDA_SUCCESS; i++) {
        if (plan->kinds[i] != LAUNCHER_PARAM_POINTER)
            continue;
        uint64_t p, translated;
        memcpy(&p, b->given + plan->offsets[i], 8);
        if (p == 0)
            continue;
        rc = check_pointer(ctx, p, gen, &translated);
        if (rc == CUDA_ERROR_INVALID_VALUE) {
            last_bad_param = i;
            rc = LAUNCHER_ERROR_BAD_POINTER;
        }
        if (rc == CUDA_SUCCESS)
            __atomic_store_n((uint64_t *)(b->bytes + plan->offsets[i]), translated, __ATOMIC_RELAXED);
    }
    if (rc == CUDA_SUCCESS) {
        __atomic_store_n(&b->checked_gen, gen, __ATOMIC_RELEASE);
        __atomic_store_n(&b->checked_ctx, ctx, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&b->lock);
    return rc;
}

static int bound_valid(const launcher_bound *b) {
    return b && b->plan && b->plan->magic == PLAN_MAGIC;
}

/* A bound launch made ready on `stream` in ctx: the one preparation of every launch of bound ones
 * (launcher_bound_repeat, launcher_bound_sequence): its pointers checked (bound_check), its
 * header's config with the stream, its function. 0 with *config, *fn and *empty (the grid
 * launches nothing, as in Triton), else the error. */
static int bound_ready(launcher_bound *b, CUcontext ctx, uint64_t stream, CUlaunchConfig *config, CUfunction *fn,
                       int *empty) {
    int rc = bound_check(b, ctx);
    if (rc != CUDA_SUCCESS)
        return rc;
    launcher_header h = b->header;
    h.stream = stream;
    *fn = (CUfunction)(uintptr_t)h.function;
    rc = make_config(b->plan, &h, config);
    *empty = rc == 1;
    return rc == 1 ? 0 : rc;
}

int launcher_bound_repeat(launcher_bound *b, uint64_t stream, int count) {
    if (!bound_valid(b))
        return LAUNCHER_ERROR_BAD_PLAN;
    int rc = launcher_driver_init(), empty = 0;
    if (rc != 0)
        return rc;
    CUcontext ctx = NULL;
    if ((rc = current_context(&ctx, 0)) != CUDA_SUCCESS)
        return rc;
    CUlaunchConfig config;
    CUfunction fn;
    if ((rc = bound_ready(b, ctx, stream, &config, &fn, &empty)) != 0 || empty)
        return rc;
    for (int i = 0; i < count && rc == CUDA_SUCCESS; i++)
        rc = cu.cuLaunchKernelEx(&config, fn, b->params, NULL);
    return rc;
}

int launcher_bound_launch(launcher_bound *b, uint64_t stream) {
    return launcher_bound_repeat(b, stream, 1);
}

int launcher_bound_sequence(launcher_bound *const *bounds, int n, uint64_t stream, int count, int *failed) {
    *failed = -1;
    if (n < 1 || n > LAUNCHER_SEQUENCE_MAX)
        return LAUNCHER_ERROR_BAD_PLAN;
    for (int i = 0; i < n; i++)
        if (!bound_valid(bounds[i])) {
            *failed = i;
            return LAUNCHER_ERROR_BAD_PLAN;
        }
    int rc = launcher_driver_init();  /* a failure here is no launch's (*failed stays -1) */
    if (rc != 0)
        return rc;
    CUcontext ctx = NULL;
    if ((rc = current_context(&ctx, 0)) != CUDA_SUCCESS)
        return rc;
    CUlaunchConfig config[LAUNCHER_SEQUENCE_MAX];
    CUfunction fn[LAUNCHER_SEQUENCE_MAX];
    int skip[LAUNCHER_SEQUENCE_MAX];
    for (int i = 0; i < n; i++) {  /* every launch made ready first */
        *failed = i;
        if ((rc = bound_ready(bounds[i], ctx, stream, &config[i], &fn[i], &skip[i])) != 0)
            return rc;
    }
    rc = CUDA_SUCCESS;
    for (int k = 0; k < count; k++)
        for (int i = 0; i < n; i++)
            if (!skip[i] && (rc = cu.cuLaunchKernelEx(&config[i], fn[i], bounds[i]->params, NULL)) != CUDA_SUCCESS) {
                *failed = i;
                return rc;
            }
    return rc;
}

/* ---- tensor maps ---- */
int launcher_encode_tensor_map(char *out_128_bytes, const launcher_tensor_map_format *format,
                               uint64_t global_address, const int64_t *dims) {
    uint64_t sizes[5], byte_strides[5] = {0}, extent = 0;
    uint32_t elem_strides[5] = {1, 1, 1, 1, 1};
    const uint32_t rank = format->rank, elem_size = format->elem_size;
    if (rank < 1 || rank > 5 || elem_size == 0)
        return LAUNCHER_ERROR_BAD_GEOMETRY;
    for (uint32_t i = 0; i < rank; i++) {
        int64_t size = dims[rank - 1 - i], stride = dims[2 * rank - 1 - i];
        if (size < 0 || stride < 0 || (uint64_t)stride > UINT64_MAX / elem_size || format->box[i] == 0)
            return LAUNCHER_ERROR_BAD_GEOMETRY;
        sizes[i] = (uint64_t)size;
        if (i > 0)
            byte_strides[i - 1] = (uint64_t)stride * elem_size;
        /* the offset of the tensor's last byte (saturating): what the bit-21 workaround asks */
        uint64_t step = i == 0 ? elem_size : byte_strides[i - 1];
        uint64_t reach = size == 0 ? 0 : (uint64_t)(size - 1);
        if (reach && step > (UINT64_MAX - extent) / reach)
            extent = UINT64_MAX;
        else
            extent += reach * step;
    }
    int rc = launcher_driver_init();
    if (rc != 0)
        return rc;
    if (global_address) {
        CUcontext ctx = NULL;
        uint64_t translated;
        if ((rc = current_context(&ctx, 0)) != CUDA_SUCCESS)
            return rc;
        rc = check_pointer(ctx, global_address, range_gen(), &translated);
        if (rc != CUDA_SUCCESS)
            return rc == CUDA_ERROR_INVALID_VALUE ? LAUNCHER_ERROR_BAD_POINTER : rc;
    }
    _Alignas(128) unsigned char map[128];
    rc = cu.cuTensorMapEncodeTiled(map, format->elem_type, rank, (void *)(uintptr_t)global_address, sizes,
                                   byte_strides, format->box, elem_strides, format->interleave, format->swizzle,
                                   format->l2_promotion, format->oob_fill);
    if (rc != CUDA_SUCCESS)
        return rc;
    uint64_t below = format->clear_bit21_below;
    if (below && extent < UINT64_MAX && extent + 1 < below) {
        uint64_t word;
        memcpy(&word, map + 8, 8);
        word &= ~((uint64_t)1 << 21);
        memcpy(map + 8, &word, 8);
    }
    memcpy(out_128_bytes, map, 128);
    return CUDA_SUCCESS;
}

int launcher_encode_tensor(char *out_128_bytes, int elem_type, uint32_t rank, uint64_t global_address,
                           const int64_t *shape, const int64_t *strides, const uint32_t *box,
                           uint32_t elem_size, int interleave, int swizzle, int l2_promotion,
                           int oob_fill, uint64_t clear_bit21_below) {
    if (rank < 1 || rank > 5)
        return LAUNCHER_ERROR_BAD_GEOMETRY;
    launcher_tensor_map_format format = {elem_type, rank, {0}, elem_size, interleave, swizzle,
                                         l2_promotion, oob_fill, clear_bit21_below};
    int64_t dims[10];
    memcpy(format.box, box, rank * sizeof *box);
    memcpy(dims, shape, rank * sizeof *shape);
    memcpy(dims + rank, strides, rank * sizeof *strides);
    return launcher_encode_tensor_map(out_128_bytes, &format, global_address, dims);
}

int launcher_driver_version(int *version) {
    int rc = launcher_driver_init();
    *version = 0;
    return rc != 0 ? rc : cu.cuDriverGetVersion(version);
}
