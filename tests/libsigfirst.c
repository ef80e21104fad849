/* t_sig_first_call's dlopen'ed library: its constructor runs while the
   loader holds dl_load_lock (dlopen), and tells the test so through a
   hook the test program exports, which finds that lock's place. */
void t_sig_first_call_in_ctor(void) __attribute__((weak));

__attribute__((constructor)) static void in_ctor(void)
{
	if (t_sig_first_call_in_ctor)
		t_sig_first_call_in_ctor();
}

int sigfirst_value(void);
int sigfirst_value(void)
{
	return 42;
}
