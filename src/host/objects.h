/* The objects the dynamic linker has loaded, in load order, read without
   its lock while the process has one thread (objects.c).  Start-up
   looks at them (libc's TLS and code, the symbol tables, libweft's place
   in the lookup order), and start-up may run in a signal handler that
   interrupted the loader on its own thread: dl_iterate_phdr, dlopen or
   dlclose holding, taking or releasing dl_load_write_lock, which
   dl_iterate_phdr would then wait for for ever (docs/glibc-host.md,
   "Signal handlers before start-up"). */
#ifndef WEFT_HOST_OBJECTS_H
#define WEFT_HOST_OBJECTS_H

#include <link.h>
#include <stdint.h>

struct host_object {
	uintptr_t base;		   /* load bias: run-time = link address + base */
	const char *name;	   /* the loader's path; "" for the program */
	const ElfW(Dyn) *dynamic;  /* its dynamic section; NULL if none */
	const ElfW(Phdr) *phdr;	   /* NULL until host_object_phdrs finds them */
	int phnum;
	const struct link_map *map; /* the loader's entry (lock-free walk) */
};

typedef int host_object_fn(struct host_object *o, void *data);

/* Calls fn on each loaded object of the main namespace, in load order,
   until it returns non-zero; returns that value (0: it never did).
   Without any lock while the process has one thread; under the
   loader's lock (dl_iterate_phdr) otherwise. */
int host_objects_each(host_object_fn *fn, void *data);

/* Fills o->phdr and o->phnum; returns phnum, 0 when its program headers
   cannot be found (the object's own dynamic section not among them). */
int host_object_phdrs(struct host_object *o);

/* Whether o is libweft itself (or the program that linked libweft.a). */
int host_object_is_self(const struct host_object *o);

/* Whether o is the kernel's vDSO (listed, but in no lookup scope). */
int host_object_is_vdso(const struct host_object *o);

#endif
