/* Whether a loaded object defines a symbol, read from its own dynamic
   symbol table (GNU hash), without asking the dynamic linker.  dlsym of
   a name that nothing defines builds its error message with malloc: in
   a program that has not allocated yet, that one lookup initialises
   malloc (getrandom, brk, the first heap pages), a cost every process
   paid at start-up for weft's checks of what is absent (issue 16). */
#ifndef WEFT_HOST_ELF_SYM_H
#define WEFT_HOST_ELF_SYM_H

/* 0 if no loaded object defines `name` (in any version), so that dlsym
   would fail; 1 if one may (dlsym is worth asking).  With `but_self` the
   object holding libweft's code is left out (a lookup with RTLD_NEXT).
   An object whose table weft cannot read counts as one that may: the
   answer errs towards asking. */
int host_may_define(const char *name, int but_self);

#endif
