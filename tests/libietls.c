/* A module whose TLS is initial-exec: ld.so puts it in the static TLS
   block of every thread when it is dlopen()ed, including threads that
   already exist. */
__attribute__((tls_model("initial-exec"))) __thread int ie_value = 42;

int ie_get(void)
{
	return ie_value;
}
