/* WEFT_ALIAS(name, target): a second exported name for an exported
   function, the very same code.  A library bound to __pthread_mutex_lock
   must reach what pthread_mutex_lock does, or two protocols would meet
   on one object. */
#ifndef WEFT_ABI_ALIAS_H
#define WEFT_ABI_ALIAS_H

/* gcc wants the alias to repeat the target's attributes (nothrow, leaf
   from libc's declarations); they hold by construction. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmissing-attributes"
#endif

#define WEFT_ALIAS(name, target)                                               \
	extern __typeof__(target) weft_alias_##name __asm__(#name)             \
		__attribute__((alias(#target), visibility("default")))

#endif
