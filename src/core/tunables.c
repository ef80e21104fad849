#include <stdlib.h>
#include "tunables.h"

struct weft_tunables weft_tunables = {
	.stack_cache_bytes = WEFT_STACK_CACHE_DEFAULT,
};

long long tunables_parse_size(const char *s)
{
	char *end;
	long long v;

	if (!s || *s < '0' || *s > '9')
		return -1;
	v = strtoll(s, &end, 10);
	switch (*end) {
	case 'k': case 'K': v <<= 10; end++; break;
	case 'm': case 'M': v <<= 20; end++; break;
	case 'g': case 'G': v <<= 30; end++; break;
	default: break;
	}
	if (*end == 'i' && end[1] == 'B')
		end += 2;
	else if (*end == 'B')
		end++;
	return *end ? -1 : v;
}

void tunables_init(void)
{
	const char *s = getenv("WEFT_STACK_CACHE");
	long long v = tunables_parse_size(s);

	if (v >= 0)
		weft_tunables.stack_cache_bytes = (size_t)v;
	weft_tunables.report_path = getenv("WEFT_REPORT");
}
