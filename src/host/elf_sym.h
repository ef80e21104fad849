/* Where a loaded object defines a symbol, read from its own dynamic
   symbol table (GNU hash), without asking the dynamic linker.  dlsym of
   a name that nothing defines builds its error message with malloc: in
   a program that has not allocated yet, that one lookup initialises
   malloc (getrandom, brk, the first heap pages), a cost every process
   paid at start-up for weft's checks of what is absent (issue 16). */
#ifndef WEFT_HOST_ELF_SYM_H
#define WEFT_HOST_ELF_SYM_H

#include <link.h>
#include <stdint.h>

/* The address of the first default-version definition of `name` in the
   loaded objects, in load order (with `next`, only those after libweft:
   what dlsym(RTLD_NEXT) finds for a name the program's initial objects
   define).  No lock while the process has one thread, else the one
   dl_iterate_phdr takes (objects.h); no malloc: usable where dlsym is
   not (a signal handler, start-up inside an allocator).  *sure is 1 when the answer is final
   (NULL: nothing defines it), 0 when only dlsym can tell (an IFUNC, a
   table weft cannot read, only hidden versions). */
void *host_sym_lookup(const char *name, int next, int *sure);

/* The definition of name@version (hidden or default) in the first
   object, in load order, that defines that version of it, and that
   object's load base: what dlvsym(RTLD_DEFAULT, name, version) finds,
   except that an unversioned definition does not count (dlvsym takes
   one; start-up wants glibc's own).  NULL if none.  The same locks as
   host_sym_lookup, that is none while the process has one thread. */
const ElfW(Sym) *host_vsym_lookup(const char *name, const char *version,
				  uintptr_t *base);

/* Its run-time address; NULL if none, or for a TLS or IFUNC symbol. */
void *host_vsym_addr(const char *name, const char *version);

#endif
