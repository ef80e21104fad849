/* The process weft starts in (env.h). */
#include <dlfcn.h>
#include <gnu/libc-version.h>
#include <link.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "elf_sym.h"
#include "env.h"
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
	uintptr_t self;
	int self_at, libc_at, n;
};

static int find_order(struct dl_phdr_info *info, size_t sz, void *data)
{
	struct load_order *o = data;

	(void)sz;
	if (o->libc_at < 0 && info->dlpi_name &&
	    strstr(info->dlpi_name, "/libc.so.6"))
		o->libc_at = o->n;
	for (int i = 0; o->self_at < 0 && i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && o->self >= lo &&
		    o->self - lo < ph->p_memsz)
			o->self_at = o->n;
	}
	o->n++;
	return 0;
}

int host_loaded_before_libc(void)
{
	struct load_order o = { (uintptr_t)&host_loaded_before_libc, -1, -1, 0 };

	dl_iterate_phdr(find_order, &o);
	return o.self_at >= 0 && (o.libc_at < 0 || o.self_at < o.libc_at);
}

/* Tools that intercept the thread functions themselves to watch every
   thread and lock: ThreadSanitizer, and valgrind's helgrind and DRD.
   Serving the program would hide its threads and locks from them (false
   race reports, crashes in the tool), so weft stands aside.  memcheck
   and AddressSanitizer watch memory only and work with weft. */
static int find_thread_tool(struct dl_phdr_info *info, size_t sz, void *data)
{
	const char **tool = data;

	(void)sz;
	if (!info->dlpi_name)
		return 0;
	if (strstr(info->dlpi_name, "vgpreload_helgrind"))
		*tool = "valgrind's helgrind";
	else if (strstr(info->dlpi_name, "vgpreload_drd"))
		*tool = "valgrind's DRD";
	return *tool != NULL;
}

const char *host_thread_tool(void)
{
	const char *tool = NULL;

	/* From the symbol tables: a failed dlsym mallocs (elf_sym.h). */
	if (host_default_sym("__tsan_init"))
		return "ThreadSanitizer";
	dl_iterate_phdr(find_thread_tool, &tool);
	return tool;
}
