/* fuzz: the libFuzzer entry point every tests/fuzz/fuzz_*.c target defines;
 * replay.c calls it for each corpus file when built without libFuzzer. */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* Run one input. Must not keep data; returns 0 (libFuzzer's convention). */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A target's own contract on what the code under test returned: abort (a
 * crash libFuzzer records, a failure of the replay) with the condition. */
#define CHECK(cond)                                                                                 \
        do {                                                                                        \
                if (!(cond)) {                                                                      \
                        fprintf(stderr, "%s:%d: contract broken: %s\n", __FILE__, __LINE__, #cond); \
                        abort();                                                                    \
                }                                                                                   \
        } while (0)
