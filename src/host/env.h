/* What the host can tell about the process weft starts in, before it
   looks at glibc's layout: the environment, the glibc release, where
   libweft sits in the lookup order, and tools that watch the thread
   functions themselves.  core/init.c decides from these whether weft
   serves. */
#ifndef WEFT_HOST_ENV_H
#define WEFT_HOST_ENV_H

/* getenv that also works before libc has set up `environ`. */
const char *host_getenv(const char *name);

/* The glibc release weft goes by: WEFT_PRETEND_GLIBC if set, else
   gnu_get_libc_version(); it selects the release table's row. */
const char *host_glibc_version(void);

/* Whether libweft comes before libc in the dynamic linker's load order. */
int host_loaded_before_libc(void);

/* The name of a tool that intercepts the thread functions itself
   (ThreadSanitizer, helgrind, DRD), or NULL. */
const char *host_thread_tool(void);

#endif
