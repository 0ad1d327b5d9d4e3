/* metrics_reply: the metrics hash as Redis answers it, formatted
 * (lib/core/metrics.c). Not a public header: only metrics.c and its unit
 * tests include it; handlers get metrics_render's text, never a
 * redisReply. */
#pragma once

#include <hiredis/hiredis.h>
#include <json-c/json.h>

#include "core/metrics.h"

/* The Prometheus text exposition: every series of hgetall (the flat
 * HGETALL reply of the hash) under its HELP/TYPE, histograms cumulative, and
 * the gauges of status (lease_status()'s object, may be NULL). *ret is
 * malloc'd, NUL-terminated, owned by the caller. Returns 0 or -ENOMEM. */
int metrics_format(const redisReply *hgetall, struct json_object *status, char **ret,
                   size_t *ret_len);
