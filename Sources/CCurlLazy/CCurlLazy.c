// The loader of CCurlLazy.h: dlopen of libcurl once per process, then dlsym of each entry point.
#include "CCurlLazy.h"
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

struct pushseal_lazy_curl_functions pushseal_lazy_curl_table;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static int loaded = 0;
static char load_error[512] = "";

/// Resolves `name` into `*slot`; 0 (and the error text) when the library lacks it. The
/// `*(void **)` store is the POSIX way to turn dlsym's object pointer into a function pointer.
static int resolve(void *library, const char *name, void **slot) {
    dlerror();
    *slot = dlsym(library, name);
    if (*slot == NULL) {
        snprintf(load_error, sizeof load_error, "%s has no %s", PUSHSEAL_LAZY_CURL_LIBRARY, name);
        return 0;
    }
    return 1;
}

static void load(void) {
    void *library = dlopen(PUSHSEAL_LAZY_CURL_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) {
        const char *text = dlerror();
        snprintf(load_error, sizeof load_error, "%s", text != NULL ? text : "dlopen of " PUSHSEAL_LAZY_CURL_LIBRARY " failed");
        return;
    }
    struct pushseal_lazy_curl_functions table;
    int ok = 1;
#define PUSHSEAL_LAZY_CURL_RESOLVE(type, name, parameters, arguments) \
    ok = ok && resolve(library, #name, (void **)&table.name);
#define PUSHSEAL_LAZY_CURL_VOID_RESOLVE(name, parameters, arguments) \
    ok = ok && resolve(library, #name, (void **)&table.name);
    PUSHSEAL_LAZY_CURL_FUNCTIONS(PUSHSEAL_LAZY_CURL_RESOLVE, PUSHSEAL_LAZY_CURL_VOID_RESOLVE)
#undef PUSHSEAL_LAZY_CURL_RESOLVE
#undef PUSHSEAL_LAZY_CURL_VOID_RESOLVE
    ok = ok && resolve(library, "curl_global_init", (void **)&table.curl_global_init);
    ok = ok && resolve(library, "curl_easy_setopt", (void **)&table.curl_easy_setopt);
    ok = ok && resolve(library, "curl_easy_getinfo", (void **)&table.curl_easy_getinfo);
    ok = ok && resolve(library, "curl_multi_setopt", (void **)&table.curl_multi_setopt);
    if (!ok) return; // the library stays loaded (never unloaded), unused
    CURLcode code = table.curl_global_init(CURL_GLOBAL_DEFAULT);
    if (code != CURLE_OK) {
        snprintf(load_error, sizeof load_error, "curl_global_init failed (CURLcode %d)", (int)code);
        return;
    }
    pushseal_lazy_curl_table = table;
    loaded = 1;
}

int pushseal_lazy_curl_load(void) {
    if (pthread_once(&load_once, load) != 0) return 0;
    return loaded;
}

const char *pushseal_lazy_curl_error(void) {
    // Written only inside pthread_once; a caller that saw 0 from pushseal_lazy_curl_load reads
    // it after that call returned.
    return load_error;
}
