/* The process weft starts in (env.h). */
#include <gnu/libc-version.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "elf_sym.h"
#include "env.h"
#include "objects.h"
#include "real.h"

/* getenv that also works before libc has set up `environ`: weft can
   start from another library's .preinit_array function (AddressSanitizer's
   start-up calls pthread functions there), which runs before libc's own
   initialisation.  The environment is then read where the kernel put it,
   after the argument vector that ld.so records in _dl_argv. */
const char *host_getenv(const char *name)
{
	extern char **environ;
	char ***dl_argv;
	char **p;
	size_t n = strlen(name);

	if (environ)
		return getenv(name);
	dl_argv = host_default_sym("_dl_argv");
	if (!dl_argv || !*dl_argv)
		return NULL;
	for (p = *dl_argv; *p; p++)
		; /* skip the arguments: the environment follows their NULL */
	for (p++; *p; p++)
		if (strncmp(*p, name, n) == 0 && (*p)[n] == '=')
			return *p + n + 1;
	return NULL;
}

const char *host_glibc_version(void)
{
	const char *pretend = host_getenv("WEFT_PRETEND_GLIBC");

	return pretend && *pretend ? pretend : gnu_get_libc_version();
}

/* Whether weft comes before libc in the dynamic linker's load order, the
   order it searches for symbols: preloaded, linked before libc, or linked
   into the program itself.  A libweft loaded later by dlopen comes after
   libc; the program and libc keep calling glibc's pthread functions, so
   weft must take nothing over, least of all the SIGCANCEL handler that
   glibc's threads rely on. */
struct load_order {
	int self_at, libc_at, n;
};

static int find_order(struct host_object *o, void *data)
{
	struct load_order *lo = data;

	if (lo->libc_at < 0 && strstr(o->name, "/libc.so.6"))
		lo->libc_at = lo->n;
	if (lo->self_at < 0 && host_object_is_self(o))
		lo->self_at = lo->n;
	lo->n++;
	return lo->self_at >= 0; /* libc's place, if before, is known */
}

int host_loaded_before_libc(void)
{
	struct load_order lo = {-1, -1, 0};

	host_objects_each(find_order, &lo);
	return lo.self_at >= 0 && (lo.libc_at < 0 || lo.self_at < lo.libc_at);
}

/* Tools that intercept the thread functions themselves to watch every
   thread and lock: ThreadSanitizer, and valgrind's helgrind and DRD.
   Serving the program would hide its threads and locks from them (false
   race reports, crashes in the tool), so weft stands aside.  memcheck
   and AddressSanitizer watch memory only and work with weft. */
static int find_thread_tool(struct host_object *o, void *data)
{
	const char **tool = data;

	if (strstr(o->name, "vgpreload_helgrind"))
		*tool = "valgrind's helgrind";
	else if (strstr(o->name, "vgpreload_drd"))
		*tool = "valgrind's DRD";
	return *tool != NULL;
}

const char *host_thread_tool(void)
{
	const char *tool = NULL;

	/* From the symbol tables: a failed dlsym mallocs (elf_sym.h). */
	if (host_default_sym("__tsan_init"))
		return "ThreadSanitizer";
	host_objects_each(find_thread_tool, &tool);
	return tool;
}
