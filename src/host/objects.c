/* The loaded objects (objects.h).

   Two ways to walk the dynamic linker's list of the main namespace:

     one thread:  _r_debug.r_map -> l_next -> ...   no lock
                  (l_addr, l_name, l_ld: <link.h>'s public fields)
     otherwise:   dl_iterate_phdr                   dl_load_write_lock

   Why without the lock is sound while the process has one thread
   (glibc's __libc_single_threaded, which glibc's own malloc and stdio
   trust the same way): the list changes only in the loader, under that
   lock, and the only code that can be inside the loader is the thread
   walking, interrupted by the signal handler that walks.  That thread
   is stopped for the walk, so every state the list can be seen in is
   one the loader leaves between two of its own instructions:

     dlopen   maps an object, sets its l_ld, then links it at the tail
              (l_prev first, then the old tail's l_next): an object is
              on the list only once mapped; r_state goes RT_ADD after.
     dlclose  runs the destructors, sets r_state RT_DELETE, then for each
              object unmaps it and only then unlinks it: while RT_DELETE
              an object on the list may be unmapped already, so its
              dynamic section is read only if its page is still mapped
              (mincore: ENOMEM when not).
     r_map    the program's entry, first for the process's life
              (r_state is read from the loader's own r_debug, where the
              program's DT_DEBUG points: loader_debug).

   An entry is never freed before it is unlinked, so following l_next
   always reaches live entries.  Other namespaces (dlmopen) are not
   walked: start-up looks only at the objects of the main one.

   Program headers: dl_iterate_phdr gives them; on the list they are the
   loader's private l_phdr, so they are read from the object's ELF
   header instead: the program's from the auxiliary vector (a non-PIE
   executable's ELF header is not at its load bias 0), any other's at
   the start of its mapping, which _dl_find_object (glibc 2.35, the
   unwinder's lookup) reports without a lock: the initial objects from
   arrays fixed at start, dlopen'ed ones from one of two copies whose
   version it checks, which an update interrupted on this thread leaves
   consistent (elf/dl-find_object.c).
   Either is accepted only if it lists the object's own dynamic section
   at the address the loader recorded. */
#include <dlfcn.h>
#include <elf.h>
#include <string.h>
#include <sys/auxv.h>

#include "kernel/syscall.h"
#include "objects.h"
#include "single.h"

/* _DYNAMIC (<link.h>): the linker's symbol for the dynamic section of
   the object it links, libweft's, or the program's when libweft.a is
   linked into it. */
int host_object_is_self(const struct host_object *o)
{
	return o->dynamic == _DYNAMIC;
}

static const ElfW(Dyn) *dynamic_of(uintptr_t base, const ElfW(Phdr) *ph, int n)
{
	for (int i = 0; i < n; i++)
		if (ph[i].p_type == PT_DYNAMIC)
			return (const ElfW(Dyn) *)(base + ph[i].p_vaddr);
	return NULL;
}

/* The vDSO's dynamic section, from its ELF header (which the kernel
   maps at AT_SYSINFO_EHDR): its load bias is that address less its
   first segment's link address, as the loader computes it. */
static const ElfW(Dyn) *vdso_dynamic(void)
{
	const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)getauxval(AT_SYSINFO_EHDR);
	const ElfW(Phdr) *ph;

	if (!eh)
		return NULL;
	ph = (const ElfW(Phdr) *)((const char *)eh + eh->e_phoff);
	for (int i = 0; i < eh->e_phnum; i++)
		if (ph[i].p_type == PT_LOAD)
			return dynamic_of((uintptr_t)eh - ph[i].p_vaddr, ph,
					  eh->e_phnum);
	return NULL;
}

int host_object_is_vdso(const struct host_object *o)
{
	return o->dynamic && o->dynamic == vdso_dynamic();
}

/* --- under the loader's lock ------------------------------------------ */

struct locked_walk {
	host_object_fn *fn;
	void *data;
};

static int locked_one(struct dl_phdr_info *info, size_t sz, void *arg)
{
	struct locked_walk *w = arg;
	struct host_object o = {
		.base = info->dlpi_addr,
		.name = info->dlpi_name ? info->dlpi_name : "",
		.dynamic = dynamic_of(info->dlpi_addr, info->dlpi_phdr,
				      info->dlpi_phnum),
		.phdr = info->dlpi_phdr,
		.phnum = info->dlpi_phnum,
	};

	(void)sz;
	return w->fn(&o, w->data);
}

/* --- without it: one thread ------------------------------------------- */

static int page_mapped(const void *p)
{
	unsigned char vec;
	uintptr_t page = (uintptr_t)p & ~(uintptr_t)(getauxval(AT_PAGESZ) - 1);

	return sys_call3(SYS_mincore, page, 1, &vec) == 0;
}

/* The loader's own r_debug, which the program's DT_DEBUG entry points
   to: an executable that refers to _r_debug has a copy of it (a copy
   relocation, which libweft's reference then binds to), made while the
   loader started, whose r_state is never updated.  Its r_map, the
   program's entry, is right: it never changes. */
static const struct r_debug *loader_debug(void)
{
	const struct link_map *prog = _r_debug.r_map;

	for (const ElfW(Dyn) *d = prog->l_ld; d && d->d_tag != DT_NULL; d++)
		if (d->d_tag == DT_DEBUG && d->d_un.d_ptr)
			return (const struct r_debug *)d->d_un.d_ptr;
	return &_r_debug;
}

static int listed_walk(host_object_fn *fn, void *data)
{
	const struct r_debug *r = loader_debug();
	int deleting = __atomic_load_n(&r->r_state, __ATOMIC_RELAXED) == RT_DELETE;

	for (const struct link_map *l = r->r_map; l; l = l->l_next) {
		struct host_object o = {
			.base = l->l_addr,
			.name = l->l_name ? l->l_name : "",
			.dynamic = l->l_ld,
			.map = l,
		};
		int stop;

		if (deleting && o.dynamic && !page_mapped(o.dynamic))
			continue; /* unmapped by the dlclose we interrupted */
		if ((stop = fn(&o, data)))
			return stop;
	}
	return 0;
}

int host_objects_each(host_object_fn *fn, void *data)
{
	struct locked_walk w = {fn, data};

	if (host_single_threaded() && _r_debug.r_map)
		return listed_walk(fn, data);
	return dl_iterate_phdr(locked_one, &w);
}

/* --- program headers --------------------------------------------------- */

static int lists_dynamic(const struct host_object *o, const ElfW(Phdr) *ph,
			 int n)
{
	return n > 0 && o->dynamic && dynamic_of(o->base, ph, n) == o->dynamic;
}

static int phdrs_at(struct host_object *o, const ElfW(Phdr) *ph, int n)
{
	if (!lists_dynamic(o, ph, n))
		return 0;
	o->phdr = ph;
	o->phnum = n;
	return n;
}

int host_object_phdrs(struct host_object *o)
{
	struct dl_find_object f;
	const ElfW(Ehdr) *eh;

	if (o->phdr)
		return o->phnum;
	if (o->map == _r_debug.r_map &&
	    phdrs_at(o, (const ElfW(Phdr) *)getauxval(AT_PHDR),
		     (int)getauxval(AT_PHNUM)))
		return o->phnum;
	if (!o->dynamic || _dl_find_object((void *)o->dynamic, &f) != 0 ||
	    f.dlfo_link_map != o->map)
		return 0;
	/* Headers and table in the first page, as every linker lays
	   them out: the page the mapping starts with. */
	eh = f.dlfo_map_start;
	if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 ||
	    eh->e_phentsize != sizeof(ElfW(Phdr)) ||
	    eh->e_phoff + (size_t)eh->e_phnum * sizeof(ElfW(Phdr)) > 4096)
		return 0;
	return phdrs_at(o, (const ElfW(Phdr) *)((const char *)eh + eh->e_phoff),
			eh->e_phnum);
}
