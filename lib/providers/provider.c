/* provider: see provider.h. The backends live in their own files (docker.c). */
#include "provider.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void exec_result_free(struct exec_result *r)
{
        if (!r)
                return;
        free(r->out);
        free(r->err);
        r->out = r->err = NULL;
        r->out_len = r->err_len = 0;
}

void provider_free(struct provider *p)
{
        if (p && p->ops && p->ops->free)
                p->ops->free(p);
}

void provider_errf(char *ret_err, const char *fmt, ...)
{
        va_list ap;

        if (!ret_err)
                return;
        va_start(ap, fmt);
        vsnprintf(ret_err, PROVIDER_ERR_MAX, fmt, ap);
        va_end(ap);
}
