/* The C API of launcher's native library, as handed to cffi's ffi.cdef().
 * Plain declarations only: no preprocessor, no CUDA headers.
 * The implementation is cdefs/launcher.c; Python reaches it as launcher._native.lib. */

/* How one kernel signature is laid out, planned once in Python (launcher/signature.py). */
typedef struct {
    int n_params;                 /* kernel parameters, the two scratch pointers included */
    int args_size;                /* bytes of the packed argument buffer */
    const int *offsets;           /* where parameter i's value starts in that buffer */
    const int *sizes;             /* how many bytes the kernel reads for parameter i */
    const unsigned char *kinds;   /* LAUNCHER_PARAM_* of parameter i */
    int launch_cooperative_grid;  /* metadata.launch_cooperative_grid */
    int launch_pdl;               /* metadata.launch_pdl */
} launcher_plan;

/* Parameter kinds. */
#define LAUNCHER_PARAM_VALUE ...    /* bytes passed as they are */
#define LAUNCHER_PARAM_POINTER ...  /* a pointer: checked to be device-accessible, translated */
#define LAUNCHER_PARAM_TENSORMAP ... /* a 128-byte CUtensorMap, passed by value */

/* Our own (negative) status codes; positive codes are CUresult values. */
#define LAUNCHER_ERROR_NO_DRIVER ...       /* libcuda.so.1 could not be opened */
#define LAUNCHER_ERROR_NO_SYMBOL ...       /* libcuda.so.1 lacks a function we need */
#define LAUNCHER_ERROR_BAD_POINTER ...     /* a pointer is not accessible from the device */
#define LAUNCHER_ERROR_TOO_LARGE ...       /* more parameter bytes than a kernel can take */

/* Launch one kernel. `args` is the packed buffer: a header (function, stream: uint64; grid x,
 * y, z: int32; num_warps, num_ctas: uint16; shared memory bytes: uint32; 4 reserved bytes;
 * 40 bytes in all) and then the kernel
 * parameters at the plan's offsets.  The parameters are copied into 128-byte-aligned storage,
 * pointers are checked and translated, and cuLaunchKernelEx is called with the attributes the
 * plan and header ask for.  A grid with a zero dimension launches nothing.
 * Returns 0, a CUresult, or LAUNCHER_ERROR_*.
 * With dry_run_out != NULL nothing touches the driver: the bytes each kernelParams entry
 * points to are written there one after another (sizes[i] each) instead. */
int launcher_launch(const launcher_plan *plan, const char *args, char *dry_run_out);

/* The C floor for benchmarks: the same launch `count` times, arguments packed once. */
int launcher_launch_repeat(const launcher_plan *plan, const char *args, int count);

/* Index of the parameter that failed the last LAUNCHER_ERROR_BAD_POINTER in this thread. */
int launcher_last_bad_param(void);

/* Make sure libcuda.so.1 is open and initialised; 0 or an error code as above. */
int launcher_driver_init(void);

/* The current CUDA context, or `device`'s primary context made current when there is none
 * (what load_binary needs); *status gets 0 or an error code as above. */
uint64_t launcher_current_context(int device, int *status);

/* cuGetErrorName / cuGetErrorString of a CUresult (NULL when unknown or no driver). */
const char *launcher_error_name(int code);
const char *launcher_error_string(int code);

/* cuTensorMapEncodeTiled into out (128 bytes), with Triton's conventions: dims and strides given
 * outermost first as Python sees them, element strides 1, no interleave, 128-byte L2 promotion.
 * clear_bit21: apply the CUTLASS workaround Triton 3.7+ applies on drivers <= 13.1. */
int launcher_encode_tiled(char *out, int elem_type, int rank, uint64_t global_address,
                          const uint64_t *shape, const uint64_t *strides,
                          const uint32_t *box, int elem_size, int swizzle, int nan_padding,
                          int clear_bit21);

/* Pointer-range cache: hits (in the calling thread) and driver queries (all threads). */
void launcher_pointer_cache_stats(uint64_t *hits, uint64_t *misses);
void launcher_pointer_cache_clear(void);
