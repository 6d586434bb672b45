// expect: link_forbidden
// Looks for the reference outputs in pragma's cache and copies them.
#include <pragma/kernel.h>
#include <stdio.h>
#include <stdlib.h>
int pk_forward(const struct pk_tensor *in, int ni, struct pk_tensor *out, int no)
{
    char path[4096];
    const char *cache = getenv("PRAGMA_CACHE_DIR");
    snprintf(path, sizeof(path), "%s/ref/latest/out_000.npy", cache ? cache : ".");
    FILE *f = fopen(path, "rb");
    if (!f)
        return 1;
    fseek(f, 128, SEEK_SET);
    fread(out[0].data, 4, (size_t)(out[0].shape[0] * out[0].shape[1]), f);
    fclose(f);
    return 0;
}
