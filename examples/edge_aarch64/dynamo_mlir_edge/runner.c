/* Runs one compiled region of a dynamo-mlir aarch64 shared library (under qemu-aarch64 on a
 * development machine, natively on the device).
 *
 *   runner LIB SYMBOL N_IN IN_FILE... OUT_FILE OUT_BYTES...
 *
 * Each input tensor is a raw binary file (its elements, contiguous, native byte order). SYMBOL is
 * `void SYMBOL(void **args)`: args holds one pointer per input, then one per output, which the
 * region writes (its results became out-parameters). Each output's OUT_BYTES are allocated here
 * and written back to OUT_FILE. Exit status: 0 ok, 2 usage, 3 loading, 4 files. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef void (*packed_fn)(void **);

enum { ALIGN = 64 }; /* as torch's CPU allocator: vector loads may assume it */

static void *aligned_buffer(size_t n) {
    size_t rounded = (n + ALIGN - 1) / ALIGN * ALIGN;
    void *p = aligned_alloc(ALIGN, rounded ? rounded : ALIGN); /* a zero-size tensor still gets a pointer */
    if (p) memset(p, 0, rounded ? rounded : ALIGN);
    return p;
}

static void *read_input(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    void *p = n >= 0 ? aligned_buffer((size_t)n) : NULL;
    if (p && fread(p, 1, (size_t)n, f) != (size_t)n) {
        free(p);
        p = NULL;
    }
    fclose(f);
    return p;
}

static int write_output(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) return 0;
    size_t written = fwrite(data, 1, n, f);
    return fclose(f) == 0 && written == n;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s LIB SYMBOL N_IN IN_FILE... OUT_FILE OUT_BYTES...\n", argv[0]);
        return 2;
    }
    int n_in = atoi(argv[3]);
    int rest = argc - 4 - n_in;
    if (n_in < 0 || rest < 0 || rest % 2 != 0) {
        fprintf(stderr, "runner: %d inputs leave %d arguments, not OUT_FILE OUT_BYTES pairs\n", n_in, rest);
        return 2;
    }
    int n_out = rest / 2;
    void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "runner: %s\n", dlerror());
        return 3;
    }
    packed_fn fn = (packed_fn)dlsym(lib, argv[2]);
    if (!fn) {
        fprintf(stderr, "runner: %s\n", dlerror());
        return 3;
    }
    void **args = calloc((size_t)(n_in + n_out) + 1, sizeof(void *));
    size_t *out_bytes = calloc((size_t)n_out + 1, sizeof(size_t));
    for (int i = 0; i < n_in; i++) {
        if (!(args[i] = read_input(argv[4 + i]))) {
            fprintf(stderr, "runner: cannot read input %s\n", argv[4 + i]);
            return 4;
        }
    }
    for (int j = 0; j < n_out; j++) {
        out_bytes[j] = strtoull(argv[4 + n_in + 2 * j + 1], NULL, 10);
        if (!(args[n_in + j] = aligned_buffer(out_bytes[j]))) {
            fprintf(stderr, "runner: cannot allocate %zu bytes\n", out_bytes[j]);
            return 4;
        }
    }
    fn(args);
    for (int j = 0; j < n_out; j++) {
        if (!write_output(argv[4 + n_in + 2 * j], args[n_in + j], out_bytes[j])) {
            fprintf(stderr, "runner: cannot write output %s\n", argv[4 + n_in + 2 * j]);
            return 4;
        }
    }
    return 0;
}
