/* curl_release: libcurl's release calls, NULL-tolerant, so ownership reads
 * the same in every HTTP client of the library (docker_api.c, daytona_api.c). */
#pragma once
#include <curl/curl.h>

static inline void curl_free_handle(CURL *c)
{
        if (c)
                curl_easy_cleanup(c);
}

static inline void slist_free(struct curl_slist *l)
{
        if (l)
                curl_slist_free_all(l);
}

static inline void mime_free(curl_mime *m)
{
        if (m)
                curl_mime_free(m);
}
