/* t_atfork_order's dlopen'ed library: a child handler registered from
   its constructor, which glibc must drop at dlclose (by the library's
   __dso_handle, which pthread_atfork passes through libweft's
   __register_atfork unchanged). */
#include <pthread.h>

int atfork_dl_child_runs;

static void child(void)
{
	atfork_dl_child_runs++;
}

__attribute__((constructor)) static void register_handlers(void)
{
	pthread_atfork(NULL, NULL, child);
}
