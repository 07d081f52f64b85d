/* RNIC_CM_TRACE=1: a line on stderr per listen and per event handed out,
 * for the tests (a server is ready once it listens: no socket shows it)
 * and for whoever debugs a program. */
#include "cm.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

void cm_trace(const char *fmt, ...)
{
	static int on = -1;
	va_list ap;
	if (on < 0) {
		const char *v = getenv("RNIC_CM_TRACE");
		on = v && *v && *v != '0';
	}
	if (!on)
		return;
	fprintf(stderr, "rnic rdmacm: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
}
