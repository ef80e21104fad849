/* WEFT_ALIAS(name, target): a second exported name for an exported
   function, the very same code.  A library bound to __pthread_mutex_lock
   must reach what pthread_mutex_lock does, or two protocols would meet
   on one object. */
#ifndef WEFT_ABI_ALIAS_H
#define WEFT_ABI_ALIAS_H

/* The alias repeats the target's attributes (nothrow, leaf from libc's
   declarations), which gcc otherwise warns about; the C name is private
   (the asm label gives the exported one), so a libc header declaring
   `name` differently does not clash. */
#if __has_attribute(copy)
#define WEFT_COPY_ATTRS(target) __attribute__((copy(target)))
#else
#define WEFT_COPY_ATTRS(target)
#endif

#define WEFT_ALIAS(name, target)                                               \
	extern __typeof__(target) weft_alias_##name __asm__(#name)             \
		WEFT_COPY_ATTRS(target)                                        \
		__attribute__((alias(#target), visibility("default")))

#endif
