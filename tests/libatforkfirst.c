/* t_atfork_order's library: registers fork handlers from its constructor,
   which the dynamic linker runs before libweft's (under LD_PRELOAD, and
   in the linked test, where it follows -lweft: of two objects neither
   of which needs the other, the later one is initialised first).  Its
   prepare handler locks a (weft) mutex of its own, as a program's does to
   keep its data consistent across fork; its child handler runs the
   test's hook, then unlocks. */
#include <pthread.h>

pthread_mutex_t atfork_first_mutex = PTHREAD_MUTEX_INITIALIZER;
void (*atfork_first_child_hook)(void);
int atfork_first_registered; /* pthread_atfork's result + 1 */

static void prepare(void)
{
	pthread_mutex_lock(&atfork_first_mutex);
}

static void parent(void)
{
	pthread_mutex_unlock(&atfork_first_mutex);
}

static void child(void)
{
	if (atfork_first_child_hook)
		atfork_first_child_hook();
	pthread_mutex_unlock(&atfork_first_mutex);
}

__attribute__((constructor)) static void register_handlers(void)
{
	atfork_first_registered = 1 + pthread_atfork(prepare, parent, child);
}
