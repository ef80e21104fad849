/* A library loaded with dlopen by t_libc: its TLS is dynamic TLS (reached
   through __tls_get_addr), set up lazily per thread. */
__thread int mod_tls = 7;
__thread char mod_zero[4096] __attribute__((aligned(64)));

int *mod_tls_addr(void)
{
	return &mod_tls;
}

int mod_tls_get(void)
{
	return mod_tls;
}

void mod_tls_set(int v)
{
	mod_tls = v;
}

/* Returns the address of a zero-initialised, 64-byte aligned TLS block
   of 4096 bytes. */
char *mod_zero_addr(void)
{
	return mod_zero;
}
